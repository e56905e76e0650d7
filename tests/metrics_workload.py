"""A known workload and the exact metrics it records, for tests/test_metrics.py.

Run in the test process (read through Prometheus) and in a subprocess (read through
an OpenTelemetry in-memory reader); the executors' names start with a prefix unique
to the run, so the figures are exact whatever else the process recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

from fluent_executors import Executors, PollDescriptor
from fluent_executors.testing import virtual_time

FAILING = (200, 201, 202)  # the tasks that raise, on every attempt
CANCELLED = (100, 101)  # the tasks cancelled while queued
SUCCEEDING = tuple(range(10))  # task 0 holds the one worker until released

# What the workload records, by executor (kind, name suffix) and measure. A measure
# that an executor does not record at all (Prometheus: no series; OpenTelemetry: no
# data point) reads as 0.
EXPECTED: dict[tuple[str, str], dict[str, float]] = {
    # thread_pool(1).with_poll(...).with_retry(max_attempts=2, sleep=0): 15 submits,
    # 10 succeed, 3 fail twice (a retry each), 2 are cancelled in the pool's queue.
    ("threadpool", ""): {
        "executors_created": 1,
        "executors_in_use": 0,
        "futures_created": 18,
        "futures_in_progress": 0,
        "futures_cancelled": 2,
        "futures_failed": 6,
        "future_duration_count": 18,
    },
    ("poll", ""): {
        "executors_created": 1,
        "executors_in_use": 0,
        "futures_created": 18,
        "futures_in_progress": 0,
        "futures_cancelled": 2,
        "futures_failed": 6,
        "future_duration_count": 18,
        "poll_errors": 0,
    },
    ("retry", ""): {
        "executors_created": 1,
        "executors_in_use": 0,
        "futures_created": 15,
        "futures_in_progress": 0,
        "futures_cancelled": 2,
        "futures_failed": 3,
        "future_duration_count": 15,
        "retry_attempts": 3,
    },
    # sync().with_poll(a poll function that raises): one future, one poll, failed.
    ("sync", "-poll-error"): {
        "executors_created": 1,
        "executors_in_use": 0,
        "futures_created": 1,
        "futures_failed": 0,
    },
    ("poll", "-poll-error"): {
        "executors_created": 1,
        "executors_in_use": 0,
        "futures_created": 1,
        "futures_failed": 1,
        "poll_calls": 1,
        "poll_errors": 1,
        "poll_duration_count": 1,
    },
    # thread_pool(1).with_throttle(1): one running, three queued, one of them
    # cancelled there.
    ("threadpool", "-throttle"): {
        "futures_created": 3,
        "futures_cancelled": 0,
    },
    ("throttle", "-throttle"): {
        "executors_created": 1,
        "executors_in_use": 0,
        "futures_created": 4,
        "futures_in_progress": 0,
        "futures_cancelled": 1,
        "throttle_queue_length": 0,
    },
    # thread_pool(1).with_timeout(0.05): both timeouts fire; the running future
    # refuses the cancel, the queued one is cancelled.
    ("threadpool", "-timeout"): {
        "futures_created": 2,
        "futures_cancelled": 1,
    },
    ("timeout", "-timeout"): {
        "executors_created": 1,
        "executors_in_use": 0,
        "futures_created": 2,
        "futures_in_progress": 0,
        "futures_cancelled": 1,
        "timeouts": 2,
    },
}

# Read while three callables wait in the throttle's queue.
EXPECTED_AT_QUEUE_FULL: dict[tuple[str, str], dict[str, float]] = {
    ("throttle", "-throttle"): {
        "throttle_queue_length": 3,
        "executors_in_use": 1,
        "futures_in_progress": 4,
    },
}


def wait_recorded(futures: Iterable[Future[Any]]) -> None:
    """Wait until every future is done and has run the done callbacks added before
    this call, the metrics' among them (``wait()`` may return before those run)."""
    events = []
    for future in futures:
        event = threading.Event()
        future.add_done_callback(lambda _, event=event: event.set())
        events.append(event)
    for event in events:
        assert event.wait(timeout=30), "a future of the workload never resolved"


def _poll_all(descriptors: list[PollDescriptor[Any]]) -> float:
    for descriptor in descriptors:
        descriptor.yield_result()
    return 0.01


def _poll_raises(descriptors: list[PollDescriptor[Any]]) -> float:
    raise OSError("the task service is down")


def _chain(prefix: str) -> Any:
    release = threading.Event()

    def task(i: int) -> int:
        if i == 0:
            release.wait(timeout=30)
        if i in FAILING:
            raise ValueError(i)
        return i

    executor = (
        Executors.thread_pool(1, name=prefix)
        .with_poll(_poll_all, default_interval=0.01)
        .with_retry(max_attempts=2, sleep=0)
    )
    with executor:
        first = executor.submit(task, 0)  # the worker waits for release
        cancelled = [executor.submit(task, i) for i in CANCELLED]
        assert all(future.cancel() for future in cancelled)
        release.set()
        rest = [executor.submit(task, i) for i in SUCCEEDING[1:] + FAILING]
        wait_recorded([first, *cancelled, *rest])
    return executor


def _poll_error(prefix: str) -> Any:
    with Executors.sync(name=f"{prefix}-poll-error").with_poll(_poll_raises) as ex:
        wait_recorded([ex.submit(int, "1")])
    return ex


def _throttle(prefix: str, on_queue_full: Callable[[], None]) -> Any:
    release = threading.Event()
    executor = Executors.thread_pool(1, name=f"{prefix}-throttle").with_throttle(1)
    with executor:
        running = executor.submit(release.wait, 30)
        queued = [executor.submit(int, "1") for _ in range(3)]
        on_queue_full()
        assert queued[-1].cancel()
        release.set()
        wait_recorded([running, *queued])
    return executor


def _timeout(prefix: str) -> Any:
    started, release = threading.Event(), threading.Event()

    def run_until_released() -> bool:
        started.set()
        return release.wait(30)

    # On the virtual clock: the timeouts fire once the first call has started,
    # however long a loaded machine takes to start it.
    with virtual_time() as clock:
        executor = Executors.thread_pool(1, name=f"{prefix}-timeout").with_timeout(0.05)
        with executor:
            running = executor.submit(run_until_released)
            queued = executor.submit(int, "1")
            assert started.wait(30)
            clock.advance(0.05)  # both timeouts fire: running refuses the cancel
            wait_recorded([queued])  # cancelled by its timeout
            release.set()
            wait_recorded([running])
    return executor


def run(
    prefix: str, on_queue_full: Callable[[], None] = lambda: None
) -> dict[tuple[str, str], Any]:
    """Run the workload with executors named ``prefix`` + the suffixes of
    :data:`EXPECTED`; ``on_queue_full`` is called while the throttle's queue holds
    three callables.

    Returns:
        The ``stats()`` of every executor of the workload, by kind and suffix.
    """
    stats = {}
    chains = [
        _chain(prefix),
        _poll_error(prefix),
        _throttle(prefix, on_queue_full),
        _timeout(prefix),
    ]
    for executor in chains:
        while executor is not None:
            snapshot = executor.stats()
            stats[snapshot.kind, snapshot.name.removeprefix(prefix)] = snapshot
            executor = getattr(executor, "delegate", None)
    return stats
