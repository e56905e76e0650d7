"""resume() through a chain whose inner layer polls with a store: the futures are
the outermost layer's, each layer around the poll layer treating a resumed
future as one its delegate returned (map maps it, timeout times it, retry passes
it on untried), and a chain that cannot resume says so before claiming
anything."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pytest
from store_doubles import LEASE, Clock
from wrapper_doubles import TIMEOUT

from fluent_executors import (
    Executors,
    PollDescriptor,
    ProxyFuture,
    RetryPolicy,
    SQLiteStore,
)
from fluent_executors.stores import NewRecord, StoredTask


class Service:
    """A poll function whose tasks end as the test says: ``finished`` with their
    id, ``failed`` with a ``ValueError``; each call's ids go on ``calls``."""

    def __init__(self) -> None:
        self.finished: set[str] = set()
        self.failed: set[str] = set()
        self.calls: queue.Queue[list[str]] = queue.Queue()

    def __call__(self, descriptors: list[PollDescriptor[Any]]) -> float:
        self.calls.put([d.result for d in descriptors])
        for descriptor in descriptors:
            if descriptor.result in self.finished:
                descriptor.yield_result(descriptor.result)
            elif descriptor.result in self.failed:
                descriptor.yield_exception(ValueError(descriptor.result))
        return 0.01


class Counting(RetryPolicy):
    """Retries every error at once, and counts how often it was asked."""

    def __init__(self) -> None:
        self.asked = 0

    def should_retry(self, attempt: int, future: Any) -> bool:
        self.asked += 1
        return True

    def sleep_time(self, attempt: int, future: Any) -> float:
        return 0.0


@pytest.fixture
def left(tmp_path: Path) -> Iterator[Any]:
    """Leaves the records of a dead process in an SQLite file, their leases
    run out: ``left("t1", "t2")`` gives the path, and the stores the test opens
    on it are closed at its end."""
    stores: list[SQLiteStore] = []
    clock = Clock()

    def leave(*ids: str) -> SQLiteStore:
        with SQLiteStore(tmp_path / "t.db", clock=clock, owner="dead") as dead:
            dead.add([NewRecord(f"key-{i}", i, label=f"input {i}") for i in ids], LEASE)
        clock.now += LEASE
        store = SQLiteStore(tmp_path / "t.db", clock=clock)
        stores.append(store)
        return store

    yield leave
    for store in stores:
        store.close()


@pytest.fixture
def shutting() -> Iterator[list[Any]]:
    made: list[Any] = []
    yield made
    for executor in made:
        executor.shutdown(wait=True, cancel_futures=True)


def test_a_chain_resumes_with_futures_of_its_outermost_layer(
    left: Any, shutting: list[Any]
) -> None:
    store = left("t1", "t2")
    service = Service()
    service.finished.update({"t1", "t2"})
    chain = (
        Executors.sync()
        .with_poll(service, store=store, lease=LEASE)
        .with_map(str.upper)
        .with_retry()
        .with_timeout(TIMEOUT)
    )
    shutting.append(chain)

    resumed = chain.resume()

    assert sorted((t.key, t.label) for t in resumed.values()) == [
        ("key-t1", "input t1"),
        ("key-t2", "input t2"),
    ]
    for future, task in resumed.items():
        assert isinstance(future, ProxyFuture)
        assert isinstance(task, StoredTask)
        assert future.result(timeout=TIMEOUT) == task.result.upper()  # mapped
    assert chain.stats().submitted == 2  # the timeout layer's futures


def test_a_retry_layer_passes_a_failed_resumed_task_on_untried(
    left: Any, shutting: list[Any]
) -> None:
    store = left("t1")
    service = Service()
    service.failed.add("t1")
    policy = Counting()
    chain = (
        Executors.sync().with_poll(service, store=store, lease=LEASE).with_retry(policy)
    )
    shutting.append(chain)

    ((future, _),) = chain.resume().items()

    assert isinstance(future.exception(timeout=TIMEOUT), ValueError)
    assert policy.asked == 0  # nothing to run again


def test_a_timeout_layer_cancels_a_resumed_task_not_done_in_time(
    left: Any, shutting: list[Any]
) -> None:
    store = left("t1")  # never finishes
    chain = (
        Executors.sync()
        .with_poll(Service(), store=store, lease=LEASE)
        .with_timeout(0.01)
    )
    shutting.append(chain)

    ((future, _),) = chain.resume().items()

    with pytest.raises(CancelledError):
        future.result(timeout=TIMEOUT)


def test_a_chain_without_a_store_refuses_to_resume(shutting: list[Any]) -> None:
    chain = Executors.sync().with_poll(Service()).with_retry()
    shutting.append(chain)

    with pytest.raises(RuntimeError, match="store"):
        chain.resume()


def test_a_layer_that_cannot_pass_a_resumed_future_is_refused_before_any_claim(
    left: Any, shutting: list[Any]
) -> None:
    store = left("t1")
    chain = (
        Executors.sync().with_poll(Service(), store=store, lease=LEASE).with_asyncio()
    )
    shutting.append(chain)

    with pytest.raises(TypeError, match="AsyncioExecutor"):
        chain.resume()

    assert [t.owner for t in store.records()] == ["dead"]  # nothing claimed


def test_a_chain_whose_layer_is_shut_down_refuses_to_resume(left: Any) -> None:
    store = left("t1")
    poll = Executors.sync().with_poll(Service(), store=store, lease=LEASE)
    chain = poll.with_retry()
    chain.shutdown()

    with pytest.raises(RuntimeError, match="shutdown"):
        chain.resume()

    assert [t.owner for t in store.records()] == ["dead"]  # nothing claimed


def test_a_chain_failing_half_way_cancels_its_resumed_futures_and_releases_them(
    left: Any, shutting: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = left("t1", "t2")
    service = Service()
    poll = Executors.sync().with_poll(service, store=store, lease=LEASE)
    chain = poll.with_map(str.upper)
    shutting.append(chain)
    made: list[ProxyFuture[Any]] = []
    resumed = type(chain)._resumed

    def failing_second(self: Any, future: ProxyFuture[Any]) -> ProxyFuture[Any]:
        if made:
            raise KeyboardInterrupt
        made.append(future)
        return resumed(self, future)

    monkeypatch.setattr(type(chain), "_resumed", failing_second)

    with pytest.raises(KeyboardInterrupt):
        chain.resume()

    assert made[0].cancelled()
    assert sorted((t.key, t.owner) for t in store.records()) == [
        ("key-t1", ""),
        ("key-t2", ""),
    ]
    assert poll.stats().cancelled == 2


def test_a_cancel_on_shutdown_layer_cancels_resumed_futures_at_its_shutdown(
    left: Any,
) -> None:
    store = left("t1")  # never finishes
    chain = (
        Executors.sync()
        .with_poll(Service(), store=store, lease=LEASE)
        .with_cancel_on_shutdown()
    )
    ((future, _),) = chain.resume().items()

    chain.shutdown(wait=True)

    assert future.cancelled()


def test_a_throttle_layer_passes_resumed_futures_on_unqueued(
    left: Any, shutting: list[Any]
) -> None:
    store = left("t1", "t2")
    service = Service()
    service.finished.update({"t1", "t2"})
    chain = (
        Executors.sync().with_poll(service, store=store, lease=LEASE).with_throttle(1)
    )
    shutting.append(chain)

    resumed = chain.resume()

    assert sorted(f.result(timeout=TIMEOUT) for f in resumed) == ["t1", "t2"]
