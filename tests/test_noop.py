"""The throwaway NoopExecutor."""

from __future__ import annotations

from fluent_executors import Executors


def test_it_passes_the_callable_on() -> None:
    with Executors.sync(name="x").with_noop() as executor:
        assert executor.submit(pow, 2, 3).result(timeout=1) == 8
        assert executor.name == "x"
