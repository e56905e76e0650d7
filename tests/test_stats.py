"""executor.stats(): what each kind of executor counts as pending and running, and
the counts of its own kind (docs/metrics.rst, "Stats"). The contract every executor
and chain meets (settled counts, invariants) is in test_contract.py."""

from __future__ import annotations

import asyncio
import dataclasses
import queue
import threading
from concurrent.futures import CancelledError, wait
from typing import Any

import pytest
from wrapper_doubles import TIMEOUT, raise_

from fluent_executors import (
    Executors,
    ExecutorStats,
    PollDescriptor,
    PollStats,
    QueueStats,
    RetryStats,
    TimeoutStats,
)
from fluent_executors.testing import ManualExecutor


class Stop(BaseException):
    """A BaseException that is not an Exception: propagates out of a sync submit."""


def test_a_snapshot_is_frozen_and_does_not_change_with_the_executor() -> None:
    with Executors.sync(name="frozen") as executor:
        before = executor.stats()
        executor.submit(abs, -1)

        with pytest.raises(dataclasses.FrozenInstanceError):
            before.done = 1  # type: ignore[misc]
        assert dataclasses.astuple(before) == ("sync", "frozen", 0, 0, 0, 0, 0, 0)
        assert executor.stats().done == 1
        assert executor.stats().succeeded == 1


def test_a_thread_pool_counts_the_callables_its_workers_run_and_those_queued() -> None:
    gate = threading.Event()
    started = threading.Semaphore(0)

    def blocker() -> None:
        started.release()
        gate.wait(TIMEOUT)

    with Executors.thread_pool(max_workers=2) as pool:
        blockers = [pool.submit(blocker) for _ in range(2)]
        for _ in blockers:
            assert started.acquire(timeout=TIMEOUT)
        queued = [pool.submit(abs, -n) for n in range(3)]
        assert queued[0].cancel()

        busy = pool.stats()
        gate.set()
        wait(blockers + queued, timeout=TIMEOUT)

    assert (busy.running, busy.pending, busy.cancelled, busy.done) == (2, 2, 1, 1)
    after = pool.stats()
    assert (after.submitted, after.done, after.in_progress) == (5, 5, 0)


def test_a_sync_executor_counts_a_call_as_running_during_submit() -> None:
    executor = Executors.sync()
    during: list[ExecutorStats] = []

    executor.submit(lambda: during.append(executor.stats()))
    failed = executor.submit(raise_, ValueError("failed"))
    with pytest.raises(Stop):
        executor.submit(raise_, Stop())

    assert (during[0].submitted, during[0].running, during[0].done) == (1, 1, 0)
    assert failed.exception(timeout=0) is not None
    stats = executor.stats()
    assert (stats.submitted, stats.done, stats.failed, stats.running) == (3, 3, 2, 0)


def test_a_retry_executor_counts_a_future_waiting_for_its_retry_as_pending() -> None:
    delegate = ManualExecutor()
    executor = Executors.with_retry(delegate, sleep=600.0, max_attempts=3)

    future = executor.submit(raise_, OSError("flaky"))
    delegate.finish(0)  # fails; the policy decides here, in this thread
    waiting = executor.stats()
    assert future.cancel()

    assert isinstance(waiting, RetryStats)
    assert (waiting.pending, waiting.running, waiting.attempts, waiting.retries) == (
        1,
        0,
        1,
        1,
    )
    stats = executor.stats()
    assert (stats.pending, stats.cancelled, stats.done, stats.attempts) == (0, 1, 1, 1)


def test_a_retry_executor_counts_its_attempts_and_retries() -> None:
    with Executors.sync().with_retry(sleep=0.0, max_attempts=3) as executor:
        future = executor.submit(raise_, OSError("always"))
        assert isinstance(future.exception(timeout=TIMEOUT), OSError)

    stats = executor.stats()
    assert (stats.submitted, stats.failed, stats.attempts, stats.retries) == (
        1,
        1,
        3,
        2,
    )
    delegate = executor.delegate.stats()
    assert (delegate.submitted, delegate.failed) == (3, 3)


def test_a_throttle_counts_its_queue_as_pending_and_what_it_passed_on_as_running():
    manual = ManualExecutor()
    executor = Executors.with_throttle(manual, 1)

    futures = [executor.submit(abs, -n) for n in range(3)]
    queued = executor.stats()
    assert futures[2].cancel()
    after_cancel = executor.stats()
    manual.finish(0)
    manual.finish(1)

    assert isinstance(queued, QueueStats)
    assert (queued.running, queued.pending, queued.queued) == (1, 2, 2)
    assert (after_cancel.queued, after_cancel.cancelled) == (1, 1)
    assert wait(futures[:2], timeout=TIMEOUT).not_done == set()
    stats = executor.stats()
    assert (stats.submitted, stats.done, stats.queued, stats.running) == (3, 3, 0, 0)


def test_a_timeout_executor_counts_the_timeouts_that_fired() -> None:
    executor = Executors.with_timeout(ManualExecutor(), 0.01)

    future = executor.submit(abs, -1)

    with pytest.raises(CancelledError):
        future.result(timeout=TIMEOUT)
    stats = executor.stats()
    assert isinstance(stats, TimeoutStats)
    assert (stats.timeouts, stats.cancelled, stats.done) == (1, 1, 1)


def test_a_poll_executor_counts_its_polls_errors_and_the_futures_it_polls() -> None:
    finish = threading.Event()
    counted = threading.Event()  # stats() taken while the future is polled
    calls: queue.SimpleQueue[int] = queue.SimpleQueue()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        calls.put(len(descriptors))
        if calls.qsize() == 1:
            assert counted.wait(TIMEOUT)
            raise OSError("the service is down")
        if finish.is_set():
            for descriptor in descriptors:
                descriptor.yield_result()
        return 0.001

    executor = Executors.sync().with_poll(poll, poll_retry_policy=None)
    with executor:
        future = executor.submit(abs, -1)
        polling = executor.stats()
        counted.set()

    assert isinstance(polling, PollStats)
    assert (polling.polled, polling.running) == (1, 1)
    assert isinstance(future.exception(timeout=TIMEOUT), OSError)
    stats = executor.stats()
    assert (stats.polls, stats.poll_errors, stats.polled, stats.failed) == (1, 1, 0, 1)

    executor = Executors.sync().with_poll(poll)
    with executor:
        futures = [executor.submit(abs, -n) for n in range(2)]
        finish.set()
        assert [f.result(timeout=TIMEOUT) for f in futures] == [0, 1]
    stats = executor.stats()
    assert (stats.polled, stats.done, stats.poll_errors) == (0, 2, 0)
    assert stats.polls >= 1


def test_the_asyncio_executor_counts_its_asyncio_futures() -> None:
    executor = Executors.sync(name="loop").with_asyncio()

    async def main() -> None:
        assert await executor.submit(abs, -1) == 1
        with pytest.raises(ValueError, match="failed"):
            await executor.submit(raise_, ValueError("failed"))
        await asyncio.sleep(0)  # the done callbacks of the futures run

    with executor:
        asyncio.run(main())

    stats = executor.stats()
    assert (stats.kind, stats.name) == ("asyncio", "loop")
    assert (stats.submitted, stats.done, stats.failed, stats.running) == (2, 2, 1, 0)
