"""progress(): futures as they complete, with a tqdm bar (docs/futures.rst)."""

from __future__ import annotations

import builtins
import concurrent.futures
import io
from concurrent.futures import Future
from typing import Any

import pytest

from fluent_executors import Executors, f_return, progress


def test_yields_every_future_once_as_it_completes_and_counts_them() -> None:
    out = io.StringIO()
    with Executors.thread_pool(max_workers=2) as pool:
        futures = [pool.submit(pow, 2, n) for n in range(5)]

        done = list(progress(futures + futures[:1], file=out, desc="powers"))

    assert sorted(f.result() for f in done) == [1, 2, 4, 8, 16]
    assert len(done) == 5
    assert "powers" in out.getvalue()
    assert "5/5" in out.getvalue()


def test_tqdm_options_override_the_defaults() -> None:
    out = io.StringIO()

    list(progress([f_return(1)], file=out, total=3, initial=2, unit="task"))

    assert "3/3" in out.getvalue()
    assert "task" in out.getvalue()


def test_a_timeout_raises_and_closes_the_bar() -> None:
    out = io.StringIO()
    pending: Future[int] = Future()

    with pytest.raises(concurrent.futures.TimeoutError):
        list(progress([f_return(1), pending], timeout=0.01, file=out))

    assert "1/2" in out.getvalue()


def test_without_tqdm_it_raises_import_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_import = builtins.__import__

    def no_tqdm(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "tqdm" or name.startswith("tqdm."):
            raise ImportError("No module named 'tqdm'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)

    with pytest.raises(
        ImportError, match=r"pip install '\.\[progress\]' in a checkout"
    ):
        progress([f_return(1)])
