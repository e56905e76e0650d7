"""The library's pools hand the caller's arguments to the standard pools as given
(docs/api.rst, ThreadPoolExecutor and ProcessPoolExecutor)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

import pytest

from fluent_executors import Executors, ProcessPoolExecutor, ThreadPoolExecutor

Call = tuple[tuple[Any, ...], dict[str, Any]]


def spy_on_init(monkeypatch: pytest.MonkeyPatch, cls: type[Any]) -> list[Call]:
    """Record the arguments that ``cls.__init__`` receives, then let it run."""
    calls: list[Call] = []
    original = cls.__init__

    def spy(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append((args, kwargs))
        original(self, *args, **kwargs)

    monkeypatch.setattr(cls, "__init__", spy)
    return calls


THREAD_CASES: list[tuple[Callable[[], Any], Call]] = [
    (
        lambda: Executors.thread_pool(max_workers=3),
        ((), {"max_workers": 3, "thread_name_prefix": "fluent-executors-default"}),
    ),
    (
        lambda: Executors.thread_pool(3),
        ((3,), {"thread_name_prefix": "fluent-executors-default"}),
    ),
    (
        lambda: Executors.thread_pool(),
        ((), {"thread_name_prefix": "fluent-executors-default"}),
    ),
    (
        lambda: Executors.thread_pool(name="io"),
        ((), {"thread_name_prefix": "fluent-executors-io"}),
    ),
    (
        lambda: Executors.thread_pool(2, "mine", name="io"),
        ((2, "mine"), {}),
    ),
    (
        lambda: Executors.thread_pool(max_workers=2, thread_name_prefix="mine"),
        ((), {"max_workers": 2, "thread_name_prefix": "mine"}),
    ),
    (
        lambda: ThreadPoolExecutor(4, initargs=(), name="io"),
        ((4,), {"initargs": (), "thread_name_prefix": "fluent-executors-io"}),
    ),
]


@pytest.mark.parametrize(("build", "expected"), THREAD_CASES)
def test_thread_pool_passes_the_arguments_through_as_given(
    monkeypatch: pytest.MonkeyPatch, build: Callable[[], Any], expected: Call
) -> None:
    calls = spy_on_init(monkeypatch, concurrent.futures.ThreadPoolExecutor)

    with build():
        pass

    assert calls == [expected]


PROCESS_CASES: list[tuple[Callable[[], Any], Call]] = [
    (lambda: Executors.process_pool(max_workers=2), ((), {"max_workers": 2})),
    (lambda: Executors.process_pool(2), ((2,), {})),
    (lambda: Executors.process_pool(), ((), {})),
    (lambda: Executors.process_pool(name="cpu"), ((), {})),
    (lambda: ProcessPoolExecutor(1, initargs=(), name="cpu"), ((1,), {"initargs": ()})),
]


@pytest.mark.parametrize(("build", "expected"), PROCESS_CASES)
def test_process_pool_passes_the_arguments_through_as_given(
    monkeypatch: pytest.MonkeyPatch, build: Callable[[], Any], expected: Call
) -> None:
    calls = spy_on_init(monkeypatch, concurrent.futures.ProcessPoolExecutor)

    with build():
        pass

    assert calls == [expected]


def test_thread_pool_reads_its_settings_after_the_standard_constructor() -> None:
    with Executors.thread_pool(3, name="io") as pool:
        assert pool.name == "io"
        assert pool._max_workers == 3
        assert pool.submit(lambda: 1).result() == 1


def test_thread_pool_name_must_be_a_str_before_anything_starts() -> None:
    with pytest.raises(TypeError, match="name must be a str"):
        Executors.thread_pool(2, name=3)  # type: ignore[arg-type]
