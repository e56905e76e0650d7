"""``map`` of every executor of the library: Python 3.14's ``Executor.map``, with
``buffersize``, on every Python (the contract of every chain is in
test_contract.py; the process pool's chunks in test_process_pools.py)."""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeoutError
from typing import Any

import pytest

from fluent_executors import Executors
from fluent_executors.testing import ManualExecutor

TIMEOUT = 10.0  # seconds: a generous bound for anything that should happen "now"


@pytest.mark.parametrize(
    ("buffersize", "error", "match"),
    [
        (0, ValueError, "buffersize must be None or > 0, got 0"),
        (-1, ValueError, "buffersize must be None or > 0"),
        (1.5, TypeError, "buffersize must be an integer or None, got float"),
        ("2", TypeError, "buffersize must be an integer or None, got str"),
    ],
)
def test_a_bad_buffersize_is_refused_before_any_submit(
    buffersize: Any, error: type[Exception], match: str
) -> None:
    delegate = ManualExecutor()
    with pytest.raises(error, match=match):
        Executors.with_map(delegate, str).map(abs, [1, 2], buffersize=buffersize)
    assert delegate.calls == []


def test_with_a_buffersize_an_endless_iterable_is_read_as_results_are_taken() -> None:
    numbers = itertools.count()
    with Executors.sync() as executor:
        results = executor.map(str, numbers, buffersize=2)
        assert next(numbers) == 2  # 0 and 1 were submitted before map returned
        assert [next(results) for _ in range(3)] == ["0", "1", "3"]
        assert next(numbers) == 6  # 3, 4 and 5 submitted, one per result taken
        results.close()


def test_the_results_come_in_order_whatever_the_order_of_completion() -> None:
    delegate = ManualExecutor()
    executor = Executors.with_cancel_on_shutdown(delegate)
    results = executor.map(str.upper, ["a", "b", "c"])
    for index in (2, 1, 0):
        delegate.finish(index)

    assert list(results) == ["A", "B", "C"]


def test_closing_the_iterator_cancels_the_calls_not_taken() -> None:
    delegate = ManualExecutor()
    executor = Executors.with_cancel_on_shutdown(delegate)
    results = executor.map(str, range(4))
    delegate.finish(0)

    assert next(results) == "0"
    results.close()
    assert [future.cancelled() for future in delegate.futures] == [
        False,
        True,
        True,
        True,
    ]


def test_a_call_that_raises_raises_from_the_iterator_and_cancels_the_rest() -> None:
    delegate = ManualExecutor()
    executor = Executors.with_cancel_on_shutdown(delegate)
    results = executor.map(int, ["1", "x", "3"])
    delegate.finish(0)
    delegate.finish(1)

    assert next(results) == 1
    with pytest.raises(ValueError, match="'x'"):
        next(results)
    assert delegate.futures[2].cancelled()


def test_a_result_not_in_time_raises_timeout_error_and_cancels_the_rest() -> None:
    delegate = ManualExecutor()
    executor = Executors.with_cancel_on_shutdown(delegate)
    results = executor.map(str, range(3), timeout=0)

    with pytest.raises(FuturesTimeoutError):  # the builtin one from 3.11 on
        next(results)
    assert all(future.cancelled() for future in delegate.futures)


def test_a_collected_executor_submits_nothing_more() -> None:
    # As the standard map: the iterator holds the executor by a weak reference.
    results = Executors.sync().map(str, range(10), buffersize=2)

    assert list(results) == ["0", "1"]


def test_map_on_a_shut_down_executor_raises_runtime_error() -> None:
    executor = Executors.sync()
    executor.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.map(str, [1])


def steps(executor: Any, buffersize: int | None) -> list[str]:
    """What ``executor.map`` does, in order: each argument drawn (a submit) and
    each result taken, over six arguments."""
    events: list[str] = []
    gate = threading.Lock()

    def arguments() -> Iterator[int]:
        for n in range(6):
            with gate:
                events.append(f"submit {n}")
            yield n

    for result in executor.map(abs, arguments(), buffersize=buffersize):
        with gate:
            events.append(f"take {result}")
    return events


@pytest.mark.skipif(sys.version_info < (3, 14), reason="the standard map's, 3.14+")
@pytest.mark.parametrize("buffersize", [None, 1, 2, 5, 9])
def test_submits_and_takes_in_the_order_of_the_standard_map(
    buffersize: int | None,
) -> None:
    with ThreadPoolExecutor(2) as standard, Executors.thread_pool(2) as ours:
        assert steps(ours, buffersize) == steps(standard, buffersize)
