"""Durable polling on the async side (docs/durable.rst), on both anyio backends:
``with_poll(store=, lease=)`` writes each start result before its first poll and
removes it once its run ends; ``resume()`` takes over the records whose lease has
run out, starting nothing; a failing or slow store never stops the event loop.

Time: as in test_aio.py, trio runs on a mock clock, asyncio on durations scaled
down by ``unit``. Leases run out by moving the stores' wall clock (a
:class:`store_doubles.Clock`), never by waiting."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
import test_aio
from postgres_server import PostgresServer
from store_doubles import LEASE, Clock
from wrapper_doubles import TIMEOUT

from fluent_executors.aio import AsyncExecutor, AsyncExecutors, PollDescriptor
from fluent_executors.stores import (
    PostgresStore,
    RecordError,
    SQLiteStore,
    Store,
    StoreError,
)

pytestmark = pytest.mark.anyio

# Both backends, and the time unit of each (trio on a mock clock).
anyio_backend, unit = test_aio.anyio_backend, test_aio.unit


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["sqlite", "postgres"])
def store_at(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Any:
    """Open a store of the test's own queue (one owner each), SQLite or
    PostgreSQL (tests/postgres_server.py), on ``clock``; closed at the end."""
    opened: list[Store] = []
    queue = f"jobs-{uuid.uuid4().hex}"
    if request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")

    def store_at(**options: Any) -> Store:
        store: Store
        if request.param == "sqlite":
            store = SQLiteStore(
                tmp_path / "tasks.db", queue=queue, clock=clock, **options
            )
        else:
            store = PostgresStore(server.conninfo, queue=queue, clock=clock, **options)
        opened.append(store)
        return store

    yield store_at
    for store in opened:
        store.close()


class Service:
    """A remote service and its poll function: a task whose id is in ``finished``
    is resolved with its id upper-cased; each call's ids are kept in ``calls``,
    and ``polled`` is set at the first call."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.finished: set[str] = set()
        self.calls: list[list[str]] = []
        self.polled = anyio.Event()

    def __call__(self, descriptors: list[PollDescriptor[Any]]) -> float:
        self.calls.append([d.result for d in descriptors])
        self.polled.set()
        for descriptor in descriptors:
            if descriptor.result in self.finished:
                descriptor.yield_result(descriptor.result.upper())
        return self.interval


def poller(service: Service, store: Any, **options: Any) -> AsyncExecutor[Any]:
    return AsyncExecutors.inline("jobs").with_poll(service, store=store, **options)


async def start(task_id: Any) -> Any:
    return task_id


def never_started(task_id: Any) -> Any:
    raise AssertionError("resume() started a task again")


def keys_of(store: Store) -> list[Any]:
    return sorted(task.result for task in store.records())


async def test_a_start_result_is_written_before_its_first_poll_and_removed_after(
    store_at: Callable[..., Store], unit: float
) -> None:
    reader = store_at()
    stored_at_poll: list[list[Any]] = []
    service = Service(unit)

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        stored_at_poll.append(keys_of(reader))
        service.finished.update(d.result for d in descriptors)
        return service(descriptors)

    executor = AsyncExecutors.inline("jobs").with_poll(poll, store=store_at())
    async with executor, anyio.create_task_group() as group:
        for task_id in ("a", "b"):
            group.start_soon(executor.run, start, task_id)

    assert stored_at_poll[0] == sorted(service.calls[0])
    assert keys_of(reader) == []


async def test_a_path_opens_an_sqlite_store_for_each_block(
    tmp_path: Path, unit: float
) -> None:
    path = tmp_path / "tasks.db"
    service = Service(unit)
    service.finished.add("a")
    executor = poller(service, str(path))

    for _ in range(2):  # closed at the block's end, opened again at the next
        async with executor:
            assert await executor.run(start, "a") == "A"

    with SQLiteStore(path, queue="jobs") as reader:
        assert reader.records() == []


async def test_a_path_store_takes_back_the_last_blocks_records_at_once(
    tmp_path: Path, unit: float
) -> None:
    service = Service(unit)
    executor = poller(service, tmp_path / "tasks.db")
    async with executor:
        executor.attach("a")  # still polled as the block ends: its record stays
        await service.polled.wait()

    service.finished.add("a")
    async with executor:  # the same owner: no lease to wait for
        resumed = await executor.resume()
        assert [task.result for task in resumed.values()] == ["a"]
        assert [await run for run in resumed] == ["A"]


async def test_a_run_timed_out_loses_its_record(
    store_at: Callable[..., Store], unit: float
) -> None:
    cancelled: list[Any] = []
    executor = (
        AsyncExecutors.inline("jobs")
        .with_poll(Service(unit), cancelled.append, store=store_at())
        .with_timeout(5 * unit)
    )

    async with executor:
        with pytest.raises(TimeoutError):
            await executor.run(start, "a")

    assert cancelled == ["a"]
    assert keys_of(store_at()) == []


async def test_a_store_object_serves_one_block_at_a_time(
    store_at: Callable[..., Store], unit: float
) -> None:
    store = store_at()
    first, second = poller(Service(unit), store), poller(Service(unit), store)

    async with first:
        with pytest.raises(ValueError, match="serves poll executor 'jobs' already"):
            await second.__aenter__()
    async with second:  # free again once the first block has ended
        pass
    async with first:  # and the block entry that failed left nothing behind
        pass


async def test_a_run_still_polled_as_the_block_ends_keeps_its_record(
    store_at: Callable[..., Store], unit: float
) -> None:
    service = Service(unit)
    executor = poller(service, store_at())

    async with executor:
        run = executor.attach("a")
        await service.polled.wait()

    with pytest.raises(RuntimeError, match="ended while this run was polled"):
        await run
    assert keys_of(store_at()) == ["a"]


async def abandon(store: Store, unit: float, *ids: str) -> None:
    """Poll ``ids`` under ``store`` in an executor's block, left with them still
    polled: their records stay, held for ``LEASE`` seconds (its process died)."""
    service = Service(unit)
    executor = poller(service, store, lease=LEASE)
    async with executor:
        for task_id in ids:
            executor.attach(task_id)
        await service.polled.wait()  # all written, polled in one call


async def test_resume_takes_over_the_tasks_of_an_abandoned_executor(
    store_at: Callable[..., Store], clock: Clock, unit: float
) -> None:
    await abandon(store_at(), unit, "a", "b")
    clock.now += LEASE + 1  # the first one's leases run out

    service = Service(unit)
    # Any run would go through never_started: resume() runs nothing.
    second = (
        AsyncExecutors.inline("jobs")
        .with_map(never_started)
        .with_poll(service, store=store_at())
    )
    async with second:
        resumed = await second.resume()
        service.finished.update(("a", "b"))
        results = {task.result: await run for run, task in resumed.items()}

    assert results == {"a": "A", "b": "B"}
    assert keys_of(store_at()) == []


async def test_resume_leaves_the_tasks_whose_lease_is_live(
    store_at: Callable[..., Store], clock: Clock, unit: float
) -> None:
    await abandon(store_at(), unit, "a")
    clock.now += LEASE - 1  # not run out yet

    second = poller(Service(unit), store_at())
    async with second:
        assert await second.resume() == {}
    assert keys_of(store_at()) == ["a"]


async def test_a_corrupt_record_fails_its_resumed_run_alone(
    store_at: Callable[..., Store], clock: Clock, unit: float
) -> None:
    class Garbling:
        @staticmethod
        def dumps(obj: Any) -> str:
            return "{not json" if obj == "bad" else f'"{obj}"'

        @staticmethod
        def loads(text: str) -> Any:
            raise AssertionError("not read")

    from fluent_executors.stores import NewRecord

    store_at(serializer=Garbling()).add(
        [NewRecord("k1", "bad"), NewRecord("k2", "good")], LEASE
    )
    clock.now += LEASE + 1
    service = Service(unit)
    service.finished.add("good")
    executor = poller(service, store_at())

    async with executor:
        resumed = await executor.resume()
        outcomes: dict[str, Any] = {}
        for run, task in resumed.items():
            try:
                outcomes[task.key] = await run
            except RecordError as error:
                outcomes[task.key] = error

    assert outcomes["k2"] == "GOOD"
    assert isinstance(outcomes["k1"], RecordError)
    assert "cannot read the stored start result" in str(outcomes["k1"])
    assert keys_of(store_at()) == []


async def test_an_unserialisable_start_result_fails_that_run_alone(
    store_at: Callable[..., Store], unit: float
) -> None:
    service = Service(unit)
    service.finished.add("a")
    executor = poller(service, store_at())
    outcomes: dict[str, Any] = {}

    async def one(name: str, result: Any) -> None:
        try:
            outcomes[name] = await executor.run(start, result)
        except RecordError as error:
            outcomes[name] = error

    async with executor, anyio.create_task_group() as group:
        group.start_soon(one, "plain", "a")
        group.start_soon(one, "object", object())

    assert outcomes["plain"] == "A"
    assert isinstance(outcomes["object"], RecordError)
    assert "cannot store the start result" in str(outcomes["object"])
    assert service.calls
    assert all(call == ["a"] for call in service.calls)


class Failing:
    """A store that passes every call on to ``store``, but raises ``StoreError``
    while ``failing`` is set; ``failures`` counts those, and ``failed`` is set
    at the second (the calls come from worker threads)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.queue, self.owner = store.queue, store.owner
        self.failing = True
        self.failures = 0
        self.failed = threading.Event()

    def _check(self) -> None:
        if self.failing:
            self.failures += 1
            if self.failures == 2:
                self.failed.set()
            raise StoreError("the database is down")

    def add(self, records: Any, lease: float) -> Any:
        self._check()
        return self.store.add(records, lease)

    def remove(self, keys: Any) -> None:
        self._check()
        self.store.remove(keys)

    def release(self, keys: Any) -> None:
        self._check()
        self.store.release(keys)

    def renew(self, keys: Any, lease: float) -> int:
        self._check()
        return self.store.renew(keys, lease)

    def claim(self, lease: float, limit: int | None = None, *, mine: bool) -> Any:
        self._check()
        return self.store.claim(lease, limit, mine=mine)

    def records(self) -> Any:
        return self.store.records()

    def close(self) -> None:
        self.store.close()


async def test_a_store_outage_keeps_the_runs_pending_logs_once_and_loses_nothing(
    store_at: Callable[..., Store],
    unit: float,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Failing(store_at())
    service = Service(unit)
    service.finished.add("a")
    # Retried after max(default_interval, 0.5 s), then twice as long each time.
    executor = poller(service, store, default_interval=unit)
    caplog.set_level(logging.WARNING, logger="fluent_executors.aio")

    async with executor, anyio.create_task_group() as group:
        group.start_soon(executor.run, start, "a")
        await anyio.to_thread.run_sync(store.failed.wait, TIMEOUT)
        assert service.calls == []  # pending: not polled before it is written
        store.failing = False

    # (trio's mock clock may jump on to more retries while the test waits)
    assert store.failures >= 2
    assert executor.stats().store_errors == store.failures  # type: ignore[attr-defined]
    assert service.calls[0] == ["a"]
    assert keys_of(store.store) == []
    outage = [r for r in caplog.records if "failed to write" in r.getMessage()]
    assert len(outage) == 1
    assert any("works again" in r.getMessage() for r in caplog.records)


class FailingRenewals:
    """A store whose ``renew`` raises ``StoreError`` while ``failing`` is set;
    ``failed`` is set at the second failure (renewals come from worker threads)."""

    def __init__(self, store: Store) -> None:
        self.store, self.failing, self.failures = store, True, 0
        self.failed = threading.Event()

    def renew(self, keys: Any, lease: float) -> int:
        if self.failing:
            self.failures += 1
            if self.failures == 2:
                self.failed.set()
            raise StoreError("the database is down")
        return self.store.renew(keys, lease)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


async def test_no_round_begins_once_the_last_renewal_is_two_thirds_of_the_lease_old(
    store_at: Callable[..., Store],
) -> None:
    lease = 0.9  # renewed every 0.3 s; after a failure, retried in 0.5 s, then 1 s
    store = FailingRenewals(store_at())
    polled_at: list[float] = []
    finished: set[str] = set()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        polled_at.append(anyio.current_time())
        for descriptor in descriptors:
            if descriptor.result in finished:
                descriptor.yield_result(descriptor.result.upper())
        return lease / 30

    executor = AsyncExecutors.inline().with_poll(
        poll, store=store, lease=lease, default_interval=lease / 30
    )
    async with executor, anyio.create_task_group() as group:
        group.start_soon(executor.run, start, "t")
        # Written (the last renewal that succeeded) before the first poll; the
        # renewals fail from a third of the lease on, the second a retry after
        # two thirds: no round may begin then, until a renewal succeeds.
        await anyio.to_thread.run_sync(store.failed.wait, TIMEOUT)
        recovered_at = anyio.current_time()
        store.failing = False
        finished.add("t")

    assert polled_at[-1] >= recovered_at  # rounds began again, and ended the run
    # A round decided just before two thirds of the lease may call the poll
    # function a little later on a loaded machine: a tenth of the lease allowed
    # (without the check, polls go on every thirtieth until the recovery).
    stale = polled_at[0] + lease * 2 / 3 + lease / 10
    assert [t for t in polled_at if stale <= t < recovered_at] == []
    # (trio's mock clock may jump on to more retries while the test waits)
    assert executor.stats().store_errors == store.failures >= 2  # type: ignore[attr-defined]


class Slow:
    """A store whose method ``slow`` waits for ``go_on`` (a threading.Event),
    having set ``entered``; ``timed_out`` says it waited in vain (whoever was to
    release it could not run)."""

    def __init__(self, store: Store, slow: str = "add") -> None:
        self.store, self.slow = store, slow
        self.entered, self.go_on = threading.Event(), threading.Event()
        self.timed_out = False

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.store, name)
        if name != self.slow:
            return method

        def waiting(*args: Any, **kwargs: Any) -> Any:
            self.entered.set()
            if not self.go_on.wait(TIMEOUT):
                self.timed_out = True
            return method(*args, **kwargs)

        return waiting


async def test_a_slow_store_never_holds_the_event_loop(
    store_at: Callable[..., Store], unit: float
) -> None:
    store = Slow(store_at())
    service = Service(unit)
    service.finished.add("a")
    executor = poller(service, store)
    ticks = 0
    ticked = anyio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(unit / 10)
            ticks += 1
            if ticks == 5:
                ticked.set()

    async with executor, anyio.create_task_group() as group:
        group.start_soon(ticker)
        group.start_soon(executor.run, start, "a")
        await anyio.to_thread.run_sync(store.entered.wait, TIMEOUT)
        with anyio.fail_after(TIMEOUT):
            await ticked.wait()  # while add() is blocked
        assert service.calls == []
        store.go_on.set()
        await service.polled.wait()
        group.cancel_scope.cancel()

    assert not store.timed_out
    assert service.calls[0] == ["a"]


async def test_a_resume_cancelled_while_it_claims_keeps_what_it_claimed(
    store_at: Callable[..., Store], clock: Clock, unit: float
) -> None:
    await abandon(store_at(), unit, "a")
    clock.now += LEASE + 1
    store = Slow(store_at(), "claim")
    executor = poller(Service(unit), store)

    async def cancel_while_claiming(scope: anyio.CancelScope) -> None:
        await anyio.to_thread.run_sync(store.entered.wait, TIMEOUT)
        scope.cancel()
        store.go_on.set()

    async with executor:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(cancel_while_claiming, scope)
                await executor.resume()
        assert scope.cancel_called
        assert executor.stats().submitted == 1  # its run was made, and is polled

    assert not store.timed_out
    assert keys_of(store_at()) == ["a"]  # still polled as the block ended


class SlowRenewal:
    """A store whose ``renew`` takes ``seconds`` (real ones), counted."""

    def __init__(self, store: Store, seconds: float) -> None:
        self.store, self.seconds, self.renewals = store, seconds, 0

    def renew(self, keys: Any, lease: float) -> int:
        time.sleep(self.seconds)  # the slow statement (not a synchronisation)
        held = self.store.renew(keys, lease)
        self.renewals += 1
        return held

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


async def test_a_renewal_slower_than_a_third_of_the_lease_lets_rounds_begin(
    store_at: Callable[..., Store], unit: float
) -> None:
    store = SlowRenewal(store_at(), seconds=0.2)  # a third of the lease: 0.1 s

    service = Service(unit)

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        if store.renewals >= 2:  # a round after two slow renewals
            service.finished.add("t")
        return service(descriptors)

    executor = AsyncExecutors.inline().with_poll(poll, store=store, lease=0.3)
    async with executor:
        assert await executor.run(start, "t") == "T"


async def test_a_cancelled_block_cancels_its_runs_and_removes_their_records(
    store_at: Callable[..., Store], unit: float
) -> None:
    service = Service(unit)
    cancelled: list[Any] = []
    executor = AsyncExecutors.inline("jobs").with_poll(
        service, cancelled.append, store=store_at()
    )

    with anyio.CancelScope() as scope:
        async with executor, anyio.create_task_group() as group:
            group.start_soon(executor.run, start, "a")
            await service.polled.wait()
            scope.cancel()

    assert cancelled == ["a"]
    assert keys_of(store_at()) == []


async def test_attach_polls_a_result_without_running_anything(unit: float) -> None:
    service = Service(unit)
    service.finished.add("a")
    executor = AsyncExecutors.inline().with_map(never_started).with_poll(service)

    async with executor:
        run = executor.attach("a")
        assert await run == "A"
        assert run.done()
    assert executor.stats().submitted == 1


async def test_attach_and_resume_outside_the_block_raise(unit: float) -> None:
    executor = poller(Service(unit), None)

    with pytest.raises(RuntimeError, match="enter 'async with executor:'"):
        executor.attach("a")
    async with executor:
        with pytest.raises(RuntimeError, match="has no store to resume from"):
            await executor.resume()


def test_bad_store_and_lease_are_refused_naming_them() -> None:
    base = AsyncExecutors.inline()
    with pytest.raises(TypeError, match="store must be a path"):
        base.with_poll(Service(1.0), store=42)  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match="lease must be a finite number of seconds > 0"
    ):
        base.with_poll(Service(1.0), lease=0)
