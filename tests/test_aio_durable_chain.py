"""The async ``resume()`` and ``attach()`` through a chain, on both anyio
backends: each layer outside the poll layer acts on their runs as the threaded
``resume()`` has it (tests/test_durable_chain.py): a map maps the result (once),
a timeout counts from the call that made the run, a retry passes a failure on
untried, a throttle or rate limit passes the run on without holding it back.

Time: as in test_aio.py, trio runs on a mock clock, asyncio on durations scaled
down by ``unit``; leases run out by moving the stores' clock. The mock clock
jumps to the next deadline while a store call runs in a worker thread, so a time
limit that must not run out is tried on ``attach()`` without a store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import anyio
import pytest
import test_aio
from store_doubles import LEASE, Clock
from test_aio_store import Service, abandon, start
from test_durable_chain import Counting

from fluent_executors.aio import AsyncExecutor, AsyncExecutors, PollDescriptor
from fluent_executors.stores import SQLiteStore, StoredTask

pytestmark = pytest.mark.anyio

anyio_backend, unit = test_aio.anyio_backend, test_aio.unit


class Failing(Service):
    """A :class:`test_aio_store.Service` whose tasks in ``failed`` fail with a
    ``ValueError``, and whose cancel function keeps the ids it is called with."""

    def __init__(self, interval: float) -> None:
        super().__init__(interval)
        self.failed: set[str] = set()
        self.cancelled: list[str] = []

    def __call__(self, descriptors: list[PollDescriptor[Any]]) -> float:
        for descriptor in descriptors:
            if descriptor.result in self.failed:
                descriptor.yield_exception(ValueError(descriptor.result))
        return super().__call__(descriptors)

    def cancel(self, task_id: str) -> None:
        self.cancelled.append(task_id)


@pytest.fixture
def store_at(tmp_path: Path) -> Iterator[Callable[[], SQLiteStore]]:
    """Opens SQLite stores on one file and one clock (``store_at.clock``), an
    owner each; closed at the end."""
    clock = Clock()
    opened: list[SQLiteStore] = []

    def store_at() -> SQLiteStore:
        opened.append(SQLiteStore(tmp_path / "tasks.db", clock=clock))
        return opened[-1]

    store_at.clock = clock  # type: ignore[attr-defined]
    yield store_at
    for store in opened:
        store.close()


async def left(store_at: Any, unit: float, *ids: str) -> SQLiteStore:
    """The store of a new owner, where an executor that died left ``ids``
    polled, their leases run out."""
    await abandon(store_at(), unit, *ids)
    store_at.clock.now += LEASE + 1
    return store_at()  # type: ignore[no-any-return]


def polled(service: Failing, store: SQLiteStore | None) -> AsyncExecutor[Any]:
    return AsyncExecutors.inline("jobs").with_poll(
        service, service.cancel, store=store, lease=LEASE
    )


async def test_a_chain_resumes_with_runs_of_its_outermost_layer(
    store_at: Any, unit: float
) -> None:
    store = await left(store_at, unit, "a", "b")
    service = Failing(unit)
    service.finished.update({"a", "b"})
    mapped: list[str] = []

    async def exclaim(result: str) -> str:
        mapped.append(result)
        return result + "!"

    chain = polled(service, store).with_map(exclaim).with_retry()
    async with chain:
        resumed = await chain.resume()
        assert all(isinstance(task, StoredTask) for task in resumed.values())
        results = {task.result: await run for run, task in resumed.items()}
        again = [await run for run in resumed]  # the outcome kept

    assert results == {"a": "A!", "b": "B!"}
    assert sorted(again) == ["A!", "B!"]
    assert sorted(mapped) == ["A", "B"]  # each mapped once


async def test_attach_goes_through_the_layers_outside_the_poll_layer(
    unit: float,
) -> None:
    service = Failing(unit)
    service.finished.add("a")
    chain = (
        polled(service, None)
        .with_map(str.lower)
        .with_timeout(1000 * unit)
        .with_map(len)
    )

    async with chain:
        run = chain.attach("a")
        assert await run == 1  # "A", lowered, its length
        assert run.done()


async def test_a_retry_layer_passes_a_failed_resumed_run_on_untried(
    store_at: Any, unit: float
) -> None:
    store = await left(store_at, unit, "a")
    service = Failing(unit)
    service.failed.add("a")
    policy = Counting()
    chain = polled(service, store).with_retry(policy)

    async with chain:
        ((run, _),) = (await chain.resume()).items()
        with pytest.raises(ValueError, match="a"):
            await run
        with pytest.raises(ValueError, match="a"):
            await run  # the same outcome again

    assert policy.asked == 0  # nothing to run again


async def test_a_timeout_counts_from_resume_and_cancels_the_remote_task(
    store_at: Any, unit: float
) -> None:
    store = await left(store_at, unit, "a")  # never finishes
    service = Failing(unit)
    chain = polled(service, store).with_timeout(2 * unit)

    async with chain:
        ((run, _),) = (await chain.resume()).items()
        await anyio.sleep(3 * unit)  # its time runs out, unawaited
        with anyio.move_on_after(unit) as scope:
            with pytest.raises(TimeoutError):
                await run
        assert not scope.cancelled_caught  # at once: counted from resume()
        with pytest.raises(TimeoutError):
            await run

    assert service.cancelled == ["a"]
    assert store.records() == []  # a run that ended: its record removed


async def test_a_timeout_counts_from_attach(unit: float) -> None:
    service = Failing(unit)
    chain = polled(service, None).with_timeout(2 * unit)

    async with chain:
        run = chain.attach("a")  # never finishes
        await anyio.sleep(3 * unit)
        with anyio.move_on_after(unit) as scope:
            with pytest.raises(TimeoutError):
                await run
        assert not scope.cancelled_caught

    assert service.cancelled == ["a"]


async def test_throttle_and_rate_limit_pass_attached_runs_on_unheld(
    unit: float,
) -> None:
    service = Failing(unit)
    service.finished.update({"a", "b"})
    # One run at once, one start in a long period: the run below holds both.
    chain = polled(service, None).with_rate_limit(1, 1000 * unit).with_throttle(1)

    async with chain, anyio.create_task_group() as group:
        group.start_soon(chain.run, start, "held")  # never finishes
        await service.polled.wait()
        runs = [chain.attach("a"), chain.attach("b")]
        with anyio.fail_after(100 * unit):  # neither waits for a turn
            results = [await run for run in runs]
        group.cancel_scope.cancel()

    assert results == ["A", "B"]


async def test_cancelling_the_awaiting_task_cancels_the_remote_task_unmapped(
    unit: float,
) -> None:
    service = Failing(unit)
    mapped: list[str] = []
    chain = polled(service, None).with_map(mapped.append)

    async with chain:
        run = chain.attach("a")  # never finishes
        with anyio.move_on_after(unit):
            await run
        with pytest.raises(CancelledError):
            await run  # polling stopped with the first await's cancellation

    assert service.cancelled == ["a"]
    assert mapped == []
