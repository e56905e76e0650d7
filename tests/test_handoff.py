"""A poll, map or flat-map future over the library's thread pool, called directly,
follows a Handoff, not a future of the pool (src/_fluent_executors/handoff.py):
what a pool future did for it, the handoff does. Each test runs in either mode; in
the portable mode the pool takes the standard submit and the follower follows its
future."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import CancelledError, thread
from typing import Any
from unittest import mock

import pytest
from wrapper_doubles import TIMEOUT

from _fluent_executors import metrics as _metrics
from _fluent_executors.handoff import Handoff
from _fluent_executors.stdlib_compat import OWN_POOL_ITEMS
from _fluent_executors.work_item import WorkItem
from fluent_executors import Executors, ThreadPoolExecutor, f_return


def release_all(descriptors: list[Any]) -> float:
    for descriptor in descriptors:
        descriptor.yield_result(descriptor.result)
    return 0.01


def identity(value: Any) -> Any:
    return value


@pytest.fixture(params=["poll", "map", "flat_map"])
def layer(request: pytest.FixtureRequest) -> str:
    """The kind of the follower's executor."""
    kind: str = request.param
    return kind


def wrap(pool: ThreadPoolExecutor, layer: str) -> Any:
    """The executor of ``layer`` on ``pool``, whose futures follow the pool's."""
    if layer == "poll":
        return pool.with_poll(release_all)
    if layer == "flat_map":
        return pool.with_flat_map(f_return)
    return pool.with_map(identity)


def blocked_pool(name: str) -> tuple[ThreadPoolExecutor, threading.Event, Any]:
    """A pool of one worker, busy until the event is set."""
    pool = Executors.thread_pool(1, name=name)
    release = threading.Event()
    started = threading.Event()

    def block() -> None:
        started.set()
        release.wait(TIMEOUT)

    blocker = pool.submit(block)
    assert started.wait(TIMEOUT)
    return pool, release, blocker


def test_the_follower_follows_a_handoff_and_the_pool_counts_the_call(
    layer: str,
) -> None:
    pool, release, _ = blocked_pool("handoff-stats")
    with wrap(pool, layer) as executor:
        future = executor.submit(pow, 2, 10)
        queued = future._upstream
        assert isinstance(queued, Handoff) == OWN_POOL_ITEMS
        if OWN_POOL_ITEMS:  # the pool's work item, its own future: one object
            assert isinstance(queued, WorkItem)
            assert queued.future is queued
        assert not future.running()
        release.set()
        assert future.result(TIMEOUT) == 1024
        failing = executor.submit(int, "x")
        assert isinstance(failing.exception(TIMEOUT), ValueError)
    stats = pool.stats()
    assert (stats.submitted, stats.done, stats.failed, stats.cancelled) == (3, 3, 1, 0)
    assert executor.stats().failed == 1


def test_a_queued_call_is_cancelled_with_its_follower_and_never_runs(
    layer: str,
) -> None:
    pool, release, _ = blocked_pool("handoff-cancel")
    ran: list[int] = []
    with wrap(pool, layer) as executor:
        future = executor.submit(ran.append, 1)
        assert future.cancel()
        assert future.cancelled()
        with pytest.raises(CancelledError):
            future.result(TIMEOUT)
        release.set()
        assert executor.submit(ran.append, 2).result(TIMEOUT) is None
    assert ran == [2]
    stats = pool.stats()
    assert (stats.submitted, stats.done, stats.cancelled) == (3, 3, 1)


def test_a_running_call_refuses_the_cancel_and_reads_as_running(layer: str) -> None:
    started, release = threading.Event(), threading.Event()

    def task() -> int:
        started.set()
        release.wait(TIMEOUT)
        return 5

    with wrap(Executors.thread_pool(1), layer) as executor:
        future = executor.submit(task)
        assert started.wait(TIMEOUT)
        assert future.running()
        assert not future.cancel()
        release.set()
        assert future.result(TIMEOUT) == 5
        assert not future.running()


def test_a_pool_shut_down_with_cancel_futures_cancels_the_queued_followers(
    layer: str,
) -> None:
    pool, release, blocker = blocked_pool("handoff-shutdown")
    executor = wrap(pool, layer)
    queued = [executor.submit(pow, 2, n) for n in range(3)]
    pool.shutdown(wait=False, cancel_futures=True)
    for future in queued:
        with pytest.raises(CancelledError):
            future.result(TIMEOUT)
    release.set()
    blocker.result(TIMEOUT)
    executor.shutdown()
    assert executor.stats().cancelled == 3
    assert pool.stats().cancelled == 3


def test_a_failed_initializer_fails_the_followers_queued(layer: str) -> None:
    def initializer() -> None:
        raise ValueError("no")

    with mock.patch.object(thread._base.LOGGER, "critical"):  # the standard log
        pool = Executors.thread_pool(1, initializer=initializer)
        with wrap(pool, layer) as executor:
            future = executor.submit(pow, 2, 3)
            assert isinstance(future.exception(TIMEOUT), thread.BrokenThreadPool)
            with pytest.raises(thread.BrokenThreadPool):
                executor.submit(pow, 2, 3)
    # The second submit raised: a poll future counts it as failed, a (flat) map as
    # none.
    assert executor.stats().failed == (2 if layer == "poll" else 1)


@pytest.mark.skipif(
    "prometheus" not in _metrics.BACKENDS, reason="needs the prometheus extra"
)
def test_the_pool_records_the_metrics_of_a_call_run_for_a_follower(layer: str) -> None:
    import prometheus_client

    name = f"handoff-metrics-{uuid.uuid4().hex[:12]}"
    labels = {"type": "threadpool", "executor": name}

    def sample(measure: str) -> float | None:
        return prometheus_client.REGISTRY.get_sample_value(
            f"fluent_executors_{measure}", labels
        )

    pool = Executors.thread_pool(2, name=name)
    with wrap(pool, layer) as executor:
        assert executor.submit(pow, 3, 2).result(TIMEOUT) == 9
        assert isinstance(executor.submit(int, "x").exception(TIMEOUT), ValueError)
    assert sample("futures_created_total") == 2
    assert sample("futures_failed_total") == 1
    assert sample("future_duration_seconds_count") == 2


def test_a_submit_whose_pool_starts_no_worker_fails_and_the_next_runs(
    layer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = threading.Thread.start
    refusing = [True]

    def refusing_start(thread_: threading.Thread) -> None:
        if refusing[0] and thread_.name.startswith("fluent-executors-nothreads"):
            raise RuntimeError("can't start new thread")
        start(thread_)

    monkeypatch.setattr(threading.Thread, "start", refusing_start)
    pool = Executors.thread_pool(1, name="nothreads")
    with wrap(pool, layer) as executor:
        with pytest.raises(RuntimeError, match="can't start new thread"):
            executor.submit(pow, 2, 3)
        stats = executor.stats()
        # A poll future counts as failed; a (flat) map submit that raised, as none.
        expected = (1, 1, 0) if layer == "poll" else (0, 0, 0)
        assert (stats.submitted, stats.failed, stats.cancelled) == expected
        assert pool.stats().submitted == 0
        refusing[0] = False
        assert executor.submit(pow, 2, 4).result(TIMEOUT) == 16
    assert pool.stats().submitted == 1


def test_a_follower_that_raises_is_logged_and_the_worker_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A bug of the follower's _on_upstream_done, which the handoff calls directly:
    # contained, as a done callback is, so the pool's worker serves the next call.
    from _fluent_executors.poll.descriptor import PollFuture

    original = PollFuture._on_upstream_done
    first = threading.Event()

    def broken_once(self: PollFuture[Any], upstream: Any) -> None:
        if not first.is_set():
            first.set()
            raise RuntimeError("a bug of the follower")
        original(self, upstream)

    monkeypatch.setattr(PollFuture, "_on_upstream_done", broken_once)
    with Executors.thread_pool(1).with_poll(release_all) as executor:
        lost = executor.submit(pow, 2, 1)
        assert first.wait(TIMEOUT)
        assert executor.submit(pow, 2, 3).result(TIMEOUT) == 8
        assert lost.cancel()  # polled never: nothing remote to cancel
    assert "a bug of the follower" in caplog.text


def test_a_map_future_whose_function_raises_fails_and_the_worker_goes_on() -> None:
    def fragile(value: int) -> int:
        if value == 1:
            raise KeyError("the mapping function's own error")
        return value

    pool, release, _ = blocked_pool("handoff-map-raises")
    with pool.with_map(fragile) as executor:
        failing = executor.submit(pow, 1, 1)
        assert isinstance(failing._upstream, Handoff) == OWN_POOL_ITEMS
        release.set()
        assert isinstance(failing.exception(TIMEOUT), KeyError)
        assert executor.submit(pow, 2, 3).result(TIMEOUT) == 8
    assert (executor.stats().done, executor.stats().failed) == (2, 1)
    assert (pool.stats().done, pool.stats().failed) == (3, 0)


def test_a_map_over_another_delegate_shares_the_lock_of_its_future() -> None:
    # Only the library's pool, called directly, runs a call for a map future; over
    # a wrapper the map future follows the wrapper's future, and shares its lock.
    gate = threading.Event()
    with Executors.thread_pool(1) as pool:
        blocker = pool.submit(gate.wait)
        future: Any = pool.with_retry().with_map(identity).submit(pow, 2, 2)
        assert not isinstance(future._upstream, Handoff)
        assert future._lock is future._upstream._lock
        gate.set()
        assert future.result(TIMEOUT) == 4
        assert blocker.result(TIMEOUT) is True
