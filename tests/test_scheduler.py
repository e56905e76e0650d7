"""The shared scheduler: one lazily started thread that runs callbacks at deadlines."""

from __future__ import annotations

import logging
import math
import os
import queue
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import CancelledError as FutureCancelledError
from concurrent.futures import Future
from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _fluent_executors import clock as _clock
from _fluent_executors import scheduler as _scheduler
from _fluent_executors.scheduler import (
    THREAD_NAME,
    WORKER_THREAD_NAME,
    call_at,
    call_later,
)
from _fluent_executors.stdlib_compat import FINISHED, PENDING
from fluent_executors import Executors, SchedulerStats, scheduler_stats
from fluent_executors.testing import ManualExecutor, virtual_time


def scheduler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


def wait_until_idle() -> None:
    """Join the scheduler thread (and any that is just ending)."""
    for thread in scheduler_threads():
        thread.join(timeout=10.0)
    assert scheduler_threads() == []


@pytest.fixture(autouse=True)
def idle_scheduler() -> None:
    wait_until_idle()


def test_call_later_runs_the_callback_in_the_scheduler_thread_after_the_delay() -> None:
    ran: queue.Queue[tuple[str, float]] = queue.Queue()
    start = time.monotonic()

    call_later(
        0.02, lambda: ran.put((threading.current_thread().name, time.monotonic()))
    )

    name, when = ran.get(timeout=5)
    assert name == THREAD_NAME
    assert when - start >= 0.02


def test_the_thread_is_a_daemon_started_by_the_first_call() -> None:
    assert scheduler_threads() == []

    handle = call_later(60.0, lambda: None)

    [thread] = scheduler_threads()
    assert thread.daemon
    handle.cancel()


def test_callbacks_run_in_deadline_order_whatever_the_call_order() -> None:
    order: queue.Queue[int] = queue.Queue()
    # Hold the scheduler thread until every callback is scheduled, however slowly
    # this thread runs: then only their deadlines decide the order. Held before
    # the first is scheduled, or a late wake could take it with the gate.
    # (No timeout on the gate: it opens in the finally clause whatever happens.)
    gate = threading.Event()
    held = threading.Event()

    def hold() -> None:
        held.set()
        gate.wait()

    call_later(0.0, hold)
    try:
        assert held.wait(timeout=5)
        # call_at's clock: ahead of time.monotonic() once a virtual clock moved it.
        when = _clock.monotonic()

        for delay in (0.03, 0.01, 0.02):
            call_at(when + delay, partial(order.put, int(delay * 100)))
    finally:
        gate.set()

    assert [order.get(timeout=5) for _ in range(3)] == [1, 2, 3]


def test_callbacks_due_at_the_same_time_run_in_call_order() -> None:
    order: queue.Queue[int] = queue.Queue()
    when = _clock.monotonic() + 0.01

    for index in range(5):
        call_at(when, partial(order.put, index))

    assert [order.get(timeout=5) for _ in range(5)] == [0, 1, 2, 3, 4]


def test_a_time_in_the_past_runs_as_soon_as_possible() -> None:
    done = threading.Event()

    call_at(_clock.monotonic() - 10.0, done.set)

    assert done.wait(timeout=5)


def test_cancel_before_the_deadline_returns_true_and_the_callback_never_runs() -> None:
    # On the virtual clock: on the real one a loaded machine may pass the deadline
    # before the cancel (found by the flake hunt).
    ran: list[str] = []
    later = threading.Event()
    with virtual_time() as clock:
        handle = call_later(10.0, lambda: ran.append("cancelled one"))
        call_later(30.0, later.set)

        assert handle.cancel() is True

        clock.advance(30.0)
        assert later.wait(timeout=5)
    assert ran == []


def test_cancel_after_the_callback_ran_returns_false() -> None:
    done = threading.Event()
    handle = call_later(0.0, done.set)
    assert done.wait(timeout=5)

    assert handle.cancel() is False


def test_cancel_twice_returns_false_the_second_time() -> None:
    handle = call_later(60.0, lambda: None)

    assert handle.cancel() is True
    assert handle.cancel() is False


@pytest.mark.parametrize("may_block", [False, True], ids=["thread", "worker"])
def test_a_callback_that_raises_is_logged_and_the_thread_carries_on(
    may_block: bool,
) -> None:
    def broken() -> None:
        raise ValueError("boom")

    # The records as the scheduler's logger emits them: two callbacks that may
    # block run in two workers, and the later one may end first (found by the
    # flake hunt), so the test waits for the record itself.
    records: queue.Queue[logging.LogRecord] = queue.Queue()
    handler = logging.Handler()
    handler.emit = records.put  # type: ignore[method-assign]
    scheduler_logger = logging.getLogger("fluent_executors._scheduler")
    scheduler_logger.addHandler(handler)
    try:
        after = threading.Event()
        call_later(0.0, broken, may_block=may_block)
        call_later(0.01, after.set, may_block=may_block)

        record = records.get(timeout=5)
        assert after.wait(timeout=5)
    finally:
        scheduler_logger.removeHandler(handler)
    assert records.empty()
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], ValueError)


def test_a_callback_may_schedule_another() -> None:
    done = threading.Event()

    call_later(0.0, lambda: call_later(0.0, done.set))

    assert done.wait(timeout=5)


def test_an_earlier_deadline_wakes_the_waiting_thread() -> None:
    done = threading.Event()
    far = call_later(60.0, lambda: None)
    start = time.monotonic()

    call_later(0.01, done.set)

    assert done.wait(timeout=5)
    assert time.monotonic() - start < 5
    far.cancel()


def test_the_thread_ends_once_the_last_callback_has_run() -> None:
    done = threading.Event()

    call_later(0.0, done.set)

    assert done.wait(timeout=5)
    wait_until_idle()


def test_the_thread_ends_soon_after_the_last_pending_callback_is_cancelled() -> None:
    handle = call_later(3600.0, lambda: None)
    [thread] = scheduler_threads()

    handle.cancel()

    thread.join(timeout=5)
    assert not thread.is_alive()


def test_a_new_thread_starts_after_the_previous_one_ended() -> None:
    first = threading.Event()
    call_later(0.0, first.set)
    assert first.wait(timeout=5)
    wait_until_idle()
    second = threading.Event()

    call_later(0.0, second.set)

    assert second.wait(timeout=5)


def test_cancelled_entries_are_compacted_away() -> None:
    handles = [call_later(3600.0, lambda: None) for _ in range(1000)]

    for handle in handles[:900]:
        handle.cancel()

    assert len(_scheduler._scheduler._heap) <= 2 * 100 + _scheduler._MIN_COMPACT
    for handle in handles[900:]:
        handle.cancel()
    assert _scheduler._scheduler._heap == []


def test_call_at_refuses_nan() -> None:
    with pytest.raises(ValueError, match="when must be a time"):
        call_at(math.nan, lambda: None)


def test_call_at_infinity_is_never_due_and_cancels() -> None:
    handle = call_at(math.inf, lambda: None)

    assert _scheduler._scheduler._pending == 0 or handle not in [
        entry[2] for entry in _scheduler._scheduler._heap
    ]
    assert handle.cancel()
    assert not handle.cancel()


def test_call_at_minus_infinity_is_due_at_once() -> None:
    ran = threading.Event()

    call_at(-math.inf, ran.set)

    assert ran.wait(5)


@settings(max_examples=20, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=20), st.booleans()),
        min_size=1,
        max_size=30,
    )
)
def test_exactly_the_callbacks_not_cancelled_run_in_deadline_order(
    plan: list[tuple[int, bool]],
) -> None:
    ran: queue.Queue[tuple[float, int]] = queue.Queue()
    # Hold the scheduler thread until every callback is scheduled and cancelled,
    # however slowly this thread runs: then every cancel is in time. It must be
    # held before the first is scheduled: a scheduler thread that wakes late would
    # take the first callbacks, due by then, along with the gate (found by the
    # flake hunt). (No timeout on the gate: a slow thread here must not let it
    # open early; it opens in the finally clause whatever happens.)
    gate = threading.Event()
    held = threading.Event()

    def hold() -> None:
        held.set()
        gate.wait()

    call_later(0.0, hold)
    end = threading.Event()
    try:
        assert held.wait(timeout=5)
        start = _clock.monotonic() + 0.005  # call_at's clock
        handles = [
            call_at(start + ms / 1000, partial(ran.put, (ms, i)))
            for i, (ms, _) in enumerate(plan)
        ]

        runs = [
            not (cancel and handle.cancel())
            for handle, (_, cancel) in zip(handles, plan, strict=True)
        ]
        assert runs == [not cancel for _, cancel in plan]
        call_at(start + 0.03, end.set)
    finally:
        gate.set()

    assert end.wait(timeout=5)
    got = [ran.get_nowait() for _ in range(ran.qsize())]
    expected = sorted((ms, i) for i, (ms, _) in enumerate(plan) if runs[i])
    assert got == expected


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_a_working_scheduler_without_the_parents_callbacks() -> (
    None
):
    inherited = call_later(3600.0, lambda: None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
        pid = os.fork()
    if pid == 0:  # the child: report through the exit status alone
        status = 1  # and never return: it would run the parent's tests as well
        try:
            ok = not inherited.cancel()
            done = threading.Event()
            call_later(0.0, done.set)
            status = 0 if ok and done.wait(timeout=5) else 1
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    inherited.cancel()

    assert os.waitstatus_to_exitcode(status) == 0


def test_the_thread_lingers_and_serves_a_callback_that_comes_soon_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A busy program's heap often empties between futures: a thread each time would
    # cost a thread start per future. On the virtual clock the linger is exact, and
    # no real time passes while the thread lingers.
    monkeypatch.setattr(_scheduler, "LINGER", 2.0)
    ran: queue.Queue[threading.Thread] = queue.Queue()
    with virtual_time() as clock:
        call_later(0.0, lambda: ran.put(threading.current_thread()))
        first = ran.get(timeout=5)
        clock.advance(1.9)

        call_later(0.0, lambda: ran.put(threading.current_thread()))

        assert ran.get(timeout=5) is first
        clock.advance(1.9)
        assert first.is_alive()
        clock.advance(0.2)  # past the 2 s (0.1 would fall short by a rounding)
        first.join(timeout=10)
        assert not first.is_alive()


def test_a_callback_that_may_block_runs_in_a_worker_and_holds_up_no_other() -> None:
    release = threading.Event()
    blocked = threading.Event()
    ran: queue.Queue[str] = queue.Queue()

    def block() -> None:
        ran.put(threading.current_thread().name)
        blocked.set()
        release.wait(10)

    call_later(0.0, block, may_block=True)
    assert blocked.wait(timeout=5)
    call_later(0.0, lambda: ran.put("plain"))
    call_later(0.0, lambda: ran.put("another that may block"), may_block=True)

    try:
        assert ran.get(timeout=5) == WORKER_THREAD_NAME
        assert {ran.get(timeout=5), ran.get(timeout=5)} == {
            "plain",
            "another that may block",
        }
    finally:
        release.set()


def test_at_most_max_workers_run_and_the_rest_wait_for_one_to_be_free() -> None:
    release = threading.Event()
    started: queue.Queue[int] = queue.Queue()

    def block(i: int) -> None:
        started.put(i)
        release.wait(10)

    for i in range(_scheduler.MAX_WORKERS + 1):
        call_later(0.0, partial(block, i), may_block=True)
    first = sorted(started.get(timeout=5) for _ in range(_scheduler.MAX_WORKERS))

    assert first == list(range(_scheduler.MAX_WORKERS))
    assert started.empty()
    workers = [t for t in threading.enumerate() if t.name == WORKER_THREAD_NAME]
    assert len(workers) == _scheduler.MAX_WORKERS
    release.set()
    assert started.get(timeout=5) == _scheduler.MAX_WORKERS
    for worker in workers:  # they end once idle
        worker.join(timeout=10)
        assert not worker.is_alive()


def stats_once(
    reached: Callable[[SchedulerStats], bool], timeout: float = 10.0
) -> SchedulerStats:
    """The first ``scheduler_stats()`` for which ``reached`` holds, looking every
    millisecond for ``timeout`` seconds at the most."""
    give_up = time.monotonic() + timeout
    while not reached(stats := scheduler_stats()):
        assert time.monotonic() < give_up, f"never reached; last {stats}"
        time.sleep(0.001)
    return stats


def test_scheduler_stats_show_timers_pending_and_starved_workers() -> None:
    idle = scheduler_stats()
    assert (idle.timers_pending, idle.callbacks_queued, idle.workers_busy) == (0, 0, 0)
    far = [call_later(600.0, lambda: None) for _ in range(3)]
    assert scheduler_stats().timers_pending == 3
    release = threading.Event()
    started = threading.Semaphore(0)

    def block() -> None:
        started.release()
        release.wait(10)

    try:
        for _ in range(_scheduler.MAX_WORKERS + 2):
            call_later(0.0, block, may_block=True)
        for _ in range(_scheduler.MAX_WORKERS):
            assert started.acquire(timeout=5)
        # The four running were taken from the heap; under load, the scheduler
        # thread may take the last two only now (until then, timers pending).
        starved = stats_once(lambda stats: stats.callbacks_queued == 2)
    finally:
        release.set()
        for handle in far:
            handle.cancel()

    assert starved == SchedulerStats(
        timers_pending=3,
        callbacks_queued=2,
        workers_busy=_scheduler.MAX_WORKERS,
        workers=_scheduler.MAX_WORKERS,
    )
    for _ in range(2):  # the two queued ones run once workers are free
        assert started.acquire(timeout=5)
    wait_until_idle()
    assert scheduler_stats().timers_pending == 0


def test_a_worker_that_cannot_start_leaves_its_callbacks_to_the_scheduler_thread(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    start = threading.Thread.start

    def refuse_workers(thread: threading.Thread) -> None:
        if thread.name == WORKER_THREAD_NAME:
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", refuse_workers)
    ran: queue.Queue[str] = queue.Queue()

    call_later(0.0, lambda: ran.put(threading.current_thread().name), may_block=True)

    assert ran.get(timeout=5) == THREAD_NAME  # run, not lost
    assert "could not start a scheduler worker thread" in caplog.text
    monkeypatch.undo()  # workers can start again, and the scheduler still serves
    call_later(0.0, lambda: ran.put(threading.current_thread().name), may_block=True)
    assert ran.get(timeout=5) == WORKER_THREAD_NAME


# -- far deadlines ---------------------------------------------------------------------


@pytest.mark.parametrize("far", [1e10, 1e300, math.inf])
def test_a_deadline_beyond_what_a_thread_can_wait_keeps_the_scheduler_serving(far):
    far_handle = call_later(far, lambda: None)
    ran = threading.Event()

    call_later(0.01, ran.set)

    assert ran.wait(5)
    far_handle.cancel()


def test_far_retry_backoff_and_f_timeout_hold_up_no_other_timer():
    from fluent_executors import Executors, f_timeout

    attempts = []

    def fails():
        attempts.append(1)
        raise ConnectionError("down")

    with Executors.sync().with_retry(sleep=1e11, max_sleep=1e12) as far_retry:
        waiting = far_retry.submit(fails)  # its retry is due in 1e11 seconds
        timed = f_timeout(Future(), 1e10)
        ran = threading.Event()
        call_later(0.01, ran.set)

        assert ran.wait(5)
        assert attempts == [1]
        assert not waiting.done()
        assert waiting.cancel()
        assert timed.cancel()


# -- DeadlineQueue: the FIFO of one delay behind one scheduler entry -------------------


class Item:
    """What a DeadlineQueue holds: done or not (its _state, a future's), and
    expired once."""

    def __init__(self) -> None:
        self.is_done = False
        self.expired = threading.Event()

    @property
    def _state(self) -> str:
        return FINISHED if self.is_done else PENDING

    def _expire(self) -> None:
        self.expired.set()


def test_a_deadline_queue_expires_its_items_in_order_with_one_scheduler_entry() -> None:
    queue_ = _scheduler.DeadlineQueue(0.05)
    before = _scheduler._scheduler._pending
    items = [Item() for _ in range(100)]
    for item in items:
        queue_.add(item)
    assert _scheduler._scheduler._pending == before + 1

    items[50].is_done = True
    queue_.discard()
    for i, item in enumerate(items):
        if i != 50:
            assert item.expired.wait(5)
    assert not items[50].expired.is_set()  # done: never expired
    assert not queue_._items


def test_an_item_added_while_the_queue_fires_leaves_the_next_deadline_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Times before the real clock's, whatever it reads (near zero on a machine
    # just booted): once the real clock is back, nothing is due in its future.
    start = time.monotonic() - 100.0
    now = [start]
    monkeypatch.setattr(_scheduler.clock, "monotonic", lambda: now[0])
    queue_ = _scheduler.DeadlineQueue(10.0)
    first, second, third = Item(), Item(), Item()
    queue_.add(first)  # due at start + 10
    now[0] = start + 2.0
    queue_.add(second)  # due at start + 12
    taken = queue_._timer
    assert taken is not None
    assert taken.cancel()  # as when the scheduler takes it to run: its _fn is None
    now[0] = start + 5.0
    queue_.add(third)  # due at start + 15, while the first is being fired
    assert queue_._timer is taken  # not one past the second's deadline

    now[0] = start + 10.0
    queue_._fire()  # what the taken timer runs

    assert first.expired.wait(5)
    timer = queue_._timer
    assert timer is not None
    assert timer.when == start + 12.0
    assert not second.expired.is_set()
    second.is_done = third.is_done = True
    queue_.discard()
    queue_.discard()
    assert queue_._timer is None  # empty: its scheduler entry is dropped


def test_items_done_before_they_are_added_leave_the_queue_empty_and_untimed() -> None:
    # A quick future is done before its timeout is added: add() leaves it out,
    # and its discard() finds nothing to drop. A later item still expires.
    queue_ = _scheduler.DeadlineQueue(0.01)
    for _ in range(100):
        item = Item()
        item.is_done = True
        queue_.add(item)
        queue_.discard()
        assert not queue_._items
        assert queue_._timer is None
    assert queue_._done == 0

    later = Item()
    queue_.add(later)
    assert later.expired.wait(5)
    assert not queue_._items


def test_the_last_discard_drops_an_entry_left_for_an_item_done_since(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # _fire may leave the queue empty and its entry pending (armed by an add()
    # while _fire waited): the discard of that item drops the entry, so that no
    # scheduler thread waits for it.
    start = time.monotonic() - 100.0  # see the test above
    now = [start]
    monkeypatch.setattr(_scheduler.clock, "monotonic", lambda: now[0])
    queue_ = _scheduler.DeadlineQueue(10.0)
    first, second = Item(), Item()
    queue_.add(first)
    taken = queue_._timer
    assert taken is not None
    assert taken.cancel()  # taken to run by the scheduler: _fire is on its way
    first.is_done = True
    queue_.discard()  # the queue is empty: no entry of its own
    now[0] = start + 1.0
    queue_.add(second)  # a new entry, for start + 11
    pending = queue_._timer
    assert pending is not None
    assert pending is not taken
    second.is_done = True
    now[0] = start + 10.0
    queue_._fire()  # the taken entry's run: drops the done item, not the entry
    assert not queue_._items
    assert queue_._timer is pending

    queue_.discard()

    assert queue_._timer is None
    assert not pending.cancel()  # cancelled already


def test_threads_discarding_at_once_leave_the_deadline_queue_empty() -> None:
    # discard() counts without the lock: no count may be lost, or the done items
    # of the last compaction would stay, and with them the scheduler entry.
    queue_ = _scheduler.DeadlineQueue(3600.0)
    start = threading.Barrier(4)

    def add_then_discard() -> None:
        items = [Item() for _ in range(500)]
        start.wait()
        for item in items:
            queue_.add(item)
        for item in items:
            item.is_done = True
            queue_.discard()

    threads = [threading.Thread(target=add_then_discard) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()

    assert not queue_._items
    assert queue_._timer is None


# -- shutdown(wait=True) joins the threads it started ------------------------------


@pytest.fixture
def default_linger(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler's threads linger as long as in a user's program."""
    monkeypatch.setattr(_scheduler, "LINGER", 0.05)


def library_threads_since(before: set[threading.Thread]) -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread not in before]


@pytest.mark.usefixtures("default_linger")
def test_shutdown_with_wait_joins_the_scheduler_threads_of_a_retried_call() -> None:
    # A program run under a thread-leak check: one retried call in a with block.
    before = set(threading.enumerate())
    calls = iter([OSError("flaky"), None])

    def flaky() -> str:
        error = next(calls)
        if error is not None:
            raise error
        return "ok"

    with Executors.thread_pool(max_workers=1).with_retry(max_sleep=0.001) as ex:
        assert ex.submit(flaky).result(timeout=10) == "ok"

    assert library_threads_since(before) == []


@pytest.mark.usefixtures("default_linger")
def test_shutdown_with_wait_joins_after_cancelling_timed_futures() -> None:
    # A push-item source's check: threading.active_count() is back where it was
    # after a with block over a timeout and cancel-on-shutdown chain. (No new
    # thread, and no more threads: one of an earlier test may end meanwhile.)
    before = set(threading.enumerate())
    count = threading.active_count()
    gate = threading.Event()
    try:
        with (
            Executors.thread_pool(max_workers=2)
            .with_timeout(3600.0)
            .with_cancel_on_shutdown()
        ) as executor:
            futures = [executor.submit(gate.wait, 10) for _ in range(4)]
            assert scheduler_stats().timers_pending >= 1
            gate.set()
    finally:
        gate.set()

    assert library_threads_since(before) == []
    assert threading.active_count() <= count
    assert all(future.done() for future in futures)


@pytest.mark.usefixtures("default_linger")
def test_shutdown_with_wait_leaves_the_scheduler_to_an_executor_still_using_it() -> (
    None
):
    other = Executors.with_timeout(ManualExecutor(), 0.2)  # its futures stay pending
    try:
        pending = other.submit(lambda: None)
        with Executors.sync().with_timeout(3600.0) as executor:
            executor.submit(lambda: None).result()

        assert len(scheduler_threads()) == 1  # the other timeout's deadline is in it
        with pytest.raises(FutureCancelledError):
            pending.result(timeout=10)  # and comes due as it should
    finally:
        other.shutdown()


def test_retire_from_a_scheduled_callback_leaves_its_own_thread_running() -> None:
    # Each would wait for the other: a shutdown inside a scheduled callback.
    ran: queue.Queue[str] = queue.Queue()

    def retire_here() -> None:
        _scheduler.retire()
        ran.put(threading.current_thread().name)

    call_later(0.0, retire_here)
    call_later(0.0, retire_here, may_block=True)
    assert {ran.get(timeout=10), ran.get(timeout=10)} == {
        THREAD_NAME,
        WORKER_THREAD_NAME,
    }
    wait_until_idle()


@pytest.mark.usefixtures("default_linger")
def test_retire_waits_for_a_running_callback_no_longer_than_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A callback blocked on what the shutting-down thread holds must not hang it.
    monkeypatch.setattr(_scheduler, "RETIRE_WAIT", 0.05)
    held = threading.Lock()
    started = threading.Event()

    def blocked() -> None:
        started.set()
        with held:
            pass

    with held:
        call_later(0.0, blocked, may_block=True)
        assert started.wait(10)
        _scheduler.retire()  # returns, leaving the busy worker running
        assert _scheduler.counts()[2:] == (1, 1)  # busy, alive
    wait_until_idle()
