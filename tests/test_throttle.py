"""ThrottleExecutor: at most ``count`` futures of the delegate under way at once."""

from __future__ import annotations

import inspect
import logging
import random
import sys
import threading
import time
from concurrent.futures import Executor, Future, wait
from types import FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wrapper_doubles import (
    TIMEOUT,
    BrokenSubmitExecutor,
    ManualExecutor,
    WrittenUnderLock,
    invalid_state_errors,
    raise_,
)

from _fluent_executors import queueing as _queueing
from _fluent_executors.stdlib_compat import LOCK_FREE
from fluent_executors import Executors, ThrottleExecutor, throttle


def example_throttle(delegate: Executor, **kwargs: Any) -> ThrottleExecutor[Any]:
    """One way to build it, which the tests of every wrapper run
    (``wrapper_doubles.examples``)."""
    return Executors.with_throttle(delegate, 2, **kwargs)


def ident(value: int) -> int:
    return value


# -- the limit -----------------------------------------------------------------------


def test_only_count_callables_reach_the_delegate_at_once():
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, 2)

    futures = [executor.submit(ident, n) for n in range(5)]

    assert delegate.arguments == [(0,), (1,)]
    assert not any(f.done() for f in futures)


def test_a_finished_future_lets_the_next_queued_one_through_in_submit_order():
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, 2)
    futures = [executor.submit(ident, n) for n in range(5)]

    delegate.finish(1)
    delegate.finish(0)

    assert delegate.arguments == [(0,), (1,), (2,), (3,)]
    assert [f.result(TIMEOUT) for f in futures[:2]] == [0, 1]


def test_results_and_exceptions_arrive_unchanged():
    error = ValueError("boom")
    with Executors.thread_pool(max_workers=4).with_throttle(2) as executor:
        ok = executor.submit(ident, 7)
        failed = executor.submit(raise_, error)

        assert ok.result(TIMEOUT) == 7
        assert failed.exception(TIMEOUT) is error


@settings(max_examples=20, deadline=None)
@given(count=st.integers(1, 4), tasks=st.integers(1, 30))
def test_concurrency_on_a_thread_pool_never_exceeds_count(count, tasks):
    lock = threading.Lock()
    running = [0]
    peak = [0]

    def task(n: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.001)  # not a synchronisation: makes the tasks overlap
        with lock:
            running[0] -= 1
        return n

    with Executors.thread_pool(max_workers=6).with_throttle(count) as executor:
        futures = [executor.submit(task, n) for n in range(tasks)]

        assert [f.result(TIMEOUT) for f in futures] == list(range(tasks))
    assert peak[0] <= count


def test_starts_no_thread():
    # (No new thread, and no more threads: one of an earlier test may end.)
    before = set(threading.enumerate())
    threads_before = threading.active_count()
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, 1)

    for n in range(10):
        executor.submit(ident, n)
    for n in range(10):
        delegate.finish(n)

    assert [t.name for t in threading.enumerate() if t not in before] == []
    assert threading.active_count() <= threads_before


def test_delegate_completing_inline_does_not_recurse():
    # Every future after the first is done when submit() returns: a naive
    # dispatch-from-done-callback would recurse once per queued callable.
    delegate = ManualExecutor(done_after=1)
    executor = ThrottleExecutor(delegate, 1)
    futures = [executor.submit(ident, n) for n in range(3000)]

    delegate.finish(0)

    assert [f.result(TIMEOUT) for f in futures] == list(range(3000))


def test_a_done_callback_that_submits_inside_the_queues_loop_leaves_it_working():
    delegate = ManualExecutor(done_after=1)  # all but the first are done at once
    executor = ThrottleExecutor(delegate, 1)
    first, second = (executor.submit(ident, n) for n in range(2))  # second queued
    inner: list[Future[int]] = []
    second.add_done_callback(lambda _: inner.append(executor.submit(ident, 2)))

    delegate.finish(0)  # the loop passes the second on; its callback submits
    later = executor.submit(ident, 3)  # with the queue empty: straight on

    assert [f.result(TIMEOUT) for f in (first, second, *inner, later)] == [0, 1, 2, 3]


def test_a_submit_with_callables_queued_waits_behind_them():
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, 1)
    first, second = (executor.submit(ident, n) for n in range(2))  # second queued

    delegate.finish(0)  # its slot goes to the second, not to a later submit
    third = executor.submit(ident, 2)

    assert len(delegate.futures) == 2
    delegate.finish(1)
    delegate.finish(2)
    assert [f.result(TIMEOUT) for f in (first, second, third)] == [0, 1, 2]


def test_a_future_resolved_by_hand_keeps_its_slot_until_the_delegate_is_done():
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, 1)
    first = executor.submit(ident, 0)
    first.set_result(-1)  # a user's doing: the delegate's callable still runs
    second = executor.submit(ident, 1)

    assert len(delegate.futures) == 1  # the second waits for the slot
    delegate.finish(0)
    delegate.finish(1)
    assert [first.result(TIMEOUT), second.result(TIMEOUT)] == [-1, 1]


def test_raising_done_callback_does_not_stop_the_queue():
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, 1)
    first, second = (executor.submit(ident, n) for n in range(2))
    first.add_done_callback(lambda f: raise_(RuntimeError("callback bug")))

    delegate.finish(0)
    delegate.finish(1)

    assert [first.result(TIMEOUT), second.result(TIMEOUT)] == [0, 1]


# -- dynamic count -------------------------------------------------------------------


def test_count_callable_is_read_before_each_dispatch():
    delegate = ManualExecutor()
    limit = [1]
    executor = ThrottleExecutor(delegate, lambda: limit[0])
    for n in range(6):
        executor.submit(ident, n)
    assert len(delegate.calls) == 1

    limit[0] = 3
    delegate.finish(0)

    assert delegate.arguments == [(0,), (1,), (2,), (3,)]


def test_count_callable_returning_none_means_no_limit():
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, lambda: None)

    for n in range(50):
        executor.submit(ident, n)

    assert len(delegate.calls) == 50


@pytest.mark.parametrize("bad", [-2, 1.5, "3", True])
def test_bad_count_value_is_logged_once_and_the_last_good_value_kept(caplog, bad):
    delegate = ManualExecutor()
    limit: list[object] = [2]
    executor = ThrottleExecutor(delegate, lambda: limit[0])
    executor.submit(ident, 0)
    limit[0] = bad

    with caplog.at_level(logging.WARNING, logger="fluent_executors.throttle"):
        for n in range(1, 5):
            executor.submit(ident, n)

    assert len(delegate.calls) == 2
    assert [r.getMessage() for r in caplog.records] == [
        f"Error evaluating throttle count via {executor.count!r}: the count callable "
        f"of throttle executor 'default' returned {bad!r}, not an int >= 0 or None; "
        "keeping the limit at 2 (warned once until it returns a good value)"
    ]


def test_a_count_of_0_pauses_until_cancelled():
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, 0)

    future = executor.submit(ident, 1)

    assert delegate.calls == []
    assert future.cancel()
    executor.shutdown(wait=True)


def test_a_count_callable_saying_0_pauses_until_a_finishing_future_reads_more():
    delegate = ManualExecutor()
    limit = [1]
    executor = ThrottleExecutor(delegate, lambda: limit[0])
    executor.submit(ident, 0)
    limit[0] = 0
    waiting = [executor.submit(ident, n) for n in (1, 2)]
    assert len(delegate.calls) == 1

    limit[0] = 2
    delegate.futures[0].set_result(0)  # a future finishes: the count is read again

    assert len(delegate.calls) == 3
    for future in delegate.futures[1:]:
        future.set_result(None)
    assert all(f.done() for f in waiting)


def test_a_count_callable_saying_0_is_read_again_while_work_waits(monkeypatch):
    monkeypatch.setattr(throttle, "RECHECK_INTERVAL", 0.01)
    passed_on = threading.Event()

    class Recording(ManualExecutor):
        def submit(self, fn, /, *args, **kwargs):
            passed_on.set()
            return super().submit(fn, *args, **kwargs)

    limit = [0]
    executor = ThrottleExecutor(Recording(), lambda: limit[0])
    executor.submit(ident, 1)
    assert not passed_on.is_set()

    limit[0] = 1  # nothing finishes: only the periodic read can see it

    assert passed_on.wait(TIMEOUT)
    executor.shutdown(wait=False, cancel_futures=True)


def test_a_count_callable_that_raises_at_construction_makes_it_raise():
    def count() -> int:
        raise RuntimeError("config service down")

    with pytest.raises(RuntimeError, match="config service down"):
        ThrottleExecutor(ManualExecutor(), count)


def test_count_callable_that_raises_is_logged_with_traceback_and_ignored(caplog):
    delegate = ManualExecutor()
    calls = [0]

    def count() -> int:
        calls[0] += 1
        if calls[0] > 1:
            raise RuntimeError("config service down")
        return 2

    executor = ThrottleExecutor(delegate, count)
    with caplog.at_level(logging.WARNING, logger="fluent_executors.throttle"):
        futures = [executor.submit(ident, n) for n in range(4)]

    assert len(delegate.calls) == 2
    [record] = caplog.records
    assert isinstance(record.exc_info[1], RuntimeError)
    # the first words of more-executors' message, which its users may look for
    assert record.getMessage().startswith(
        f"Error evaluating throttle count via {count!r}:"
    )
    delegate.finish(0)
    assert futures[0].result(TIMEOUT) == 0
    assert len(delegate.calls) == 3


def test_count_callable_bad_from_the_start_limits_to_one():
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, lambda: "many")

    for n in range(3):
        executor.submit(ident, n)

    assert len(delegate.calls) == 1


# -- cancel --------------------------------------------------------------------------


def test_cancel_of_a_queued_future_removes_it_from_the_queue():
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, 1)
    first, queued, last = (executor.submit(ident, n) for n in range(3))

    assert queued.cancel() is True
    assert queued.cancelled()
    delegate.finish(0)

    assert delegate.arguments == [(0,), (2,)]
    assert first.result(TIMEOUT) == 0
    assert not last.done()


def test_cancel_of_a_dispatched_future_cancels_the_delegate_future():
    delegate = ManualExecutor()
    future = ThrottleExecutor(delegate, 1).submit(ident, 0)

    assert future.cancel() is True
    assert delegate.futures[0].cancelled()


def test_cancel_of_running_work_is_refused():
    delegate = ManualExecutor()
    future = ThrottleExecutor(delegate, 1).submit(ident, 0)
    delegate.futures[0].set_running_or_notify_cancel()

    assert future.cancel() is False
    assert future.running()


def test_thousands_of_submits_with_random_cancels_all_end(caplog):
    rng = random.Random(1234)
    with (
        caplog.at_level(logging.WARNING),
        Executors.thread_pool(max_workers=4).with_throttle(3) as executor,
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


# -- block ---------------------------------------------------------------------------


def run_in_thread(target, *args):
    """Start ``target(*args)`` in a thread; return the thread and its outcome."""
    outcome: list[object] = []
    thread = threading.Thread(target=lambda: outcome.append(target(*args)))
    thread.start()
    return thread, outcome


class CountingLimit:
    """A count callable that returns ``limit`` and tells when it has been read
    ``reads`` times: a blocking submit reads it once its future is queued."""

    def __init__(self, limit: int, reads: int) -> None:
        self.limit = limit
        self.reads = reads
        self.reached = threading.Event()
        self._calls = 0

    def __call__(self) -> int:
        self._calls += 1
        if self._calls >= self.reads:
            self.reached.set()
        return self.limit


def test_block_makes_submit_wait_until_a_slot_frees():
    delegate = ManualExecutor()
    limit = CountingLimit(1, reads=2)  # one read for each submit
    executor = ThrottleExecutor(delegate, limit, block=True)
    executor.submit(ident, 0)

    thread, _ = run_in_thread(executor.submit, ident, 1)
    assert limit.reached.wait(TIMEOUT)
    assert thread.is_alive()
    delegate.finish(0)
    thread.join(TIMEOUT)

    assert not thread.is_alive()
    assert delegate.arguments == [(0,), (1,)]


def test_blocked_submit_returns_when_its_future_is_cancelled():
    delegate = ManualExecutor()
    limit = CountingLimit(1, reads=2)
    executor = ThrottleExecutor(delegate, limit, block=True)
    executor.submit(ident, 0)
    thread, outcome = run_in_thread(executor.submit, ident, 1)
    assert limit.reached.wait(TIMEOUT)

    executor.shutdown(wait=False, cancel_futures=True)
    thread.join(TIMEOUT)

    assert outcome[0].cancelled()
    assert delegate.arguments == [(0,)]


# -- delegate errors and shutdown ----------------------------------------------------


def test_delegate_submit_error_fails_that_future_and_frees_its_slot(caplog):
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, 1)
    first = executor.submit(ident, 0)
    queued = executor.submit(ident, 1)
    after = executor.submit(ident, 2)
    delegate.fail_submits = 1

    with caplog.at_level(logging.WARNING, logger="fluent_executors.throttle"):
        delegate.finish(0)

    assert first.result(TIMEOUT) == 0
    assert isinstance(queued.exception(TIMEOUT), OSError)
    assert delegate.arguments == [(0,), (2,)]
    assert not after.done()
    assert "the delegate's submit() raised" in caplog.text


def test_delegate_whose_submit_always_raises_fails_every_future():
    executor = ThrottleExecutor(BrokenSubmitExecutor(), 2)

    futures = [executor.submit(ident, n) for n in range(5)]

    assert all(isinstance(f.exception(TIMEOUT), OSError) for f in futures)


def test_shutdown_waits_for_the_queue_then_shuts_down_the_delegate():
    with Executors.thread_pool(max_workers=2) as pool:
        gate = threading.Event()
        executor = pool.with_throttle(1)
        futures = [executor.submit(gate.wait, TIMEOUT) for _ in range(3)]
        gate.set()

        executor.shutdown()

        assert all(f.done() for f in futures)
        with pytest.raises(RuntimeError):
            pool.submit(ident, 0)


def test_shutdown_with_cancel_futures_cancels_the_queued_ones():
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, 1)
    first, *queued = (executor.submit(ident, n) for n in range(4))

    executor.shutdown(cancel_futures=True)

    assert all(f.cancelled() for f in queued)
    assert not first.done()
    assert delegate.shutdowns == [(True, True)]


def test_shutdown_without_wait_shuts_down_the_delegate_once_the_queue_is_empty():
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, 1)
    futures = [executor.submit(ident, n) for n in range(3)]

    executor.shutdown(wait=False)
    assert delegate.shutdowns == []
    delegate.finish(0)
    delegate.finish(1)

    assert delegate.shutdowns == [(False, False)]
    assert delegate.arguments == [(0,), (1,), (2,)]
    delegate.finish(2)
    assert [f.result(TIMEOUT) for f in futures] == [0, 1, 2]


def test_submit_after_shutdown_raises_and_double_shutdown_is_harmless():
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, 1)
    executor.shutdown()
    executor.shutdown()

    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(ident, 0)
    assert delegate.shutdowns == [(True, False), (True, False)]


def test_future_outlives_its_executor():
    delegate = ManualExecutor()
    executor = ThrottleExecutor(delegate, 1)
    futures = [executor.submit(ident, n) for n in range(2)]
    executor.shutdown(wait=False)
    del executor

    delegate.finish(0)
    delegate.finish(1)

    assert [f.result(TIMEOUT) for f in futures] == [0, 1]


# -- arguments -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"count": -1}, ValueError, "count must be >= 0, got -1"),
        ({"count": "2"}, TypeError, "count must be an int or a callable"),
        ({"count": True}, TypeError, "count must be an int or a callable"),
        ({"count": 2, "block": "yes"}, TypeError, "block must be a bool"),
        ({"count": 2, "name": None}, TypeError, "name must be a str"),
    ],
)
def test_bad_arguments_raise_early_naming_them(kwargs, error, message):
    with pytest.raises(error, match=message):
        ThrottleExecutor(ManualExecutor(), **kwargs)


def test_more_executors_positional_signature_still_works():
    logger = logging.getLogger("mine")
    executor = ThrottleExecutor(ManualExecutor(), 3, logger, "named", True)

    assert (executor.count, executor.name, executor.block) == (3, "named", True)


@pytest.mark.skipif(LOCK_FREE, reason="a GIL makes the count's steps atomic here")
def test_without_a_gil_the_count_under_way_changes_under_the_lock() -> None:
    # "self._running -= 1" is a read and then a write: without a GIL another
    # thread's may come between them, and a slot would stay taken for good.
    running = WrittenUnderLock()

    class Spy(ThrottleExecutor[Any]):
        _running = running

    delegate = ManualExecutor()
    executor = Spy(delegate, 1)
    running.armed = True
    futures = [executor.submit(ident, i) for i in range(3)]
    for index in range(3):  # each ends, and lets the next one in
        delegate.finish(index)

    assert [f.result(TIMEOUT) for f in futures] == [0, 1, 2]
    assert executor._running == 0
    assert running.unlocked == []


@pytest.mark.skipif(not LOCK_FREE, reason="the dispatch ends under the lock here")
def test_a_shutdown_without_wait_during_a_dispatch_is_never_lost():
    # The dispatch ends without the lock: shutdown(wait=False) may read that one is
    # under way, and the dispatch then end before the shutdown defers itself to
    # it. Forced here with line tracers, each thread waiting on the other's Event.
    reached_shutdown, dispatch_checked = threading.Event(), threading.Event()
    submitted = threading.Event()
    shut_down: list[bool] = []

    class Delegate(Executor):
        def submit(self, fn, /, *args, **kwargs):
            submitted.set()
            assert reached_shutdown.wait(TIMEOUT)
            future: Future[int] = Future()
            future.set_result(fn(*args, **kwargs))
            return future

        def shutdown(self, wait=True, *, cancel_futures=False):
            shut_down.append(wait)

    executor = ThrottleExecutor(Delegate(), 4)
    source = inspect.getsource(_queueing).splitlines()

    def line(frame: FrameType) -> str:
        return source[frame.f_lineno - 1]

    def trace_dispatch(frame: FrameType, event: str, _: object) -> Any:
        if frame.f_code.co_name != "_dispatch":
            return None
        decremented = False

        def local(frame: FrameType, event: str, _: object) -> Any:
            nonlocal decremented
            if event == "line":
                if "_dispatching -= 1" in line(frame):
                    decremented = True
                elif decremented and (
                    "with self._lock" in line(frame)
                    or "if shutdown_args" in line(frame)
                ):
                    dispatch_checked.set()  # past its check of the flags
            return local

        return local

    def trace_shutdown(frame: FrameType, event: str, _: object) -> Any:
        if frame.f_code.co_name != "shutdown":
            return None

        def local(frame: FrameType, event: str, _: object) -> Any:
            if event == "line" and "_deferred_shutdown = (False" in line(frame):
                reached_shutdown.set()  # it has read that a dispatch is under way
                assert dispatch_checked.wait(TIMEOUT)
            return local

        return local

    def dispatch() -> None:
        sys.settrace(trace_dispatch)
        executor.submit(ident, 1)

    dispatcher = threading.Thread(target=dispatch)
    dispatcher.start()
    assert submitted.wait(TIMEOUT)
    sys.settrace(trace_shutdown)
    try:
        executor.shutdown(wait=False)
    finally:
        sys.settrace(None)
    dispatcher.join(TIMEOUT)

    assert shut_down == [False]
