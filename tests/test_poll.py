"""PollExecutor and PollDescriptor: one test per row of the poll page's tables
(docs/poll.rst).

The sections follow the spec: the state table, the error table, then our decisions
table. A few tests cover the rest of the standard future API and the scale
properties.
"""

from __future__ import annotations

import gc
import logging
import math
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import (
    CancelledError,
    Executor,
    Future,
    ThreadPoolExecutor,
    as_completed,
    wait,
)
from concurrent.futures import TimeoutError as FuturesTimeoutError
from typing import Any

import pytest

from _fluent_executors.poll.core import PollCore, PollEntry
from _fluent_executors.scheduler import call_later
from fluent_executors import Executors, PollDescriptor, PollExecutor

TIMEOUT = 10.0  # seconds: a generous bound for anything that should happen "now"


def example_poll(delegate: Executor, **kwargs: Any) -> PollExecutor[Any]:
    """One way to build it, which the tests of every wrapper run
    (``wrapper_doubles.examples``)."""
    return Executors.with_poll(delegate, resolve_all, **kwargs)


def resolve_all(descriptors: list[PollDescriptor[Any]]) -> None:
    """A poll function that resolves every future with its delegate's result."""
    for descriptor in descriptors:
        descriptor.yield_result()


class Remote:
    """A scripted remote system and its poll function.

    Tasks are identified by the delegate's result. The test says how each task ends
    (``finish``, ``fail``); the poll function resolves the futures of ended tasks,
    records every batch it is given, and returns ``delay``.
    """

    def __init__(self, delay: float | None = 0.01) -> None:
        self.delay: object = delay
        self.batches: queue.Queue[list[Any]] = queue.Queue()
        self._outcomes: dict[Any, tuple[str, Any]] = {}
        self._lock = threading.Lock()

    def finish(self, task: Any, value: Any = None) -> None:
        with self._lock:
            self._outcomes[task] = ("finish", value)

    def fail(self, task: Any, error: BaseException) -> None:
        with self._lock:
            self._outcomes[task] = ("fail", error)

    def __call__(self, descriptors: list[PollDescriptor[Any]]) -> Any:
        with self._lock:
            outcomes = dict(self._outcomes)
        for descriptor in descriptors:
            kind, value = outcomes.get(descriptor.result, ("pending", None))
            if kind == "finish":
                descriptor.yield_result()
            elif kind == "fail":
                descriptor.yield_exception(value)
        self.batches.put([d.result for d in descriptors])
        return self.delay

    def next_batch(self) -> list[Any]:
        return self.batches.get(timeout=TIMEOUT)


@pytest.fixture
def executors() -> Iterator[list[Executor]]:
    """Executors to shut down after the test, cancelling what is left."""
    made: list[Executor] = []
    yield made
    for executor in made:
        executor.shutdown(wait=True, cancel_futures=True)


@pytest.fixture
def make(executors: list[Executor]) -> Callable[..., PollExecutor]:
    """Build a PollExecutor over a sync delegate (unless one is given)."""

    def build(poll_fn: Any, delegate: Executor | None = None, **kwargs: Any) -> Any:
        executor = PollExecutor(delegate or Executors.sync(), poll_fn, **kwargs)
        executors.append(executor)
        return executor

    return build


def identity(value: Any) -> Any:
    return value


class Gate:
    """A delegate callable that blocks until released, then returns its argument."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self, value: Any) -> Any:
        self.started.set()
        assert self.release.wait(TIMEOUT)
        return value


# -- the state table ----------------------------------------------------------------


def test_delegate_future_completes_then_future_is_polled_with_its_result(make):
    remote = Remote(delay=math.inf)
    executor = make(remote)

    future = executor.submit(identity, "task-1")

    assert remote.next_batch() == ["task-1"]
    assert not future.done()


def test_poll_fn_yield_result_completes_future_successfully(make):
    remote = Remote()
    remote.finish("task-1")
    executor = make(remote)

    future = executor.submit(identity, "task-1")

    assert future.result(timeout=TIMEOUT) == "task-1"


def test_poll_fn_yield_exception_completes_future_in_error(make):
    remote = Remote()
    error = ValueError("remote task failed")
    remote.fail("task-1", error)
    executor = make(remote)

    future = executor.submit(identity, "task-1")

    assert future.exception(timeout=TIMEOUT) is error


def test_poll_fn_raises_fails_futures_of_that_poll_and_polls_again_later(make):
    error = RuntimeError("search request failed")
    calls = queue.Queue[list[Any]]()
    raise_now = threading.Event()
    raise_now.set()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        calls.put([d.result for d in descriptors])
        if raise_now.is_set():
            raise_now.clear()
            raise error
        for descriptor in descriptors:
            descriptor.yield_result()
        return 0.0

    executor = make(poll, default_interval=0.0)
    failed = executor.submit(identity, "task-1")
    assert failed.exception(timeout=TIMEOUT) is error

    later = executor.submit(identity, "task-2")

    assert later.result(timeout=TIMEOUT) == "task-2"
    assert calls.get(timeout=TIMEOUT) == ["task-1"]
    assert calls.get(timeout=TIMEOUT) == ["task-2"]


def test_cancel_of_polled_future_with_cancel_fn_returning_true_cancels_it(make):
    remote = Remote(delay=math.inf)
    cancelled_tasks: list[Any] = []
    executor = make(remote, cancel_fn=lambda task: cancelled_tasks.append(task) or True)
    future = executor.submit(identity, "task-1")
    remote.next_batch()

    assert future.cancel()
    assert future.cancelled()
    assert cancelled_tasks == ["task-1"]


def test_cancel_fn_raising_makes_cancel_return_false_and_logs(make, caplog):
    remote = Remote(delay=math.inf)

    def cancel_fn(task: Any) -> bool:
        raise ConnectionError("delete request failed")

    executor = make(remote, cancel_fn=cancel_fn)
    future = executor.submit(identity, "task-1")
    remote.next_batch()

    with caplog.at_level(logging.ERROR, logger="fluent_executors.poll"):
        assert not future.cancel()

    assert not future.done()
    remote.finish("task-1")  # the remote task ends, so shutdown can end
    executor.notify()
    [record] = caplog.records
    assert record.levelno == logging.ERROR
    # the first words of more-executors' message, which its users may look for
    assert record.getMessage().startswith("Exception during cancel ")
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], ConnectionError)


def test_cancel_while_delegate_future_running_does_not_call_cancel_fn(make):
    gate = Gate()
    cancel_calls: list[Any] = []
    executor = make(
        Remote(),
        delegate=ThreadPoolExecutor(1),
        cancel_fn=lambda task: cancel_calls.append(task) or True,
    )
    future = executor.submit(gate, "task-1")
    assert gate.started.wait(TIMEOUT)

    assert not future.cancel()  # running on the delegate: cannot be cancelled

    gate.release.set()
    assert cancel_calls == []


def test_cancel_while_delegate_future_queued_cancels_it_without_cancel_fn(make):
    gate = Gate()
    cancel_calls: list[Any] = []
    delegate = ThreadPoolExecutor(1)
    executor = make(
        Remote(), delegate=delegate, cancel_fn=lambda t: cancel_calls.append(t) or True
    )
    executor.submit(gate, "task-1")  # occupies the only worker
    assert gate.started.wait(TIMEOUT)
    queued = executor.submit(identity, "task-2")

    assert queued.cancel()

    assert queued.cancelled()
    assert cancel_calls == []
    gate.release.set()


# -- the error table ----------------------------------------------------------------


def test_poll_fn_raising_leaves_futures_not_in_that_poll_alone(make):
    error = RuntimeError("search request failed")
    gate = Gate()
    in_poll = threading.Event()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        if [d.result for d in descriptors] == ["task-1"]:
            in_poll.set()
            raise error
        for descriptor in descriptors:
            descriptor.yield_result()
        return 0.0

    executor = make(poll, delegate=ThreadPoolExecutor(2), default_interval=0.0)
    slow = executor.submit(gate, "task-2")  # not polled yet when the poll raises
    failed = executor.submit(identity, "task-1")
    assert failed.exception(timeout=TIMEOUT) is error
    gate.release.set()

    assert slow.result(timeout=TIMEOUT) == "task-2"


def test_cancel_fn_not_returning_true_refuses_cancel_and_polling_goes_on(make):
    remote = Remote(delay=math.inf)
    executor = make(remote, cancel_fn=lambda task: False)
    future = executor.submit(identity, "task-1")
    remote.next_batch()

    assert not future.cancel()

    remote.finish("task-1")
    executor.notify()
    assert future.result(timeout=TIMEOUT) == "task-1"


def test_yield_exception_makes_result_raise_that_exception(make):
    remote = Remote()
    remote.fail("task-1", KeyError("gone"))
    executor = make(remote)

    future = executor.submit(identity, "task-1")

    with pytest.raises(KeyError, match="gone"):
        future.result(timeout=TIMEOUT)


# -- our decisions ------------------------------------------------------------------


def test_yield_result_without_argument_resolves_with_descriptor_result(make):
    executor = make(lambda ds: [d.yield_result() for d in ds] and None)

    assert executor.submit(identity, {"task_id": 7}).result(TIMEOUT) == {"task_id": 7}


def test_yield_result_with_argument_resolves_with_that_value(make):
    executor = make(lambda ds: [d.yield_result(d.result * 10) for d in ds] and None)

    assert executor.submit(identity, 4).result(timeout=TIMEOUT) == 40


def test_yield_result_none_resolves_with_none_not_the_descriptor_result(make):
    executor = make(lambda ds: [d.yield_result(None) for d in ds] and None)

    assert executor.submit(identity, 4).result(timeout=TIMEOUT) is None


@pytest.mark.parametrize(
    ("returned", "delay"),
    [
        (None, 7.0),
        (2, 2.0),
        (0.5, 0.5),
        (0, 0.0),
        (-3, 0.0),
        (math.inf, math.inf),
        (True, 7.0),
        (False, 7.0),
        ("1", 7.0),
        (math.nan, 7.0),
        ([1], 7.0),
    ],
)
def test_poll_fn_return_value_sets_delay_until_next_poll(returned, delay):
    # The poll core decides the next wake-up from what the poll function returned.
    core: PollCore[Any] = PollCore(7.0, recover=list)
    entry = PollEntry(Future(), "task-1")
    core.arrive(entry, 100.0)
    core.admit()
    assert core.begin_round(100.0)
    batch = core.next_batch(100.0)
    assert batch == [entry]
    core.lending(batch)
    core.returned(batch, returned)
    assert core.next_batch(100.0) is None
    core.end_round(100.0)

    assert core.wait_timeout(100.0) == (None if delay == math.inf else delay)


def test_poll_fn_returning_bad_value_warns_once_per_executor(make, caplog):
    polled = threading.Semaphore(0)

    def poll(descriptors: list[PollDescriptor[Any]]) -> object:
        polled.release()
        return "soon"

    with caplog.at_level(logging.WARNING, logger="fluent_executors.poll"):
        executor = make(poll, default_interval=0.0)
        future = executor.submit(identity, "task-1")
        for _ in range(3):
            assert polled.acquire(timeout=TIMEOUT)
        future.cancel()

    warnings = [r for r in caplog.records if "not a number of seconds" in r.message]
    assert len(warnings) == 1
    assert "'soon'" in warnings[0].getMessage()


def test_poll_fn_returning_inf_waits_for_notify(make):
    remote = Remote(delay=math.inf)
    executor = make(remote, default_interval=0.0)
    executor.submit(identity, "task-1")
    assert remote.next_batch() == ["task-1"]
    assert remote.batches.empty()

    executor.notify()

    assert remote.next_batch() == ["task-1"]


def test_poll_fn_returning_inf_waits_for_new_future(make):
    remote = Remote(delay=math.inf)
    executor = make(remote, default_interval=0.0)
    executor.submit(identity, "task-1")
    assert remote.next_batch() == ["task-1"]

    executor.submit(identity, "task-2")

    assert remote.next_batch() == ["task-1", "task-2"]


# 1e10 and inf: beyond threading.TIMEOUT_MAX, which must not kill the poll thread.
@pytest.mark.parametrize("delay", [3600.0, 1e10, math.inf])
def test_notify_polls_before_the_scheduled_time(make, delay):
    remote = Remote(delay=delay)
    executor = make(remote)
    future = executor.submit(identity, "task-1")
    remote.next_batch()
    remote.finish("task-1")

    executor.notify()

    assert future.result(timeout=TIMEOUT) == "task-1"


def test_delegate_callable_raises_fails_future_with_same_exception_unpolled(make):
    remote = Remote()
    error = OSError("publish failed")

    def publish() -> None:
        raise error

    executor = make(remote)

    future = executor.submit(publish)

    assert future.exception(timeout=TIMEOUT) is error
    assert error.__traceback__ is not None
    assert remote.batches.empty()


def test_delegate_future_cancelled_cancels_executor_future(make):
    class CancellingDelegate(Executor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
            future: Future[Any] = Future()
            future.cancel()
            return future

    executor = make(Remote(), delegate=CancellingDelegate())

    assert executor.submit(identity, 1).cancelled()


def test_shutdown_refuses_new_submits(make):
    executor = make(Remote())
    executor.shutdown()

    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(identity, 1)


def test_shutdown_shuts_down_delegate_with_same_arguments(make):
    calls: list[tuple[bool, bool]] = []

    class RecordingDelegate(ThreadPoolExecutor):
        def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
            calls.append((wait, cancel_futures))
            super().shutdown(wait, cancel_futures=cancel_futures)

    executor = make(Remote(), delegate=RecordingDelegate(1))

    executor.shutdown(wait=False, cancel_futures=True)

    assert calls == [(False, True)]


def test_shutdown_delegate_without_cancel_futures_parameter_still_works(make):
    calls: list[bool] = []

    class OldDelegate(Executor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
            raise NotImplementedError

        def shutdown(self, wait=True):  # type: ignore[no-untyped-def,override]
            calls.append(wait)

    executor = make(Remote(), delegate=OldDelegate())

    executor.shutdown(wait=True, cancel_futures=True)

    assert calls == [True]


def test_shutdown_keeps_polling_until_every_future_is_resolved(make):
    remote = Remote(delay=0.0)
    executor = make(remote)
    future = executor.submit(identity, "task-1")
    returned = threading.Event()

    def shut_down() -> None:
        executor.shutdown(wait=True)
        returned.set()

    stopper = threading.Thread(target=shut_down)
    stopper.start()
    assert not returned.wait(0.2)  # still polling: wait=True blocks

    remote.finish("task-1")

    assert returned.wait(TIMEOUT)
    assert future.result() == "task-1"
    stopper.join()


def test_shutdown_without_wait_returns_and_polling_goes_on(make):
    remote = Remote(delay=0.0)
    executor = make(remote)
    future = executor.submit(identity, "task-1")

    executor.shutdown(wait=False)
    remote.finish("task-1")

    assert future.result(timeout=TIMEOUT) == "task-1"


def test_shutdown_cancel_futures_cancels_queued_polled_and_running_futures(make):
    remote = Remote(delay=math.inf)
    gate = Gate()
    cancelled_tasks: list[Any] = []
    executor = make(
        remote,
        delegate=ThreadPoolExecutor(1),
        cancel_fn=lambda task: cancelled_tasks.append(task) or True,
    )
    polled = executor.submit(identity, "task-1")
    remote.next_batch()
    running = executor.submit(gate, "task-2")
    assert gate.started.wait(TIMEOUT)
    queued = executor.submit(identity, "task-3")

    stopper = threading.Thread(
        target=executor.shutdown, kwargs={"cancel_futures": True}
    )
    stopper.start()
    assert not wait([queued, polled], timeout=TIMEOUT).not_done
    assert polled.cancelled()
    assert not running.done()  # running on the delegate: cancelled once it is polled
    gate.release.set()
    stopper.join(TIMEOUT)

    assert not stopper.is_alive()
    assert queued.cancelled()
    assert running.cancelled()
    assert cancelled_tasks == ["task-1", "task-2"]


def test_shutdown_cancel_futures_without_cancel_fn_cancels_polled_futures(make):
    remote = Remote(delay=math.inf)
    executor = make(remote)
    future = executor.submit(identity, "task-1")
    remote.next_batch()

    executor.shutdown(wait=True, cancel_futures=True)

    assert future.cancelled()


def test_cancel_without_cancel_fn_cancels_a_polled_future_locally(make):
    remote = Remote(delay=math.inf)
    executor = make(remote)
    future = executor.submit(identity, "task-1")
    remote.next_batch()

    assert future.cancel()  # nothing remote to cancel: as in more-executors

    assert future.cancelled()
    assert len(executor._poller._outstanding) == 0
    executor.shutdown(wait=True)


def test_a_timeout_ends_a_polled_future_without_cancel_fn_and_with_exits():
    polled = threading.Event()

    def poll_forever(descriptors):
        polled.set()
        return 0.01

    with (
        Executors.thread_pool(max_workers=1)
        .with_poll(poll_forever)
        .with_timeout(0.05) as executor
    ):
        future = executor.submit(identity, "task-1")
        assert polled.wait(TIMEOUT)
        with pytest.raises(CancelledError):
            future.result(timeout=TIMEOUT)
    assert future.cancelled()


class CancelledMeanwhile(Future):
    """A delegate's future that refuses ``cancel()`` and is cancelled right after
    (by another thread): ``done()``, and ``exception()`` raises CancelledError."""

    def cancel(self):
        return False

    def done(self):
        return True

    def exception(self, timeout=None):
        raise CancelledError()


class CancelledMeanwhileExecutor(ThreadPoolExecutor):
    def submit(self, fn, /, *args, **kwargs):
        return CancelledMeanwhile()


def test_cancel_never_raises_when_the_delegate_future_was_cancelled_meanwhile():
    executor = PollExecutor(CancelledMeanwhileExecutor(1), lambda descriptors: None)
    future = executor.submit(identity, 1)

    assert future.cancel()  # the future follows its delegate's: cancelled

    assert future.cancelled()
    executor.shutdown(wait=False)


def test_shutdown_twice_is_harmless(make):
    remote = Remote()
    remote.finish("task-1")
    executor = make(remote)
    future = executor.submit(identity, "task-1")

    executor.shutdown()
    executor.shutdown()
    executor.shutdown(wait=False, cancel_futures=True)

    assert future.result() == "task-1"


def test_shutdown_from_the_poll_fn_does_not_deadlock(executors):
    holder: list[PollExecutor] = []

    def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        holder[0].shutdown(wait=True)
        for descriptor in descriptors:
            descriptor.yield_result()

    executor = PollExecutor(Executors.sync(), poll)
    holder.append(executor)

    assert executor.submit(identity, 1).result(timeout=TIMEOUT) == 1
    holder.clear()


def test_executor_garbage_collected_ends_poll_thread_once_nothing_outstanding():
    descriptors: queue.Queue[PollDescriptor[Any]] = queue.Queue()

    def poll(batch: list[PollDescriptor[Any]]) -> float:
        for descriptor in batch:
            descriptors.put(descriptor)
        return math.inf

    executor = PollExecutor(Executors.sync(), poll, name="collected")
    future = executor.submit(identity, "task-1")
    [thread] = [t for t in threading.enumerate() if t.name.endswith("-collected")]
    del executor
    gc.collect()

    descriptors.get(timeout=TIMEOUT).yield_result()  # the last outstanding future

    thread.join(TIMEOUT)
    assert not thread.is_alive()
    assert future.result() == "task-1"


@pytest.mark.parametrize(
    ("kwargs", "error", "argument"),
    [
        ({"delegate": object()}, TypeError, "delegate"),
        ({"poll_fn": "poll"}, TypeError, "poll_fn"),
        ({"cancel_fn": 42}, TypeError, "cancel_fn"),
        ({"default_interval": "5"}, TypeError, "default_interval"),
        ({"default_interval": True}, TypeError, "default_interval"),
        ({"default_interval": -1.0}, ValueError, "default_interval"),
        ({"default_interval": math.nan}, ValueError, "default_interval"),
        ({"name": 3}, TypeError, "name"),
    ],
)
def test_constructor_rejects_bad_argument_naming_it(kwargs, error, argument):
    arguments: dict[str, Any] = {"delegate": Executors.sync(), "poll_fn": Remote()}
    arguments.update(kwargs)

    with pytest.raises(error, match=argument):
        PollExecutor(**arguments)


def test_default_logger_is_fluent_executors_poll(make, caplog):
    def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        raise RuntimeError("boom")

    with caplog.at_level(logging.WARNING):
        executor = make(poll)
        executor.submit(identity, 1).exception(timeout=TIMEOUT)

    [record] = caplog.records
    assert record.name == "fluent_executors.poll"
    assert record.levelno == logging.WARNING
    assert record.exc_info is not None


def test_given_logger_receives_the_messages(make, caplog):
    def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        raise RuntimeError("boom")

    with caplog.at_level(logging.WARNING):
        executor = make(poll, logger=logging.getLogger("my.app"))
        executor.submit(identity, 1).exception(timeout=TIMEOUT)

    assert [r.name for r in caplog.records] == ["my.app"]


def test_new_future_wakes_idle_poll_thread_at_once(make):
    remote = Remote(delay=3600.0)
    executor = make(remote, default_interval=3600.0)
    remote.finish("task-1")
    assert executor.submit(identity, "task-1").result(timeout=TIMEOUT) == "task-1"
    remote.next_batch()

    remote.finish("task-2")  # before it is submitted: it may be polled at once
    later = executor.submit(identity, "task-2")  # nothing polled: polled at once

    assert later.result(timeout=TIMEOUT) == "task-2"


def test_burst_of_new_futures_is_coalesced_into_one_poll(make):
    in_first_poll = threading.Event()
    release = threading.Event()
    sizes: list[int] = []

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        sizes.append(len(descriptors))
        if len(sizes) == 1:
            in_first_poll.set()
            assert release.wait(TIMEOUT)
            return 0.0  # the poll is due at once, but after the burst
        for descriptor in descriptors:
            descriptor.yield_result()
        return 0.0

    executor = make(poll)
    first = executor.submit(identity, 0)
    assert in_first_poll.wait(TIMEOUT)
    burst = [executor.submit(identity, i) for i in range(1, 101)]
    release.set()

    wait([first, *burst], timeout=TIMEOUT)
    assert sizes == [1, 101]


def test_poll_thread_is_a_daemon_named_after_executor_started_at_first_submit(make):
    remote = Remote(delay=math.inf)
    executor = make(remote, name="publisher")
    assert not [t for t in threading.enumerate() if t.name.endswith("-publisher")]

    executor.submit(identity, "task-1")

    [thread] = [t for t in threading.enumerate() if t.name.endswith("-publisher")]
    assert thread.name == "fluent-executors-poll-publisher"
    assert thread.daemon


def test_poll_thread_ends_after_shutdown_once_idle(make):
    remote = Remote()
    remote.finish("task-1")
    executor = make(remote, name="ending")
    executor.submit(identity, "task-1").result(timeout=TIMEOUT)
    [thread] = [t for t in threading.enumerate() if t.name.endswith("-ending")]

    executor.shutdown(wait=True)

    assert not thread.is_alive()


def test_cancel_fn_any_truthy_value_allows_cancel(make):
    remote = Remote(delay=math.inf)
    executor = make(remote, cancel_fn=lambda task: "deleted")
    future = executor.submit(identity, "task-1")
    remote.next_batch()

    assert future.cancel()


def test_cancel_fn_called_once_per_successful_cancel_never_for_done_future(make):
    remote = Remote(delay=math.inf)
    calls: list[Any] = []
    executor = make(remote, cancel_fn=lambda task: calls.append(task) or True)
    future = executor.submit(identity, "task-1")
    remote.next_batch()
    remote.finish("task-2")
    done = executor.submit(identity, "task-2")
    assert done.result(timeout=TIMEOUT) == "task-2"

    assert future.cancel()
    assert future.cancel()
    assert not done.cancel()

    assert calls == ["task-1"]


def test_cancel_fn_not_called_for_future_whose_delegate_failed(make):
    calls: list[Any] = []

    def publish() -> None:
        raise OSError("publish failed")

    executor = make(Remote(), cancel_fn=lambda task: calls.append(task) or True)
    future = executor.submit(publish)

    assert not future.cancel()
    assert calls == []


def test_yield_exception_attaches_the_given_traceback(make):
    try:
        raise ValueError("with a traceback")
    except ValueError as caught:
        traceback = caught.__traceback__
    error = ValueError("remote")

    executor = make(
        lambda ds: [d.yield_exception(error, traceback) for d in ds] and None
    )
    future = executor.submit(identity, 1)

    assert future.exception(timeout=TIMEOUT) is error
    assert error.__traceback__ is traceback


def test_yield_exception_rejects_a_non_exception():
    descriptor: PollDescriptor[int] = PollDescriptor(None, 1)  # type: ignore[arg-type]

    with pytest.raises(TypeError, match="exception"):
        descriptor.yield_exception("failed")  # type: ignore[arg-type]


# -- the rest of the standard future API --------------------------------------------


def test_futures_work_with_as_completed_wait_and_timeouts(make):
    remote = Remote(delay=0.0)
    executor = make(remote)
    futures = [executor.submit(identity, i) for i in range(10)]
    with pytest.raises(FuturesTimeoutError):
        futures[0].result(timeout=0.01)
    with pytest.raises(FuturesTimeoutError):
        futures[0].exception(timeout=0.01)

    for i in range(10):
        remote.finish(i)

    assert sorted(f.result() for f in as_completed(futures, timeout=TIMEOUT)) == list(
        range(10)
    )
    assert not wait(futures, timeout=TIMEOUT).not_done


def test_cancelled_future_is_seen_by_as_completed(make):
    remote = Remote(delay=math.inf)
    executor = make(remote, cancel_fn=lambda task: True)
    future = executor.submit(identity, "task-1")
    remote.next_batch()
    waiter = threading.Thread(target=lambda: list(as_completed([future], TIMEOUT)))
    waiter.start()

    future.cancel()

    waiter.join(TIMEOUT)
    assert not waiter.is_alive()
    with pytest.raises(CancelledError):
        future.result()


def test_running_while_on_delegate_not_while_polled_or_done(make):
    remote = Remote(delay=math.inf)
    gate = Gate()
    executor = make(remote, delegate=ThreadPoolExecutor(1))
    future = executor.submit(gate, "task-1")
    assert gate.started.wait(TIMEOUT)
    assert future.running()
    gate.release.set()
    remote.next_batch()
    assert not future.running()  # it can still be cancelled: as in more-executors

    remote.finish("task-1")
    executor.notify()
    future.result(timeout=TIMEOUT)

    assert not future.running()


def test_done_callback_that_raises_does_not_break_polling(make, caplog):
    remote = Remote()
    remote.finish(1)
    remote.finish(2)
    executor = make(remote)
    first = executor.submit(identity, 1)
    first.add_done_callback(lambda f: 1 / 0)

    assert executor.submit(identity, 2).result(timeout=TIMEOUT) == 2
    assert first.result(timeout=TIMEOUT) == 1


@pytest.mark.parametrize("raised", [SystemExit, KeyboardInterrupt])
def test_a_done_callback_raising_base_exception_fails_no_other_future(
    make, caplog, raised
):
    remote = Remote(delay=math.inf)
    executor = make(remote)
    futures = [executor.submit(identity, task) for task in (1, 2, 3)]
    polled: set[Any] = set()
    while polled != {1, 2, 3}:
        polled.update(remote.next_batch())
    futures[0].add_done_callback(lambda f: (_ for _ in ()).throw(raised()))
    for task in (1, 2, 3):
        remote.finish(task)

    executor.notify()  # one poll resolves the three; the first callback raises

    assert [f.result(timeout=TIMEOUT) for f in futures] == [1, 2, 3]
    assert any(r.exc_info and r.exc_info[0] is raised for r in caplog.records)
    remote.finish(4)
    assert executor.submit(identity, 4).result(timeout=TIMEOUT) == 4  # still polls


def test_delegate_submit_raising_propagates_to_caller_and_leaves_nothing(make):
    class BrokenDelegate(Executor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
            raise RuntimeError("cannot submit")

    executor = make(Remote(), delegate=BrokenDelegate())

    with pytest.raises(RuntimeError, match="cannot submit"):
        executor.submit(identity, 1)
    assert len(executor._poller._outstanding) == 0


def test_submit_rejects_non_callable(make):
    executor = make(Remote())

    with pytest.raises(TypeError, match="fn must be callable"):
        executor.submit("not callable")


def test_many_futures_resolved_in_random_order_all_end(make):
    remote = Remote(delay=0.0)
    executor = make(remote, delegate=ThreadPoolExecutor(4))
    futures = [executor.submit(identity, i) for i in range(2000)]
    for i in reversed(range(2000)):
        remote.finish(i)

    assert [f.result(timeout=TIMEOUT) for f in futures] == list(range(2000))


def test_a_cancel_function_raising_exit_in_a_library_thread_is_contained(caplog):
    polled = threading.Event()
    refused = threading.Event()
    logged = threading.Event()  # the record of the SystemExit, from the worker

    class Logged(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.exc_info and record.exc_info[0] is SystemExit:
                logged.set()

    handler = Logged()
    logging.getLogger("fluent_executors").addHandler(handler)

    def poll(descriptors):
        polled.set()
        return 0.01

    def cancel_fn(result):
        if not refused.is_set():
            refused.set()
            raise SystemExit("cancel function exits")
        return True

    executor = (
        Executors.thread_pool(max_workers=1)
        .with_poll(poll, cancel_fn)
        .with_timeout(0.05)
    )
    future = executor.submit(identity, "task-1")
    assert polled.wait(TIMEOUT)
    assert refused.wait(TIMEOUT)  # the timeout's cancel, in a scheduler worker
    later = threading.Event()
    call_later(0.01, later.set)

    assert later.wait(TIMEOUT)  # the scheduler still serves other timers
    assert not future.done()  # the cancel was refused: it is still polled
    try:
        assert logged.wait(TIMEOUT)  # logged by the worker, which goes on
    finally:
        logging.getLogger("fluent_executors").removeHandler(handler)
    executor.shutdown(wait=True, cancel_futures=True)
    assert future.cancelled()


def test_a_cancel_function_raising_keyboard_interrupt_in_a_users_thread_propagates(
    make,
):
    interrupting = [True]

    def cancel_fn(result):
        if interrupting[0]:
            raise KeyboardInterrupt
        return True

    remote = Remote(delay=math.inf)
    executor = make(remote, cancel_fn=cancel_fn)
    future = executor.submit(identity, "task-1")
    remote.next_batch()

    with pytest.raises(KeyboardInterrupt):
        future.cancel()
    assert not future.done()
    interrupting[0] = False  # the executors fixture cancels what is left


def test_the_collector_may_close_a_poll_executor_inside_its_own_locks() -> None:
    # A finalizer runs wherever the garbage collector does: here, in a thread that
    # holds the poll thread's lock and the outstanding futures' lock.
    class Cycle:
        pass

    executor = PollExecutor(Executors.sync(), lambda batch: None, name="in-a-cycle")
    poller = executor._poller
    cycle = Cycle()
    cycle.__dict__.update(executor=executor, me=cycle)  # freed by the collector only
    del executor, cycle
    collected = threading.Event()

    def collect_inside_the_locks() -> None:
        with poller._lock, poller._outstanding._lock:
            gc.collect()
        collected.set()

    threading.Thread(target=collect_inside_the_locks, daemon=True).start()

    assert collected.wait(TIMEOUT)
    assert poller._outstanding.closed
