"""RateLimitExecutor: at most ``max_calls`` submissions per ``period`` seconds."""

from __future__ import annotations

import logging
import random
import threading
import time
from concurrent.futures import Executor, wait
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wrapper_doubles import (
    TIMEOUT,
    BrokenSubmitExecutor,
    ManualExecutor,
    invalid_state_errors,
    raise_,
)

from _fluent_executors.scheduler import THREAD_NAME, WORKER_THREAD_NAME
from fluent_executors import Executors, RateLimitExecutor, ThreadPoolExecutor
from fluent_executors.testing import virtual_time

LONG = 60.0  # seconds: a period that never ends within a test


def example_rate_limit(delegate: Executor, **kwargs: Any) -> RateLimitExecutor[Any]:
    """One way to build it, which the tests of every wrapper run
    (``wrapper_doubles.examples``)."""
    return Executors.with_rate_limit(delegate, 100, **kwargs)


def ident(value: int) -> int:
    return value


def scheduler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


def assert_scheduler_thread_ends() -> None:
    for thread in scheduler_threads():
        thread.join(TIMEOUT)
    assert scheduler_threads() == []


def busiest_window(times: list[float], period: float) -> int:
    """The most of ``times`` that fall into one half-open window of ``period``
    seconds (a window starting at one of them is the busiest possible)."""
    times = sorted(times)
    return max(
        sum(1 for t in times[i:] if t < start + period) for i, start in enumerate(times)
    )


# -- the limit -----------------------------------------------------------------------


def test_the_first_max_calls_reach_the_delegate_at_once_the_rest_wait():
    delegate = ManualExecutor()
    executor = RateLimitExecutor(delegate, 3, LONG)

    futures = [executor.submit(ident, n) for n in range(5)]

    assert delegate.arguments == [(0,), (1,), (2,)]
    executor.shutdown(wait=False, cancel_futures=True)
    assert [f.cancelled() for f in futures] == [False] * 3 + [True] * 2
    assert_scheduler_thread_ends()


@settings(max_examples=5, deadline=None)
@given(max_calls=st.integers(1, 4), period=st.sampled_from([0.02, 0.05, LONG]))
def test_no_window_of_period_seconds_holds_more_than_max_calls(max_calls, period):
    delegate = ManualExecutor(done_after=0)
    with virtual_time() as clock:
        executor = RateLimitExecutor(delegate, max_calls, period)
        futures = [executor.submit(ident, n) for n in range(3 * max_calls + 1)]
        # The last call goes 3 periods in; half a period more absorbs the rounding of
        # the windows' times, each one period after the last.
        clock.advance(3.5 * period)

        assert [f.result(timeout=0) for f in futures] == list(range(3 * max_calls + 1))

        # The times are taken by the delegate when its submit() is called.
        assert busiest_window(delegate.submit_times, period) <= max_calls
        executor.shutdown()


def test_waiting_callables_go_through_in_submit_order():
    delegate = ManualExecutor(done_after=0)
    executor = RateLimitExecutor(delegate, 2, 0.01)

    futures = [executor.submit(ident, n) for n in range(9)]
    wait(futures, timeout=TIMEOUT)

    assert delegate.arguments == [(n,) for n in range(9)]
    executor.shutdown()


def test_waiting_callables_hold_no_thread_but_the_shared_scheduler():
    threads_before = set(threading.enumerate())
    executors = [RateLimitExecutor(ManualExecutor(), 1, LONG) for _ in range(5)]

    for executor in executors:
        for n in range(20):
            executor.submit(ident, n)

    started = set(threading.enumerate()) - threads_before
    assert {t.name for t in started} <= {THREAD_NAME, WORKER_THREAD_NAME}
    assert len(scheduler_threads()) == 1
    for executor in executors:
        executor.shutdown(cancel_futures=True)
    assert_scheduler_thread_ends()


def test_results_and_exceptions_arrive_unchanged():
    error = ValueError("boom")
    with Executors.thread_pool(max_workers=2).with_rate_limit(1, 0.01) as executor:
        ok = executor.submit(ident, 7)
        failed = executor.submit(raise_, error)

        assert ok.result(TIMEOUT) == 7
        assert failed.exception(TIMEOUT) is error


# -- cancel --------------------------------------------------------------------------


def test_cancel_of_a_waiting_future_removes_it_and_it_never_runs():
    delegate = ManualExecutor(done_after=0)
    # A period long enough that nothing but the first call is due during the test.
    executor = RateLimitExecutor(delegate, 1, LONG)
    first, cancelled, last = (executor.submit(ident, n) for n in range(3))

    assert cancelled.cancel() is True
    assert cancelled.cancelled()
    assert last.cancel() is True  # so that the scheduler thread can end

    assert first.result(TIMEOUT) == 0
    assert delegate.arguments == [(0,)]


def test_cancelling_every_waiting_future_lets_the_scheduler_thread_end():
    executor = RateLimitExecutor(ManualExecutor(), 1, LONG)
    futures = [executor.submit(ident, n) for n in range(4)]

    assert all(f.cancel() for f in futures[1:])

    assert_scheduler_thread_ends()


def test_cancel_of_a_dispatched_future_cancels_the_delegate_future():
    delegate = ManualExecutor()
    future = RateLimitExecutor(delegate, 1).submit(ident, 0)

    assert future.cancel() is True
    assert delegate.futures[0].cancelled()


def test_thousands_of_submits_with_random_cancels_all_end(caplog):
    rng = random.Random(99)
    with (
        caplog.at_level(logging.WARNING),
        Executors.thread_pool(max_workers=4).with_rate_limit(500, 0.01) as executor,
    ):
        futures = []
        for n in range(3000):
            futures.append(executor.submit(ident, n))
            if rng.random() < 0.3:
                rng.choice(futures).cancel()

        not_done = wait(futures, timeout=TIMEOUT).not_done

    assert not not_done
    assert all(f.cancelled() or f.result() == n for n, f in enumerate(futures))
    assert invalid_state_errors(caplog.records) == []
    assert_scheduler_thread_ends()


# -- delegate errors and shutdown ----------------------------------------------------


def test_delegate_submit_error_fails_that_future_later(caplog):
    delegate = ManualExecutor(done_after=0)
    executor = RateLimitExecutor(delegate, 1, 0.01)
    first = executor.submit(ident, 0)
    delegate.fail_submits = 1

    with caplog.at_level(logging.WARNING, logger="fluent_executors.rate_limit"):
        failed = executor.submit(ident, 1)
        after = executor.submit(ident, 2)

        assert isinstance(failed.exception(TIMEOUT), OSError)
        assert after.result(TIMEOUT) == 2
    assert first.result() == 0
    assert "the delegate's submit() raised" in caplog.text
    executor.shutdown()


def test_delegate_whose_submit_always_raises_fails_every_future():
    executor = RateLimitExecutor(BrokenSubmitExecutor(), 2, 0.01)

    futures = [executor.submit(ident, n) for n in range(5)]

    assert all(isinstance(f.exception(TIMEOUT), OSError) for f in futures)
    executor.shutdown()


def test_shutdown_waits_for_the_waiting_callables_then_shuts_down_the_delegate():
    delegate = ManualExecutor(done_after=0)
    executor = RateLimitExecutor(delegate, 1, 0.01)
    futures = [executor.submit(ident, n) for n in range(4)]

    executor.shutdown()

    assert [f.result(0) for f in futures] == [0, 1, 2, 3]
    assert delegate.shutdowns == [(True, False)]
    assert_scheduler_thread_ends()


def test_submit_after_shutdown_raises_and_double_shutdown_is_harmless():
    delegate = ManualExecutor()
    executor = RateLimitExecutor(delegate, 1)
    executor.shutdown()
    executor.shutdown()

    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(ident, 0)
    assert delegate.shutdowns == [(True, False), (True, False)]


def test_shutdown_propagates_through_a_chain_to_the_innermost_executor():
    pool = Executors.thread_pool(max_workers=1)
    executor = pool.with_rate_limit(5).with_map(str).with_rate_limit(5)

    executor.shutdown()

    with pytest.raises(RuntimeError):
        pool.submit(ident, 0)


# -- arguments -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((0,), ValueError, "max_calls must be at least 1, got 0"),
        ((2.5,), TypeError, "max_calls must be an int, got float"),
        ((True,), TypeError, "max_calls must be an int, got bool"),
        ((1, 0), ValueError, "period must be > 0 seconds, got 0"),
        ((1, -1.0), ValueError, "period must be >= 0"),
        ((1, float("nan")), ValueError, "period must be >= 0"),
        ((1, float("inf")), ValueError, "period must be finite"),
        ((1, "1"), TypeError, "period must be a real number, got str"),
    ],
)
def test_bad_arguments_raise_early_naming_them(args, error, message):
    with pytest.raises(error, match=message):
        RateLimitExecutor(ManualExecutor(), *args)


def test_name_and_limits_are_readable():
    executor = Executors.sync(name="api").with_rate_limit(10, period=60)

    assert (executor.name, executor.max_calls, executor.period) == ("api", 10, 60.0)


def test_a_rate_limit_inside_a_throttle_holds_where_the_work_starts():
    max_calls, period = 3, 0.1
    started: list[float] = []
    lock = threading.Lock()
    release = threading.Event()

    class RecordingPool(ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            with lock:
                started.append(time.monotonic())
            return super().submit(fn, *args, **kwargs)

    def slow() -> None:
        assert release.wait(TIMEOUT)

    pool = RecordingPool(max_workers=4)
    # The documented order (docs/wrappers.rst): the rate limit next to the pool.
    with pool.with_rate_limit(max_calls, period=period).with_throttle(2) as executor:
        futures = [executor.submit(slow) for _ in range(2)]
        futures += [executor.submit(int) for _ in range(10)]
        release.set()
        assert wait(futures, timeout=TIMEOUT).not_done == set()

    assert len(started) == 12
    for first in started:  # every window of one period, starting at any start
        in_window = [t for t in started if first <= t < first + period]
        assert len(in_window) <= max_calls


def test_rate_limits_in_front_of_blocking_throttles_starve_no_other_timer():
    from _fluent_executors.scheduler import MAX_WORKERS

    release = threading.Event()

    def hold() -> None:
        assert release.wait(TIMEOUT)

    executors = []
    for _ in range(MAX_WORKERS + 2):  # more blocking delegates than workers
        throttle = Executors.thread_pool(max_workers=1).with_throttle(1, block=True)
        limited = throttle.with_rate_limit(1, period=0.01)
        # The first call fills the throttle; the rest wait in the rate limit and
        # are passed on from the scheduler's workers, into a throttle that is full.
        for _ in range(3):
            limited.submit(hold)
        executors.append(limited)

    calls: list[float] = []

    def flaky() -> str:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise ConnectionError("once")
        return "ok"

    with Executors.sync().with_retry(sleep=0.05) as retrying:
        # The retry is due 0.05 s later, from a scheduler worker.
        assert retrying.submit(flaky).result(timeout=5) == "ok"
    assert calls[1] - calls[0] < 5

    release.set()
    for executor in executors:
        executor.shutdown(wait=True)
