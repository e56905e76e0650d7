"""MapExecutor and FlatMapExecutor."""

from __future__ import annotations

import logging
import random
import threading
from concurrent.futures import CancelledError, Executor, Future, wait
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wrapper_doubles import (
    TIMEOUT,
    BrokenSubmitExecutor,
    ManualExecutor,
    invalid_state_errors,
    raise_,
)

from fluent_executors import TRACE, Executors, FlatMapExecutor, MapExecutor, f_return


def example_map(delegate: Executor, **kwargs: Any) -> MapExecutor[Any]:
    """One way to build it, which the tests of every wrapper run
    (``wrapper_doubles.examples``)."""
    return Executors.with_map(delegate, same, **kwargs)


def example_flat_map(delegate: Executor, **kwargs: Any) -> FlatMapExecutor[Any]:
    """One way to build it, which the tests of every wrapper run
    (``wrapper_doubles.examples``)."""
    return Executors.with_flat_map(delegate, f_return, **kwargs)


def same(value: object) -> object:
    """The function of a map that changes nothing."""
    return value


def double(value: int) -> int:
    return value * 2


# -- map: results and exceptions -------------------------------------------------------


def test_fn_transforms_each_result():
    with Executors.thread_pool(max_workers=2).with_map(double) as executor:
        futures = [executor.submit(pow, 2, n) for n in range(5)]

        assert [f.result(TIMEOUT) for f in futures] == [2, 4, 8, 16, 32]


def test_fn_defaults_to_identity_for_more_executors_callers():
    executor = MapExecutor(Executors.sync())

    assert executor.submit(pow, 2, 3).result() == 8


def test_exception_passes_through_unchanged_without_error_fn():
    error = ValueError("boom")
    executor = Executors.sync().with_map(double)

    assert executor.submit(raise_, error).exception() is error


def test_error_fn_turns_an_exception_into_a_result():
    executor = Executors.sync().with_map(double, error_fn=lambda e: f"recovered {e}")

    assert executor.submit(raise_, ValueError("boom")).result() == "recovered boom"


def test_error_fn_that_raises_replaces_the_exception():
    replacement = KeyError("replaced")

    def error_fn(error: Exception) -> int:
        raise replacement from error

    executor = Executors.sync().with_map(double, error_fn=error_fn)

    assert executor.submit(raise_, ValueError("boom")).exception() is replacement


def test_error_fn_that_reraises_keeps_the_exception_unchanged():
    error = ValueError("boom")

    def error_fn(raised: Exception) -> int:
        raise raised

    executor = Executors.sync().with_map(double, error_fn=error_fn)

    assert executor.submit(raise_, error).exception() is error


def test_error_fn_is_not_called_for_base_exceptions():
    delegate = ManualExecutor()
    calls: list[BaseException] = []
    executor = MapExecutor(delegate, double, error_fn=calls.append)
    future = executor.submit(double, 1)
    interrupt = KeyboardInterrupt()

    delegate.futures[0].set_exception(interrupt)

    assert future.exception(TIMEOUT) is interrupt
    assert calls == []


def test_fn_that_raises_fails_the_future_and_logs_the_traceback(caplog):
    error = ZeroDivisionError("mapping failed")
    executor = Executors.sync().with_map(lambda value: raise_(error))

    with caplog.at_level(TRACE, logger="fluent_executors.map"):  # per future: opt-in
        future = executor.submit(double, 1)

    assert future.exception() is error
    assert [r.exc_info[1] for r in caplog.records if r.exc_info] == [error]
    assert [r.levelno for r in caplog.records] == [TRACE]


def test_fn_that_raises_base_exception_does_not_kill_the_worker_thread():
    interrupt = KeyboardInterrupt()
    with Executors.thread_pool(max_workers=1).with_map(
        lambda value: raise_(interrupt)
    ) as executor:
        failed = executor.submit(double, 1)

        assert failed.exception(TIMEOUT) is interrupt
        assert executor.delegate.submit(double, 2).result(TIMEOUT) == 4


def test_fn_runs_once_per_future():
    calls: list[int] = []
    executor = Executors.sync().with_map(lambda v: calls.append(v) or v)

    executor.submit(double, 1).result()

    assert calls == [2]


@given(st.lists(st.integers()), st.integers(), st.integers())
def test_chained_maps_compose_in_chain_order(values, add, multiply):
    executor = (
        Executors.sync().with_map(lambda v: v + add).with_map(lambda v: v * multiply)
    )

    results = [executor.submit(int, v).result() for v in values]

    assert results == [(v + add) * multiply for v in values]


# -- map: cancel -----------------------------------------------------------------------


def test_cancel_of_pending_work_cancels_the_delegate_future():
    delegate = ManualExecutor()
    future = MapExecutor(delegate, double).submit(double, 1)

    assert future.cancel() is True
    assert future.cancelled()
    assert delegate.futures[0].cancelled()


def test_cancel_of_running_work_is_refused():
    delegate = ManualExecutor()
    future = MapExecutor(delegate, double).submit(double, 1)
    delegate.futures[0].set_running_or_notify_cancel()

    assert future.cancel() is False
    assert future.running()


def test_cancelled_delegate_future_cancels_the_mapped_future():
    delegate = ManualExecutor()
    future = MapExecutor(delegate, double).submit(double, 1)

    delegate.futures[0].cancel()

    assert future.cancelled()
    with pytest.raises(CancelledError):
        future.result(TIMEOUT)


# -- map: executor contract ------------------------------------------------------------


def test_delegate_submit_error_is_raised_from_submit():
    delegate = BrokenSubmitExecutor()

    with pytest.raises(OSError, match="broken"):
        MapExecutor(delegate, double).submit(double, 1)


def test_submit_after_shutdown_raises_runtime_error():
    executor = Executors.sync().with_map(double)
    executor.shutdown()

    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(double, 1)


def test_shutdown_twice_reaches_the_innermost_executor_harmlessly():
    delegate = ManualExecutor()
    executor = MapExecutor(MapExecutor(delegate, double), double)

    executor.shutdown(wait=False, cancel_futures=True)
    executor.shutdown()

    assert delegate.shutdowns == [(False, True), (True, False)]


def test_future_outlives_its_executor():
    delegate = ManualExecutor()
    executor = MapExecutor(delegate, double)
    future = executor.submit(double, 1)
    executor.shutdown(wait=False)
    del executor

    delegate.finish(0)

    assert future.result(TIMEOUT) == 4


def test_raising_done_callback_breaks_neither_the_future_nor_other_callbacks():
    seen: list[int] = []
    delegate = ManualExecutor()
    future = MapExecutor(delegate, double).submit(double, 1)
    future.add_done_callback(lambda f: raise_(RuntimeError("callback bug")))
    future.add_done_callback(lambda f: seen.append(f.result()))

    delegate.finish(0)

    assert seen == [4]
    assert future.result() == 4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fn": 3}, "fn must be callable"),
        ({"fn": double, "error_fn": "x"}, "error_fn must be callable"),
        ({"fn": double, "name": 3}, "name must be a str"),
    ],
)
def test_bad_arguments_raise_type_error_naming_them(kwargs, message):
    with pytest.raises(TypeError, match=message):
        MapExecutor(Executors.sync(), **kwargs)


def test_name_passes_down_the_chain_unless_given():
    pool = Executors.sync(name="reports")

    assert pool.with_map(double).name == "reports"
    assert pool.with_map(double).with_throttle(2).name == "reports"
    assert pool.with_map(double, name="mapped").name == "mapped"


# -- flat map --------------------------------------------------------------------------


def test_flat_map_takes_on_the_outcome_of_the_returned_future():
    second = ManualExecutor()
    executor = Executors.sync().with_flat_map(lambda v: second.submit(double, v))
    future = executor.submit(double, 1)

    assert not future.done()
    second.finish(0)

    assert future.result(TIMEOUT) == 4


def test_flat_map_does_not_apply_fn_to_the_returned_future_outcome():
    calls: list[int] = []

    def step(value: int) -> Future[int]:
        calls.append(value)
        return Executors.sync().submit(double, value)

    executor = Executors.sync().with_flat_map(step)

    assert executor.submit(double, 1).result() == 4
    assert calls == [2]


def test_flat_map_returned_future_failure_passes_unchanged():
    error = ValueError("second step failed")
    executor = Executors.sync().with_flat_map(
        lambda v: Executors.sync().submit(raise_, error)
    )

    assert executor.submit(double, 1).exception() is error


def test_flat_map_error_fn_returns_the_future_to_follow():
    executor = Executors.sync().with_flat_map(
        double, error_fn=lambda e: Executors.sync().submit(str, e)
    )

    assert executor.submit(raise_, ValueError("boom")).result() == "boom"


def test_flat_map_fn_returning_a_non_future_fails_with_type_error():
    executor = FlatMapExecutor(Executors.sync(), double)

    with pytest.raises(TypeError, match="must return a Future, got int"):
        executor.submit(double, 1).result()


def test_flat_map_cancel_after_the_first_step_cancels_the_returned_future():
    second = ManualExecutor()
    executor = Executors.sync().with_flat_map(lambda v: second.submit(double, v))
    future = executor.submit(double, 1)

    assert future.cancel() is True
    assert future.cancelled()
    assert second.futures[0].cancelled()


def test_flat_map_through_thread_pools_resolves_every_future():
    second = Executors.thread_pool(max_workers=2)
    with (
        second,
        Executors.thread_pool(max_workers=2).with_flat_map(
            lambda v: second.submit(double, v)
        ) as executor,
    ):
        futures = [executor.submit(pow, 2, n) for n in range(20)]

        results = [f.result(TIMEOUT) for f in futures]

    assert results == [2 ** (n + 1) for n in range(20)]


def test_map_fn_runs_in_the_thread_that_completes_the_delegate_future():
    threads: list[str] = []
    delegate = ManualExecutor()
    executor = MapExecutor(
        delegate, lambda v: threads.append(threading.current_thread().name) or v
    )
    future = executor.submit(double, 1)

    finisher = threading.Thread(target=delegate.finish, args=(0,), name="finisher")
    finisher.start()
    finisher.join(TIMEOUT)

    assert future.result(TIMEOUT) == 2
    assert threads == ["finisher"]


def test_thousands_of_submits_with_random_cancels_all_end(caplog):
    rng = random.Random(5)
    second = Executors.thread_pool(max_workers=2)
    with (
        caplog.at_level(logging.WARNING),
        second,
        Executors.thread_pool(max_workers=2)
        .with_map(double)
        .with_flat_map(lambda v: second.submit(double, v)) as executor,
    ):
        futures = []
        for n in range(3000):
            futures.append(executor.submit(int, n))
            if rng.random() < 0.3:
                rng.choice(futures).cancel()

        not_done = wait(futures, timeout=TIMEOUT).not_done

    assert not not_done
    assert all(f.cancelled() or f.result() == 4 * n for n, f in enumerate(futures))
    assert invalid_state_errors(caplog.records) == []


def test_a_long_chain_of_flat_mapped_futures_resolves_without_deep_recursion():
    delegate = ManualExecutor()
    future = MapExecutor(delegate).submit(int, 0)
    for _ in range(5000):
        future = FlatMapExecutor(Executors.sync(), lambda _, f=future: f).submit(int)

    delegate.futures[0].set_result("end")

    assert future.result(TIMEOUT) == "end"
