"""What the poll executor does for real services (docs/poll.rst, "Real services"):
a retry policy for the poll call, per-task defer, age and polls, a batch limit, and
re-attaching to a remote task."""

from __future__ import annotations

import logging
import math
import queue
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any
from unittest import mock

import pytest
from wrapper_doubles import TIMEOUT

from _fluent_executors import clock as _clock
from _fluent_executors.poll.descriptor import PollFuture
from _fluent_executors.poll.thread import PollThread
from fluent_executors import (
    ExceptionRetryPolicy,
    Executors,
    PollDescriptor,
    PollExecutor,
    RetryPolicy,
)
from fluent_executors.testing import virtual_time


class Service:
    """A scripted remote service and its poll function: tasks that ``finish`` are
    resolved; the poll function raises while ``errors`` has items; every call's
    task ids are recorded."""

    def __init__(self, delay: float = math.inf) -> None:
        self.delay = delay
        self.finished: set[Any] = set()
        self.errors: list[BaseException] = []
        self.calls: queue.Queue[list[Any]] = queue.Queue()
        self.seen: list[list[Any]] = []
        self.lock = threading.Lock()

    def __call__(self, descriptors: list[PollDescriptor[Any]]) -> float:
        ids = [d.result for d in descriptors]
        self.seen.append(ids)
        self.calls.put(ids)
        with self.lock:
            if self.errors:
                raise self.errors.pop(0)
            finished = set(self.finished)
        for descriptor in descriptors:
            if descriptor.result in finished:
                descriptor.yield_result()
        return self.delay

    def next_call(self) -> list[Any]:
        return self.calls.get(timeout=TIMEOUT)


@pytest.fixture
def executors() -> Any:
    made: list[PollExecutor[Any]] = []
    yield made
    for executor in made:
        executor.shutdown(wait=False, cancel_futures=True)


def identity(value: Any) -> Any:
    return value


# -- entering polling ----------------------------------------------------------------


def polled_once_then_waiting(
    executors: list[Any],
    monkeypatch: pytest.MonkeyPatch,
    finished: set[Any],
    waits: Callable[[float | None], bool],
) -> tuple[PollExecutor[Any], Service]:
    """A poll executor on a sync delegate whose service asks for 60 s, once its
    poll thread has polled ``"a"`` once and then waits with a timeout for which
    ``waits(timeout)`` holds; the service finishes the tasks in ``finished``."""
    service = Service(delay=60.0)
    service.finished.update(finished)
    waiting = threading.Event()

    def wait(condition: threading.Condition, timeout: float | None) -> bool:
        if service.seen and waits(timeout):
            waiting.set()
        return real_wait(condition, timeout)

    real_wait = _clock.wait
    monkeypatch.setattr(_clock, "wait", wait)
    executor = Executors.sync().with_poll(service)
    executors.append(executor)
    executor.submit(identity, "a")
    assert service.next_call() == ["a"]
    assert waiting.wait(TIMEOUT)
    return executor, service


@pytest.fixture
def waiting_poll(executors, monkeypatch):
    """``"a"`` is polled, pending; the poll thread waits for the 60 s asked for:
    ``(executor, service)``."""
    return polled_once_then_waiting(
        executors, monkeypatch, set(), lambda timeout: timeout is not None
    )


def test_a_future_enters_polling_without_the_poller_lock(waiting_poll):
    # The delegate's threads hand futures to the poll thread without its lock
    # (docs/performance.rst): a worker never queues up behind a poll round.
    executor, service = waiting_poll
    submitted: Future[Any] = Future()
    with executor._poller._lock:  # as the poll thread holds it while it copies
        threading.Thread(
            target=lambda: submitted.set_result(executor.submit(identity, "b"))
        ).start()
        second = submitted.result(timeout=TIMEOUT)

    executor.notify()

    assert service.next_call() == ["a", "b"]
    assert not second.done()
    assert executor._poller.polled() == 2


def test_a_future_cancelled_before_the_poll_thread_takes_it_in_is_not_polled(
    waiting_poll,
):
    executor, service = waiting_poll
    second = executor.submit(identity, "b")  # waits for the next round (60 s)

    assert second.cancel()
    executor.notify()

    assert service.next_call() == ["a"]
    assert second.cancelled()
    assert executor._poller.polled() == 1
    assert second._descriptor is None  # no reference cycle left


@pytest.mark.parametrize("stats_during_the_call", [False, True])
def test_a_future_arriving_during_a_poll_that_asks_for_no_deadline_is_polled_at_once(
    executors, stats_during_the_call
):
    # The poll function returns math.inf ("only when notified or when a future
    # arrives") while a future arrives during that very call: it is polled next,
    # with no notify(); also if stats() takes it in during the call.
    calls: queue.Queue[list[Any]] = queue.Queue()
    in_second_call, go_on = threading.Event(), threading.Event()
    delays = iter([60.0, math.inf])

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        calls.put([d.result for d in descriptors])
        delay = next(delays, 60.0)
        if delay == math.inf:
            in_second_call.set()
            assert go_on.wait(TIMEOUT)
        return delay

    executor = Executors.sync().with_poll(poll)
    executors.append(executor)
    executor.submit(identity, "a")
    assert calls.get(timeout=TIMEOUT) == ["a"]  # then 60 s
    executor.notify()
    assert in_second_call.wait(TIMEOUT)
    assert calls.get(timeout=TIMEOUT) == ["a"]

    executor.submit(identity, "b")  # during the call, before it asks for inf
    if stats_during_the_call:
        assert executor.stats().polled == 2
    go_on.set()

    assert calls.get(timeout=TIMEOUT) == ["a", "b"]


def test_a_future_arriving_as_the_last_one_polled_ends_joins_the_next_round(
    executors,
):
    # "b" arrives while "a" is polled; that poll resolves "a" and asks for 60 s:
    # "b" joins that next round, as the poll page says (others were polled).
    calls: queue.Queue[list[Any]] = queue.Queue()
    in_second_call, go_on = threading.Event(), threading.Event()
    made: list[int] = []

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        made.append(len(descriptors))
        calls.put([d.result for d in descriptors])
        if len(made) == 2:
            in_second_call.set()
            assert go_on.wait(TIMEOUT)
            descriptors[0].yield_result()
        return 60.0

    with virtual_time() as clock:
        executor = Executors.sync().with_poll(poll)
        executors.append(executor)
        first = executor.submit(identity, "a")
        assert calls.get(timeout=TIMEOUT) == ["a"]  # then 60 s
        executor.notify()
        assert in_second_call.wait(TIMEOUT)
        assert calls.get(timeout=TIMEOUT) == ["a"]
        executor.submit(identity, "b")
        go_on.set()
        assert first.result(timeout=TIMEOUT) == "a"

        clock.advance(59.0)  # returns once the poll thread waits again
        assert calls.empty(), list(calls.queue)
        clock.advance(1.0)

        assert calls.get(timeout=TIMEOUT) == ["b"]


@pytest.fixture
def idle_after_a_poll(executors, monkeypatch):
    """``"a"`` ended in its first poll, which asked for 60 s: the poll thread waits
    with nothing to poll. ``"b"`` is finished at the service too."""
    executor, _ = polled_once_then_waiting(
        executors, monkeypatch, {"a", "b"}, lambda timeout: timeout is None
    )
    return executor


class ArrivalsThatLetOthersIn(deque[Any]):
    """The arrivals of a poller, with ``then()`` called just after each append: what
    another thread may do between a future's arrival and its check for a wake-up."""

    def __init__(self, then: Any) -> None:
        super().__init__()
        self.then = then

    def append(self, descriptor: Any) -> None:
        super().append(descriptor)
        self.then()


def test_a_future_that_stats_takes_in_as_it_arrives_is_still_polled_at_once(
    idle_after_a_poll,
):
    executor = idle_after_a_poll
    executor._poller.core._arrivals = ArrivalsThatLetOthersIn(executor.stats)

    assert executor.submit(identity, "b").result(timeout=TIMEOUT) == "b"


def test_a_future_that_the_poll_thread_takes_in_as_it_arrives_is_still_polled_at_once(
    idle_after_a_poll,
):
    executor = idle_after_a_poll
    poller = executor._poller

    def poll_thread_takes_it_in() -> None:
        with poller._lock:
            poller.core.take_in()  # as the poll thread does after a round

    poller.core._arrivals = ArrivalsThatLetOthersIn(poll_thread_takes_it_in)

    assert executor.submit(identity, "b").result(timeout=TIMEOUT) == "b"


def test_stats_that_takes_in_a_future_when_nothing_else_is_polled_polls_it_at_once(
    idle_after_a_poll,
):
    # A future has arrived (appended to the arrivals) and has not looked yet
    # whether to wake the poll thread, which waits with nothing to poll: stats()
    # takes it in, and must wake the thread as the future itself would have.
    executor = idle_after_a_poll
    poller = executor._poller
    future: PollFuture[Any] = PollFuture(poller)
    executor._counts.adopt(future)
    poller.add(future)
    descriptor = PollDescriptor(future, "b")
    assert future.enter_polling(descriptor)
    poller.core.arrive(descriptor, _clock.monotonic())  # (not looking at its answer)

    assert executor.stats().polled == 1
    assert future.result(timeout=TIMEOUT) == "b"


def test_a_descriptors_polls_stop_counting_once_its_future_is_done(executors):
    kept: list[PollDescriptor[Any]] = []
    calls: queue.Queue[list[Any]] = queue.Queue()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        calls.put([d.result for d in descriptors])
        for descriptor in descriptors:
            if descriptor.result == "a":
                kept.append(descriptor)
                descriptor.yield_result()
        return math.inf

    executor = Executors.sync().with_poll(poll)
    executors.append(executor)
    assert executor.submit(identity, "a").result(timeout=TIMEOUT) == "a"
    executor.submit(identity, "b")
    assert [calls.get(timeout=TIMEOUT) for _ in range(2)] == [["a"], ["b"]]
    executor.notify()
    assert calls.get(timeout=TIMEOUT) == ["b"]

    assert kept[0].polls == 1


# -- poll_retry_policy --------------------------------------------------------------


def test_transient_poll_errors_leave_the_futures_pending(executors, caplog):
    service = Service(delay=0.0)
    service.errors = [ConnectionError("503"), ConnectionError("reset")]
    service.finished = {"a", "b"}
    policy = ExceptionRetryPolicy(
        max_attempts=5, sleep=0.001, exception_base=ConnectionError
    )
    executor = Executors.sync().with_poll(service, poll_retry_policy=policy)
    executors.append(executor)

    futures = [executor.submit(identity, task) for task in ("a", "b")]

    assert [f.result(timeout=TIMEOUT) for f in futures] == ["a", "b"]
    warnings = [r for r in caplog.records if "stay pending" in r.getMessage()]
    assert [r.levelno for r in warnings] == [logging.WARNING] * 2


class RecordingPolicy(RetryPolicy):
    def __init__(self, retries: int) -> None:
        self.retries = retries
        self.asked: list[tuple[int, str]] = []

    def should_retry(self, attempt: int, future: Any) -> bool:
        self.asked.append((attempt, str(future.exception())))
        return attempt <= self.retries

    def sleep_time(self, attempt: int, future: Any) -> float:
        return 0.001


def test_the_policy_sees_consecutive_failures_and_the_error(executors):
    service = Service(delay=0.0)
    service.errors = [ConnectionError(f"down {n}") for n in range(1, 4)]
    policy = RecordingPolicy(retries=2)
    executor = Executors.sync().with_poll(service, poll_retry_policy=policy)
    executors.append(executor)

    future = executor.submit(identity, "a")

    assert str(future.exception(timeout=TIMEOUT)) == "down 3"  # the policy gave up
    assert policy.asked == [(1, "down 1"), (2, "down 2"), (3, "down 3")]


def test_the_failure_count_resets_after_a_successful_poll(executors):
    service = Service(delay=0.0)
    policy = RecordingPolicy(retries=1)
    executor = Executors.sync().with_poll(service, poll_retry_policy=policy)
    executors.append(executor)
    service.errors = [ConnectionError("one")]
    first = executor.submit(identity, "a")
    service.finished.add("a")
    assert first.result(timeout=TIMEOUT) == "a"

    service.errors = [ConnectionError("two")]
    second = executor.submit(identity, "b")
    service.finished.add("b")

    assert second.result(timeout=TIMEOUT) == "b"
    assert [attempt for attempt, _ in policy.asked] == [1, 1]


def test_without_a_policy_a_poll_error_fails_the_futures_as_before(executors):
    service = Service(delay=0.0)
    service.errors = [ConnectionError("503")]
    executor = Executors.sync().with_poll(service)
    executors.append(executor)

    future = executor.submit(identity, "a")

    assert isinstance(future.exception(timeout=TIMEOUT), ConnectionError)


def test_poll_retry_policy_and_max_batch_are_checked():
    with pytest.raises(TypeError, match="poll_retry_policy must be a RetryPolicy"):
        PollExecutor(Executors.sync(), identity, poll_retry_policy="retry")
    with pytest.raises(ValueError, match="max_batch must be at least 1"):
        PollExecutor(Executors.sync(), identity, max_batch=0)
    with pytest.raises(TypeError, match="max_batch must be an int"):
        PollExecutor(Executors.sync(), identity, max_batch=2.5)


# -- defer, age, polls -------------------------------------------------------------


def test_a_deferred_descriptor_is_left_out_even_on_notify(executors):
    deferred_ids: list[Any] = []

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        for descriptor in descriptors:
            if descriptor.result == "slow":
                descriptor.defer(60.0)  # Retry-After: 60
                deferred_ids.append(descriptor.result)
        return service(descriptors)

    service = Service()
    executor = Executors.sync().with_poll(poll)
    executors.append(executor)
    slow = executor.submit(identity, "slow")
    assert service.next_call() == ["slow"]

    executor.notify()  # nothing is due: the poll function is not called
    fast = executor.submit(identity, "fast")

    assert service.next_call() == ["fast"]
    service.finished.add("fast")
    executor.notify()
    assert service.next_call() == ["fast"]
    assert fast.result(timeout=TIMEOUT) == "fast"
    assert not slow.done()
    assert all(call for call in service.seen)  # never called with nothing
    assert deferred_ids == ["slow"]


def test_a_short_defer_brings_the_next_poll_forward(executors):
    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        for descriptor in descriptors:
            if descriptor.polls == 1:
                descriptor.defer(0.01)
            else:
                descriptor.yield_result()
        return math.inf  # only the deferred descriptor's time brings a poll

    executor = Executors.sync().with_poll(poll)
    executors.append(executor)

    assert executor.submit(identity, "a").result(timeout=TIMEOUT) == "a"


def test_age_and_polls_describe_each_descriptor(executors):
    seen: list[tuple[int, float]] = []

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        for descriptor in descriptors:
            seen.append((descriptor.polls, descriptor.age))
            if descriptor.polls == 3:
                descriptor.yield_result()
        return 0.001

    executor = Executors.sync().with_poll(poll)
    executors.append(executor)

    assert executor.submit(identity, "a").result(timeout=TIMEOUT) == "a"
    assert [polls for polls, _ in seen] == [1, 2, 3]
    ages = [age for _, age in seen]
    assert ages == sorted(ages)
    assert ages[0] >= 0


def test_polls_counts_each_descriptor_before_and_after_a_first_defer(executors):
    # Rounds that pass every descriptor are counted per call; the first defer
    # switches to counts per descriptor: each count goes on from where it was.
    seen: queue.Queue[dict[Any, int]] = queue.Queue()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        seen.put({d.result: d.polls for d in descriptors})
        for descriptor in descriptors:
            if descriptor.result == "late" and descriptor.polls == 2:
                descriptor.defer(10.0)
        return math.inf

    with virtual_time() as clock:
        executor = Executors.sync().with_poll(poll)
        executors.append(executor)
        executor.submit(identity, "early")
        assert seen.get(timeout=TIMEOUT) == {"early": 1}
        executor.submit(identity, "late")
        assert seen.get(timeout=TIMEOUT) == {"early": 2, "late": 1}
        executor.notify()
        assert seen.get(timeout=TIMEOUT) == {"early": 3, "late": 2}  # late deferred
        executor.notify()
        assert seen.get(timeout=TIMEOUT) == {"early": 4}
        clock.advance(10.0)
        assert seen.get(timeout=TIMEOUT) == {"early": 5, "late": 3}


def test_defer_checks_its_delay(executors):
    errors: queue.Queue[BaseException] = queue.Queue()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        for bad in (-1.0, "soon", math.nan):
            try:
                descriptors[0].defer(bad)  # type: ignore[arg-type]
            except (TypeError, ValueError) as error:
                errors.put(error)
        descriptors[0].yield_result()
        return math.inf

    executor = Executors.sync().with_poll(poll)
    executors.append(executor)
    executor.submit(identity, "a").result(timeout=TIMEOUT)

    assert [type(errors.get_nowait()) for _ in range(3)] == [
        ValueError,
        TypeError,
        ValueError,
    ]


# -- max_batch ---------------------------------------------------------------------


def test_max_batch_splits_a_round_oldest_first(executors):
    service = Service()
    executor = Executors.sync().with_poll(service, max_batch=3)
    executors.append(executor)
    first = executor.submit(identity, 0)
    assert service.next_call() == [0]
    for task in range(1, 10):
        executor.submit(identity, task)
    while service.calls.qsize():  # arrivals while the thread was busy
        service.next_call()
    service.seen.clear()

    executor.notify()
    calls = [service.next_call() for _ in range(4)]

    assert [len(call) for call in calls] == [3, 3, 3, 1]
    assert sorted(t for call in calls for t in call) == list(range(10))
    assert calls[0][0] == 0  # polled longest ago
    assert not first.done()


def test_max_batch_takes_the_smallest_delay_of_the_round(executors):
    delays = iter([math.inf, 0.01, math.inf, math.inf])
    calls: queue.Queue[int] = queue.Queue()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        calls.put(len(descriptors))
        if calls.qsize() > 3:
            for descriptor in descriptors:
                descriptor.yield_result()
        return next(delays, 0.0)

    gate = threading.Event()
    executor = Executors.thread_pool(max_workers=1).with_poll(poll, max_batch=1)
    executors.append(executor)
    executor.submit(gate.wait, TIMEOUT)
    futures = [executor.submit(identity, n) for n in range(2)]
    gate.set()

    assert all(f.result(timeout=TIMEOUT) is not None for f in futures)


# -- attach ------------------------------------------------------------------------


def test_attach_polls_a_task_without_submitting_anything(executors):
    service = Service(delay=0.0)
    delegate = mock.MagicMock(spec=Executors.sync())
    executor = PollExecutor(delegate, service)
    executors.append(executor)

    future = executor.attach("task-7")
    service.finished.add("task-7")

    assert future.result(timeout=TIMEOUT) == "task-7"
    delegate.submit.assert_not_called()


def test_an_attached_future_is_cancelled_through_the_cancel_function(executors):
    cancelled: list[Any] = []
    service = Service()
    executor = Executors.sync().with_poll(
        service, cancel_fn=lambda task: cancelled.append(task) or True
    )
    executors.append(executor)
    future = executor.attach("task-7")
    assert service.next_call() == ["task-7"]

    assert future.cancel()
    assert cancelled == ["task-7"]


def test_an_attached_future_can_be_cancelled_before_it_is_first_polled(
    executors, monkeypatch
):
    # A shutdown(cancel_futures=True) may cancel it between attach() counting it
    # and its entering polling: the cancel function gets its result then too.
    cancelled: list[Any] = []
    answers: list[bool] = []
    executor = Executors.sync().with_poll(
        Service(), cancel_fn=lambda task: cancelled.append(task) or True
    )
    executors.append(executor)
    start_polling = PollThread.start_polling

    def cancel_first(poller: PollThread, future: Any, descriptor: Any) -> None:
        answers.append(future.cancel())
        start_polling(poller, future, descriptor)

    monkeypatch.setattr(PollThread, "start_polling", cancel_first)
    future = executor.attach("task-7")

    assert answers == [True]
    assert cancelled == ["task-7"]
    assert future.cancelled()
    assert executor._poller.polled() == 0


def test_shutdown_cancels_a_future_that_enters_polling_while_its_cancel_is_refused(
    executors, monkeypatch
):
    # shutdown(cancel_futures=True) finds the callable running on the delegate and is
    # refused; the callable ends before that cancel() has returned, so start_polling's
    # own cancel comes while the first is in progress. It must not be lost.
    cancelled: list[Any] = []
    delegate_future: Future[Any] = Future()
    delegate_future.set_running_or_notify_cancel()
    delegate = mock.MagicMock(spec=Executors.sync())
    delegate.submit.return_value = delegate_future
    executor = PollExecutor(
        delegate, Service(), cancel_fn=lambda task: cancelled.append(task) or True
    )
    executors.append(executor)
    future = executor.submit(identity, "task-7")
    answers: list[bool] = []
    cancel_hook = PollFuture._cancel_hook

    def finish_before_answering(poll_future: PollFuture[Any]) -> bool:
        answer = cancel_hook(poll_future)
        answers.append(answer)
        if not delegate_future.done():  # refused: the callable is running; it ends
            delegate_future.set_result("task-7")  # and the future enters polling
        return answer

    monkeypatch.setattr(PollFuture, "_cancel_hook", finish_before_answering)
    executor.shutdown(wait=False, cancel_futures=True)

    assert answers == [False, True]  # refused, then asked again once polled
    assert cancelled == ["task-7"]
    assert future.cancelled()
    assert executor._poller.polled() == 0


def test_attaching_a_task_twice_gives_two_futures_resolved_by_one_poll(executors):
    service = Service()
    executor = Executors.sync().with_poll(service)
    executors.append(executor)
    first = executor.attach("task-7")
    assert service.next_call() == ["task-7"]
    second = executor.attach("task-7")
    assert service.next_call() == ["task-7", "task-7"]  # one descriptor each
    service.finished.add("task-7")

    executor.notify()

    assert service.next_call() == ["task-7", "task-7"]
    assert (first.result(timeout=TIMEOUT), second.result(timeout=TIMEOUT)) == (
        "task-7",
        "task-7",
    )


def test_attach_after_shutdown_is_refused():
    executor = Executors.sync().with_poll(Service())
    executor.shutdown()

    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.attach("task-7")
