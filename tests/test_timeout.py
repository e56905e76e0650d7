"""TimeoutExecutor: futures not done in time are cancelled."""

from __future__ import annotations

import logging
import math
import os
import random
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Iterator
from concurrent.futures import CancelledError, Executor, Future, wait
from typing import Any

import pytest
from scheduler_leftovers import pending_callbacks
from wrapper_doubles import TIMEOUT

from _fluent_executors import scheduler as _scheduler
from _fluent_executors.scheduler import THREAD_NAME
from fluent_executors import (
    TRACE,
    Executors,
    SyncExecutor,
    ThreadPoolExecutor,
    TimeoutCancelledError,
    TimeoutExecutor,
    f_timeout,
)
from fluent_executors.testing import ManualExecutor, virtual_time


def example_timeout(delegate: Executor, **kwargs: Any) -> TimeoutExecutor[Any]:
    """One way to build it, which the tests of every wrapper run
    (``wrapper_doubles.examples``)."""
    return Executors.with_timeout(delegate, 60.0, **kwargs)


@pytest.fixture
def single() -> Iterator[ThreadPoolExecutor]:
    """A one-worker pool, so that a second callable stays queued behind the first."""
    executor = Executors.thread_pool(max_workers=1)
    yield executor
    executor.shutdown(wait=True)


@pytest.fixture
def busy(single: ThreadPoolExecutor) -> Iterator[threading.Event]:
    """Keeps ``single``'s worker busy until the event is set (at the end at last)."""
    release = threading.Event()
    started = threading.Event()

    def occupy() -> None:
        started.set()
        release.wait(10)

    single.submit(occupy)
    assert started.wait(timeout=5)
    yield release
    release.set()


def scheduler_threads_left() -> list[str]:
    """Join the scheduler thread and its workers, those started meanwhile too (a
    worker that the scheduler thread starts as it ends), for 5 s at the most;
    each one left, with where it is (its name and stack), and then the callbacks
    still pending: what a failure needs to be understood."""
    deadline = time.monotonic() + 5.0
    while (
        threads := [t for t in threading.enumerate() if t.name.startswith(THREAD_NAME)]
    ) and time.monotonic() < deadline:
        for thread in threads:
            thread.join(timeout=max(deadline - time.monotonic(), 0.0))
    frames = sys._current_frames()
    left = [
        f"{thread.name}:\n" + "".join(traceback.format_stack(frames[thread.ident]))
        for thread in threading.enumerate()
        if thread.name.startswith(THREAD_NAME)
        and thread.ident is not None
        and thread.ident in frames
    ]
    return [*left, *pending_callbacks()] if left else []


def test_a_result_in_time_arrives_and_its_timer_is_dropped(
    single: ThreadPoolExecutor,
) -> None:
    future = TimeoutExecutor(single, 60.0).submit(lambda: "ok")

    assert future.result(timeout=5) == "ok"
    assert scheduler_threads_left() == []


def test_an_exception_in_time_arrives_unchanged(single: ThreadPoolExecutor) -> None:
    error = ValueError("boom")

    def fail() -> None:
        raise error

    future = TimeoutExecutor(single, 60.0).submit(fail)

    assert future.exception(timeout=5) is error


def test_a_queued_future_not_done_in_time_is_cancelled(
    single: ThreadPoolExecutor, busy: threading.Event
) -> None:
    ran: list[str] = []
    with virtual_time() as clock:
        start = clock.monotonic()
        future = TimeoutExecutor(single, 0.05).submit(ran.append, "ran")
        cancelled_at: list[float] = []
        future.add_done_callback(lambda _: cancelled_at.append(clock.monotonic()))

        clock.advance(0.04)
        assert not future.done()
        clock.advance(0.02)

        assert future.cancelled()
        assert cancelled_at == [pytest.approx(start + 0.05)]
        assert cancelled_at[0] >= start + 0.05
    busy.set()
    single.shutdown(wait=True)
    assert ran == []


class EventHandler(logging.Handler):
    """Sets ``logged`` at the first record."""

    def __init__(self) -> None:
        super().__init__()
        self.logged = threading.Event()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        self.logged.set()


def test_a_running_future_whose_cancel_is_refused_is_left_to_finish(
    single: ThreadPoolExecutor,
) -> None:
    handler = EventHandler()
    logger = logging.getLogger("tests.timeout.refused")
    logger.setLevel(TRACE)  # a timeout is logged per future: opt-in
    logger.addHandler(handler)
    started, release = threading.Event(), threading.Event()

    def work() -> str:
        started.set()
        release.wait(5)
        return "finished"

    future = TimeoutExecutor(single, 0.01, logger=logger).submit(work)
    assert started.wait(timeout=5)

    assert handler.logged.wait(timeout=5)  # the timeout came and went
    release.set()

    assert future.result(timeout=5) == "finished"
    assert "cancel refused" in handler.messages[0]
    logger.removeHandler(handler)


def test_submit_timeout_uses_its_own_timeout(
    single: ThreadPoolExecutor, busy: threading.Event
) -> None:
    executor = TimeoutExecutor(single, 3600.0)

    future = executor.submit_timeout(0.01, lambda: "late")

    assert wait([future], timeout=5).done == {future}
    assert future.cancelled()


def test_a_zero_timeout_cancels_a_queued_future_at_once(
    single: ThreadPoolExecutor, busy: threading.Event
) -> None:
    future = TimeoutExecutor(single, 0).submit(lambda: "late")

    assert wait([future], timeout=5).done == {future}
    assert future.cancelled()


def test_an_infinite_timeout_never_starts_a_timer(
    single: ThreadPoolExecutor, busy: threading.Event
) -> None:
    assert scheduler_threads_left() == []

    future = TimeoutExecutor(single, math.inf).submit(lambda: "whenever")

    assert not any(t.name == THREAD_NAME for t in threading.enumerate())
    busy.set()
    assert future.result(timeout=5) == "whenever"


def test_cancel_before_the_timeout_returns_true_and_drops_the_timer(
    single: ThreadPoolExecutor, busy: threading.Event
) -> None:
    future = TimeoutExecutor(single, 3600.0).submit(lambda: "late")

    assert future.cancel() is True

    assert future.cancelled()
    with pytest.raises(CancelledError):
        future.result(timeout=0)
    assert scheduler_threads_left() == []


def test_a_done_callback_that_raises_breaks_nothing(
    single: ThreadPoolExecutor, busy: threading.Event
) -> None:
    called = threading.Event()
    future = TimeoutExecutor(single, 0.01).submit(lambda: "late")

    future.add_done_callback(lambda f: 1 / 0)
    future.add_done_callback(lambda f: called.set())

    assert called.wait(timeout=5)
    assert future.cancelled()
    # and the scheduler thread lived on to serve the next timeout
    second = TimeoutExecutor(single, 0.01).submit(lambda: "late")
    assert wait([second], timeout=5).done == {second}


def test_thousands_of_submits_with_random_cancels_all_end_without_state_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rng = random.Random(99)
    with Executors.thread_pool(max_workers=2) as pool:
        executor = pool.with_timeout(0.02)
        futures = [
            executor.submit(time.sleep, rng.random() / 1000) for _ in range(2000)
        ]
        for future in rng.sample(futures, 700):
            future.cancel()

        assert not wait(futures, timeout=30).not_done
    assert "InvalidStateError" not in caplog.text
    assert scheduler_threads_left() == []


@pytest.mark.parametrize(
    ("timeout", "error", "match"),
    [
        (-1, ValueError, "timeout must be >= 0"),
        (math.nan, ValueError, "timeout must be >= 0"),
        ("1", TypeError, "timeout must be a real number"),
        (True, TypeError, "timeout must be a real number"),
    ],
)
def test_a_bad_timeout_is_refused_naming_it(
    timeout: object, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        TimeoutExecutor(SyncExecutor(), timeout)  # type: ignore[arg-type]
    with pytest.raises(error, match=match):
        TimeoutExecutor(SyncExecutor(), 1.0).submit_timeout(timeout, print)  # type: ignore[arg-type]


def test_submit_refuses_a_callable_that_is_not_callable() -> None:
    with pytest.raises(TypeError, match="fn must be callable"):
        TimeoutExecutor(SyncExecutor(), 1.0).submit(None)  # type: ignore[arg-type]


def test_a_delegate_whose_submit_raises_makes_submit_raise() -> None:
    delegate = SyncExecutor()
    delegate.shutdown()

    with pytest.raises(RuntimeError, match="after shutdown"):
        TimeoutExecutor(delegate, 1.0).submit(print)
    assert scheduler_threads_left() == []


def test_with_timeout_passes_the_name_down_and_keeps_the_timeout() -> None:
    with Executors.thread_pool(max_workers=1, name="jobs").with_timeout(2.5) as ex:
        assert isinstance(ex, TimeoutExecutor)
        assert ex.name == "jobs"
        assert ex.timeout == 2.5
        assert ex.submit(lambda: 3).result(timeout=5) == 3


def test_with_timeout_takes_a_name_of_its_own() -> None:
    assert SyncExecutor(name="inner").with_timeout(1.0, name="outer").name == "outer"


def test_executors_with_timeout_takes_any_executor() -> None:
    executor = Executors.with_timeout(SyncExecutor(name="sync"), 1)

    assert executor.submit(lambda: "now").result(timeout=0) == "now"
    assert executor.name == "sync"


def test_submit_after_shutdown_raises_and_double_shutdown_is_harmless() -> None:
    executor = TimeoutExecutor(Executors.thread_pool(max_workers=1), 1.0)

    executor.shutdown()
    executor.shutdown()

    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(print)


def test_shutdown_propagates_to_the_innermost_executor() -> None:
    inner = Executors.thread_pool(max_workers=1)

    inner.with_timeout(1.0).with_timeout(2.0).shutdown()

    with pytest.raises(RuntimeError):
        inner.submit(print)


def test_no_scheduler_thread_survives_shutdown() -> None:
    executor = Executors.thread_pool(max_workers=2).with_timeout(60.0)
    futures = [executor.submit(time.sleep, 0.001) for _ in range(20)]

    executor.shutdown(wait=True)

    assert all(f.done() for f in futures)
    assert scheduler_threads_left() == []


def test_futures_outlive_their_executor() -> None:
    future = TimeoutExecutor(Executors.thread_pool(max_workers=1), 60.0).submit(
        lambda: "kept"
    )

    assert future.result(timeout=5) == "kept"


def test_a_slow_cancel_function_holds_up_no_other_timer() -> None:
    # A timeout over a poll executor cancels through its cancel function, which
    # typically makes a request: while it waits, other timeouts still fire.
    release = threading.Event()
    cancelling = threading.Event()

    def cancel_remote_task(task: object) -> bool:
        cancelling.set()
        return release.wait(10)

    poll = Executors.sync().with_poll(lambda descriptors: None, cancel_remote_task)
    slow = poll.with_timeout(0.0).submit(lambda: "task-1")
    assert cancelling.wait(timeout=5)
    try:
        other = f_timeout(Future(), 0.0)

        assert wait([other], timeout=5).done == {other}
        assert other.cancelled()
        assert not slow.done()  # its cancel function is still waiting
    finally:
        release.set()
    assert wait([slow], timeout=5).done == {slow}
    assert slow.cancelled()
    poll.shutdown()


# -- a timeout is identifiable ---------------------------------------------------------


def test_a_timed_out_future_raises_timeout_cancelled_error_naming_it(caplog):
    caplog.set_level(TRACE, logger="fluent_executors.timeout")  # per future: opt-in
    with (
        virtual_time() as clock,
        Executors.thread_pool(max_workers=1)
        .with_poll(lambda descriptors: 0.01)
        .with_timeout(0.05, name="publisher") as executor,
    ):
        future = executor.submit(lambda: "task")
        clock.advance(0.05)  # returns once the timeout has run, its log included
        with pytest.raises(TimeoutCancelledError) as raised:
            future.result(timeout=0)

    assert future.cancelled()
    assert isinstance(raised.value, CancelledError)
    assert raised.value.timeout == 0.05
    assert raised.value.source == "publisher"
    assert "timed out after 0.05 seconds (publisher)" in str(raised.value)
    with pytest.raises(TimeoutCancelledError):  # exception() raises it too
        future.exception()
    [record] = [r for r in caplog.records if r.name == "fluent_executors.timeout"]
    assert record.levelno == TRACE
    assert "'publisher'" in record.getMessage()


def test_a_users_cancel_stays_a_plain_cancelled_error():
    with (
        Executors.thread_pool(max_workers=1)
        .with_poll(lambda descriptors: 0.01)
        .with_timeout(60.0) as executor
    ):
        future = executor.submit(lambda: "task")
        assert future.cancel()

        with pytest.raises(CancelledError) as raised:
            future.result()

    assert type(raised.value) is CancelledError


def test_the_futures_that_follow_a_timed_out_one_say_so_too():
    with (
        Executors.thread_pool(max_workers=1)
        .with_poll(lambda descriptors: 0.01)
        .with_timeout(0.02)
        .with_map(str) as executor
    ):
        future = executor.submit(lambda: "task")
        with pytest.raises(TimeoutCancelledError):
            future.result(timeout=TIMEOUT)


def test_f_timeout_raises_timeout_cancelled_error_and_logs_it(caplog):
    caplog.set_level(TRACE, logger="fluent_executors.futures")  # per future: opt-in
    with virtual_time() as clock:
        timed = f_timeout(Future(), 0.01)
        clock.advance(0.01)  # returns once the timeout has run, its log included

    with pytest.raises(TimeoutCancelledError, match=r"0\.01 seconds \(f_timeout\)"):
        timed.result(timeout=0)
    assert [r.levelno for r in caplog.records] == [TRACE]


def test_timeout_cancelled_error_pickles_and_copies_with_its_fields():
    import copy
    import pickle

    error = TimeoutCancelledError(1.5, "publisher")
    for clone in (pickle.loads(pickle.dumps(error)), copy.copy(error)):
        assert (clone.timeout, clone.source, str(clone)) == (
            1.5,
            "publisher",
            str(error),
        )


# -- the executor's deadlines: one FIFO, one scheduler entry --------------------------


def pending_scheduler_entries() -> int:
    return _scheduler._scheduler._pending


def test_the_executors_timeouts_hold_one_scheduler_entry_whatever_their_number() -> (
    None
):
    delegate = ManualExecutor()
    executor = TimeoutExecutor(delegate, 60.0)
    before = pending_scheduler_entries()

    futures = [executor.submit(pow, 2, i) for i in range(1_000)]

    assert pending_scheduler_entries() == before + 1
    for _, _, upstream in delegate.calls:
        upstream.set_result(0)
    assert all(f.done() for f in futures)
    # Done in time: the FIFO is empty and its scheduler entry dropped.
    assert not executor._deadlines._items
    assert pending_scheduler_entries() == before
    assert scheduler_threads_left() == []


def test_done_futures_leave_the_fifo_lazily_in_constant_amortised_time() -> None:
    delegate = ManualExecutor()
    executor = TimeoutExecutor(delegate, 60.0)
    futures = [executor.submit(pow, 2, i) for i in range(100)]

    order = random.Random(4).sample(range(100), 100)
    for count, i in enumerate(order, 1):
        delegate.calls[i][2].set_result(0)
        live = 100 - count
        # Done entries never outnumber the live ones (by more than the last one).
        items = executor._deadlines._items
        assert len(items) <= 2 * live + 1
        assert {id(f) for f in futures if not f.done()} <= {id(f) for f in items}
    assert not executor._deadlines._items
    assert scheduler_threads_left() == []


def test_the_executors_timeouts_and_per_call_ones_expire_each_at_its_deadline() -> None:
    with virtual_time() as clock:
        executor = TimeoutExecutor(ManualExecutor(), 10.0)
        a = executor.submit(pow, 2, 1)  # due at 10
        b = executor.submit_timeout(5.0, pow, 2, 2)  # due at 5
        clock.advance(3.0)
        c = executor.submit(pow, 2, 3)  # due at 13
        d = executor.submit_timeout(20.0, pow, 2, 4)  # due at 23
        e = executor.submit_timeout(10.0, pow, 2, 5)  # its own timeout: due at 13
        futures = [a, b, c, d, e]

        cancelled = []
        for step, expected in [
            (1.9, []),
            (0.2, [b]),
            (4.8, [b]),
            (0.2, [a, b]),
            (3.0, [a, b, c, e]),
            (9.8, [a, b, c, e]),
            (0.2, futures),  # at 23.1
        ]:
            clock.advance(step)
            cancelled = [f for f in futures if f.cancelled()]
            assert cancelled == expected
        executor.shutdown()


def test_a_future_done_before_it_is_queued_is_not_queued() -> None:
    executor = TimeoutExecutor(SyncExecutor(), 60.0)
    before = pending_scheduler_entries()

    assert executor.submit(pow, 2, 3).result() == 8

    assert not executor._deadlines._items
    assert pending_scheduler_entries() == before


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_starts_with_an_empty_fifo_that_works() -> None:
    executor = TimeoutExecutor(ManualExecutor(), 0.2)
    inherited = executor.submit(pow, 2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
        pid = os.fork()
    if pid == 0:  # the child: report through the exit status alone
        status = 1  # and never return: it would run the parent's tests as well
        try:
            ok = not executor._deadlines._items
            future = executor.submit(pow, 2, 3)
            ok = ok and not wait([future], timeout=5).not_done and future.cancelled()
            status = 0 if ok else 1
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)

    assert os.waitstatus_to_exitcode(status) == 0
    with pytest.raises(TimeoutCancelledError):
        inherited.result(timeout=TIMEOUT)
    assert scheduler_threads_left() == []
