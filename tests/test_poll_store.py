"""Durable polling on the thread driver: PollExecutor(..., store=, lease=) writes each
start result before its first poll and removes it once its future is done, in
one store call per round; resume() takes over the records whose lease has run
out; a failing store leaves the futures pending."""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pytest
from postgres_server import PostgresServer
from store_doubles import LEASE, Clock
from wrapper_doubles import TIMEOUT, WrittenUnderLock

from _fluent_executors.logging import ContainedLogger
from _fluent_executors.poll.keeper import StoreKeeper
from fluent_executors import Executors, PollDescriptor, PollExecutor
from fluent_executors.stores import (
    NewRecord,
    PostgresStore,
    RecordError,
    SQLiteStore,
    Store,
    StoredTask,
    StoreError,
)
from fluent_executors.testing import virtual_time


class Recording:
    """A store that passes every call on to ``store``, records each, and raises
    ``StoreError`` instead while ``failing`` is set."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.queue, self.owner = store.queue, store.owner
        self.calls: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.failing = False

    def _record(self, name: str, argument: Any) -> None:
        self.calls.put((name, argument))
        if self.failing:
            raise StoreError("the database is down")

    def add(self, records: Any, lease: float) -> Any:
        self._record("add", records)
        return self.store.add(records, lease)

    def remove(self, keys: Any) -> Any:
        self._record("remove", keys)
        return self.store.remove(keys)

    def release(self, keys: Any) -> Any:
        self._record("release", keys)
        return self.store.release(keys)

    def renew(self, keys: Any, lease: float) -> Any:
        self._record("renew", lease)
        return self.store.renew(keys, lease)

    def claim(self, lease: float, limit: int | None = None, *, mine: bool) -> Any:
        self._record("claim", lease)
        return self.store.claim(lease, limit, mine=mine)

    def records(self) -> Any:
        return self.store.records()

    def close(self) -> None:
        self.store.close()

    def removed(self, count: int) -> list[str]:
        """The keys of the next calls of ``remove``, until ``count`` of them (a
        sync removes those done by then: the futures may end between two)."""
        keys: list[str] = []
        while len(keys) < count:
            keys += self.next("remove")
        return sorted(keys)

    def next(self, name: str) -> Any:
        """The argument of the next call of ``name`` (others before it skipped)."""
        while True:
            called, argument = self.calls.get(timeout=TIMEOUT)
            if called == name:
                return argument


class Service:
    """A remote service and its poll function: each call's task ids are put on
    ``calls``; a task in ``finished`` is resolved with its id upper-cased."""

    def __init__(self) -> None:
        self.finished: set[str] = set()
        self.failed: set[str] = set()
        self.calls: queue.Queue[list[str]] = queue.Queue()
        self.lock = threading.Lock()

    def __call__(self, descriptors: list[PollDescriptor[Any]]) -> float:
        self.calls.put([d.result for d in descriptors])
        with self.lock:
            finished, failed = set(self.finished), set(self.failed)
        for descriptor in descriptors:
            if descriptor.result in finished:
                descriptor.yield_result(descriptor.result.upper())
            elif descriptor.result in failed:
                descriptor.yield_exception(ValueError(descriptor.result))
        return 0.01

    def finish(self, *ids: str) -> None:
        with self.lock:
            self.finished.update(ids)


def never_started(value: Any) -> Any:
    raise AssertionError("resume() started a task again")


def identity(value: Any) -> Any:
    return value


@pytest.fixture
def closing() -> Iterator[list[Any]]:
    """Stores closed at the end, after the executors are shut down."""
    made: list[Any] = []
    yield made
    for store in made:
        store.close()


@pytest.fixture
def executors(closing: list[Any]) -> Iterator[list[PollExecutor[Any]]]:
    made: list[PollExecutor[Any]] = []
    yield made
    for executor in made:
        executor.shutdown(wait=True, cancel_futures=True)


@pytest.fixture
def sqlite(closing: list[Any], tmp_path: Path) -> Any:
    """Opens stores of the test's SQLite file (a Recording of one with
    ``recording=True``)."""

    def make(*, recording: bool = False, **options: Any) -> Any:
        store = SQLiteStore(tmp_path / "t.db", **options)
        closing.append(store)
        return Recording(store) if recording else store

    return make


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(
    request: pytest.FixtureRequest, tmp_path: Path, closing: list[Any]
) -> Any:
    """Opens stores of one new queue, SQLite or PostgreSQL."""
    made = closing
    queue_name = f"queue-{uuid.uuid4().hex}"
    if request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")

    def make(**options: Any) -> Any:
        options = {"queue": queue_name, **options}
        store: Store
        if request.param == "sqlite":
            store = SQLiteStore(tmp_path / "tasks.db", **options)
        else:
            store = PostgresStore(server.conninfo, **options)
        made.append(store)
        return store

    return make


def test_the_start_result_is_stored_before_its_first_poll(
    executors: list[Any], open_store: Any
) -> None:
    store = open_store()
    stored_at_poll: queue.Queue[list[Any]] = queue.Queue()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        stored_at_poll.put([t.result for t in store.records()])
        descriptors[0].yield_result()
        return 0.01

    executor = PollExecutor(Executors.sync(), poll, store=store, lease=LEASE)
    executors.append(executor)

    future = executor.submit(identity, {"task": 7})

    assert future.result(timeout=TIMEOUT) == {"task": 7}
    assert stored_at_poll.get(timeout=TIMEOUT) == [{"task": 7}]


@pytest.mark.parametrize("ending", ["result", "exception", "cancel"])
def test_a_record_is_removed_once_its_future_is_done(
    executors: list[Any], sqlite: Any, ending: str
) -> None:
    store = sqlite(recording=True)
    service = Service()
    executor = PollExecutor(Executors.sync(), service, store=store, lease=LEASE)
    executors.append(executor)
    future = executor.submit(identity, "t1")
    (record,) = store.next("add")
    assert service.calls.get(timeout=TIMEOUT) == ["t1"]

    if ending == "result":
        service.finish("t1")
        assert future.result(timeout=TIMEOUT) == "T1"
    elif ending == "exception":
        with service.lock:
            service.failed.add("t1")
        with pytest.raises(ValueError, match="t1"):
            future.result(timeout=TIMEOUT)
    else:
        assert future.cancel()

    assert store.next("remove") == [record.key]
    assert store.records() == []


def test_records_are_written_in_one_call_per_round(
    executors: list[Any], sqlite: Any
) -> None:
    store = sqlite(recording=True)
    in_poll, go_on = threading.Event(), threading.Event()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        in_poll.set()
        assert go_on.wait(TIMEOUT)
        return 0.01

    executor = PollExecutor(Executors.sync(), poll, store=store, lease=LEASE)
    executors.append(executor)
    executor.attach("first")
    assert in_poll.wait(TIMEOUT)  # the poll thread is in the poll function

    for i in range(100):
        executor.attach(f"task-{i}")
    go_on.set()

    assert [r.result for r in store.next("add")] == ["first"]
    assert [r.result for r in store.next("add")] == [f"task-{i}" for i in range(100)]
    assert len(store.records()) == 101


def test_an_unserialisable_start_result_fails_its_future_alone(
    executors: list[Any], sqlite: Any
) -> None:
    service = Service()
    store = sqlite()
    executor = PollExecutor(Executors.sync(), service, store=store, lease=LEASE)
    executors.append(executor)

    bad = executor.submit(identity, object())
    good = executor.submit(identity, "t1")
    service.finish("t1")

    with pytest.raises(RecordError, match="cannot store the start result"):
        bad.result(timeout=TIMEOUT)
    assert good.result(timeout=TIMEOUT) == "T1"


def test_resume_takes_over_expired_records_without_starting_them(
    executors: list[Any], open_store: Any
) -> None:
    clock = Clock()
    dead = open_store(clock=clock, owner="dead")
    dead.add([NewRecord(f"k{i}", f"t{i}", label=f"input {i}") for i in range(3)], LEASE)
    clock.now += LEASE
    store = Recording(open_store(clock=clock, owner="alive"))
    service = Service()
    executor = PollExecutor(Executors.sync(), service, store=store, lease=LEASE)
    executors.append(executor)
    executor.submit(identity, "t3")  # a task of its own: not resumed

    resumed = executor.resume()

    assert sorted((t.key, t.result, t.label) for t in resumed.values()) == [
        ("k0", "t0", "input 0"),
        ("k1", "t1", "input 1"),
        ("k2", "t2", "input 2"),
    ]
    service.finish("t0", "t1", "t2")
    for future, task in resumed.items():
        assert future.result(timeout=TIMEOUT) == task.result.upper()
    assert executor.resume() == {}  # held by this executor now
    assert store.removed(3) == ["k0", "k1", "k2"]
    assert [t.result for t in store.records()] == ["t3"]  # still pending there


def test_resume_leaves_records_whose_lease_runs(
    executors: list[Any], sqlite: Any
) -> None:
    clock = Clock()
    sqlite(clock=clock).add([NewRecord("k", "t")], LEASE)
    clock.now += LEASE - 1
    store = sqlite(clock=clock)
    executor = PollExecutor(Executors.sync(), Service(), store=store, lease=LEASE)
    executors.append(executor)

    assert executor.resume() == {}


def test_a_corrupt_record_and_an_intent_resume_as_failed_futures(
    executors: list[Any], sqlite: Any
) -> None:
    clock = Clock()

    class Raw:
        dumps = staticmethod(str)
        loads = staticmethod(str)

    sqlite(clock=clock, serializer=Raw()).add(
        [NewRecord("bad", "{not json"), NewRecord("i", intent=True)], LEASE
    )
    clock.now += LEASE
    store = sqlite(recording=True, clock=clock)
    executor = PollExecutor(Executors.sync(), Service(), store=store, lease=LEASE)
    executors.append(executor)

    resumed = {task.key: future for future, task in executor.resume().items()}

    with pytest.raises(RecordError, match="cannot read the stored start result"):
        resumed["bad"].result(timeout=TIMEOUT)
    with pytest.raises(RecordError, match="whether the remote task was started"):
        resumed["i"].result(timeout=TIMEOUT)
    assert store.removed(2) == ["bad", "i"]


def test_a_failing_store_leaves_the_futures_pending_backs_off_and_logs_once(
    executors: list[Any], sqlite: Any, caplog: pytest.LogCaptureFixture
) -> None:
    store = sqlite(recording=True)
    store.failing = True
    service = Service()
    with (
        virtual_time() as clock,
        caplog.at_level(logging.WARNING, "fluent_executors.poll"),
    ):
        executor = PollExecutor(
            Executors.sync(), service, default_interval=0.0, store=store, lease=LEASE
        )
        executors.append(executor)
        future = executor.submit(identity, "t1")
        store.next("add")  # failed at 0 s
        for retry_after in (0.5, 1.0, 2.0):  # a floor, then twice as long each time
            clock.advance(retry_after - 0.01)
            assert store.calls.empty()
            clock.advance(0.01)
            store.next("add")
        assert service.calls.empty()  # not polled before it is stored
        assert not future.done()
        store.failing = False
        service.finish("t1")
        clock.advance(4.0)

        assert future.result(timeout=TIMEOUT) == "T1"
    assert executor.stats().store_errors == 4
    messages = [r.getMessage() for r in caplog.records]
    assert len([m for m in messages if "failed to write" in m]) == 1
    assert len([m for m in messages if "works again" in m]) == 1


def test_leases_are_renewed_every_third_of_the_lease(
    executors: list[Any], sqlite: Any
) -> None:
    store = sqlite(recording=True)

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        return 1000.0

    with virtual_time() as clock:
        executor = PollExecutor(Executors.sync(), poll, store=store, lease=30.0)
        executors.append(executor)
        executor.submit(identity, "t1")
        store.next("add")
        clock.advance(9.9)
        assert store.calls.empty()
        clock.advance(0.1)

        assert store.next("renew") == 30.0


def test_no_round_begins_once_the_last_renewal_is_two_thirds_of_the_lease_old(
    executors: list[Any], sqlite: Any
) -> None:
    store = sqlite(recording=True)
    service = Service()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        service(descriptors)
        return 1.0

    with virtual_time() as clock:
        executor = PollExecutor(
            Executors.sync(), poll, default_interval=0.0, store=store, lease=30.0
        )
        executors.append(executor)
        future = executor.submit(identity, "t1")
        store.next("add")  # written at 0 s
        store.failing = True  # renewals fail from 10 s, retried at 10.5, 11.5,
        clock.advance(19.0)  # 13.5, 17.5 and 25.5 s: polled meanwhile
        while not service.calls.empty():
            service.calls.get()
        clock.advance(6.0)  # 20 s to 25 s: the lease (30 s) may run out in a round
        assert service.calls.empty()
        assert not future.done()
        store.failing = False
        clock.advance(0.5)  # 25.5 s: renewed; rounds begin again

        assert service.calls.get(timeout=TIMEOUT) == ["t1"]
        service.finish("t1")
        clock.advance(1.0)
        assert future.result(timeout=TIMEOUT) == "T1"
    assert executor.stats().store_errors == 5


def test_renewals_leave_an_earlier_lifes_records_of_the_owner_to_run_out(
    executors: list[Any], sqlite: Any
) -> None:
    clock = Clock()
    sqlite(clock=clock, owner="p1").add([NewRecord("old", "t0")], LEASE)
    store = sqlite(recording=True, clock=clock, owner="p1")  # restarted
    with virtual_time() as driver:
        executor = PollExecutor(
            Executors.sync(), waiting_poll(queue.Queue()), store=store, lease=LEASE
        )
        executors.append(executor)
        executor.submit(identity, "t1")
        store.next("add")
        clock.now += LEASE - 1
        driver.advance(LEASE / 3)
        assert store.next("renew") == LEASE
    clock.now += 1

    claimed = sqlite(clock=clock, owner="p2").claim(LEASE)

    assert [(t.key, t.result) for t in claimed] == [("old", "t0")]


def test_a_path_opens_an_sqlite_store_of_the_executors_name(
    executors: list[Any], tmp_path: Path
) -> None:
    service = Service()
    executor = PollExecutor(
        Executors.sync(), service, name="publisher", store=str(tmp_path / "t.db")
    )
    executors.append(executor)
    executor.submit(identity, "t1")
    assert service.calls.get(timeout=TIMEOUT) == ["t1"]  # written by then

    with SQLiteStore(tmp_path / "t.db", queue="publisher") as reader:
        assert [t.result for t in reader.records()] == ["t1"]


def test_resume_without_a_store_is_refused(executors: list[Any]) -> None:
    executor = PollExecutor(Executors.sync(), Service())
    executors.append(executor)

    with pytest.raises(RuntimeError, match="no store"):
        executor.resume()


class WithoutRecords:
    """Half a store: the calls of a poll executor, but not ``records``,
    ``close`` and ``owner``."""

    def add(self, records: Any, lease: float) -> Any:
        return {}

    def remove(self, keys: Any) -> None:
        pass

    def renew(self, keys: Any, lease: float) -> int:
        return 0

    def claim(self, lease: float, limit: int | None = None, *, mine: bool) -> Any:
        return []


@pytest.mark.parametrize(
    ("options", "error", "named"),
    [
        ({"store": 3}, TypeError, "store"),
        ({"store": object()}, TypeError, "store"),
        ({"store": WithoutRecords()}, TypeError, "store"),
        ({"lease": "1"}, TypeError, "lease"),
        ({"name": "", "store": "t.db"}, ValueError, "name must not be empty"),
    ]
    + [
        ({"lease": lease}, ValueError, "lease must be a finite number of seconds > 0")
        for lease in (0, -1.0, math.nan, math.inf)
    ],
)
def test_bad_store_or_lease_is_refused_naming_it(
    options: dict[str, Any],
    error: type[Exception],
    named: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)  # (a store path opens there)

    with pytest.raises(error, match=named):
        PollExecutor(Executors.sync(), Service(), **options)


class NotCheckingLimit(Recording):
    """A Recording whose ``claim`` takes any ``limit`` (a store of the user's)."""

    def claim(self, lease: float, limit: Any = None, *, mine: bool) -> Any:
        self._record("claim", lease)
        return []


@pytest.mark.parametrize(
    ("limit", "error", "message"),
    [
        (0, ValueError, "limit must be >= 1, got 0"),
        (True, TypeError, "limit must be an int or None, got bool"),
        (1.5, TypeError, "limit must be an int or None, got float"),
    ],
)
def test_a_bad_resume_limit_is_refused_before_any_claim(
    executors: list[Any],
    sqlite: Any,
    limit: Any,
    error: type[Exception],
    message: str,
) -> None:
    store = NotCheckingLimit(sqlite())
    executor = PollExecutor(Executors.sync(), Service(), store=store)
    executors.append(executor)

    with pytest.raises(error, match=message):
        executor.resume(limit)

    assert store.calls.empty()


def test_a_resumed_future_cancelled_removes_its_record(
    executors: list[Any], sqlite: Any
) -> None:
    clock = Clock()
    sqlite(clock=clock).add([NewRecord("k", "t")], LEASE)
    clock.now += LEASE
    store = sqlite(recording=True, clock=clock)
    executor = PollExecutor(Executors.sync(), Service(), store=store, lease=LEASE)
    executors.append(executor)
    ((future, task),) = executor.resume().items()
    assert isinstance(task, StoredTask)

    assert future.cancel()

    with pytest.raises(CancelledError):
        future.result(timeout=TIMEOUT)
    assert store.next("remove") == ["k"]


class RemovalFailing(Recording):
    """A Recording whose ``remove`` fails until ``removable`` is set."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.removable = threading.Event()

    def remove(self, keys: Any) -> Any:
        self.calls.put(("remove", keys))
        if not self.removable.is_set():
            raise StoreError("the database is locked")
        return self.store.remove(keys)


def test_resume_never_claims_back_a_record_whose_removal_failed(
    executors: list[Any], sqlite: Any
) -> None:
    clock = Clock()
    sqlite(clock=clock).add([NewRecord("k", "t")], LEASE)
    clock.now += LEASE
    store = RemovalFailing(sqlite(clock=clock))
    service = Service()
    executor = PollExecutor(Executors.sync(), service, store=store, lease=LEASE)
    executors.append(executor)
    ((future, _),) = executor.resume().items()
    service.finish("t")
    assert future.result(timeout=TIMEOUT) == "T"
    assert store.next("remove") == ["k"]  # failed: the record stays
    clock.now += LEASE  # its lease has run out too

    assert executor.resume() == {}  # done here: not a task to poll again

    store.removable.set()
    assert store.next("remove") == ["k"]


def waiting_poll(polls: queue.Queue[list[Any]]) -> Any:
    """A poll function that reports each call's task ids and asks for 1,000 s."""

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        polls.put([d.result for d in descriptors])
        return 1000.0

    return poll


def test_older_records_are_renewed_while_new_ones_arrive(
    executors: list[Any], sqlite: Any
) -> None:
    store = sqlite(recording=True)
    with virtual_time() as clock:
        executor = PollExecutor(
            Executors.sync(), waiting_poll(queue.Queue()), store=store, lease=30.0
        )
        executors.append(executor)
        executor.attach("old")
        store.next("add")
        clock.advance(5.0)
        executor.attach("new")  # written with a lease of its own
        store.next("add")

        clock.advance(5.0)  # a third of the lease since "old" was written

        assert store.next("renew") == 30.0


def test_a_future_whose_task_another_process_took_over_fails_and_keeps_its_record(
    executors: list[Any], sqlite: Any
) -> None:
    wall = Clock()
    polls: queue.Queue[list[Any]] = queue.Queue()
    with virtual_time() as clock:
        executor = PollExecutor(
            Executors.sync(),
            waiting_poll(polls),
            store=sqlite(clock=wall, owner="this"),
            lease=30.0,
        )
        executors.append(executor)
        future = executor.attach("t1")
        assert polls.get(timeout=TIMEOUT) == ["t1"]
        # This process stalls past its lease, and another takes the task over.
        wall.now += 30.0
        assert [t.result for t in sqlite(clock=wall, owner="other").claim(30.0)] == [
            "t1"
        ]

        clock.advance(10.0)  # its next renewal finds the lease gone

        with pytest.raises(RecordError, match="another process took the task over"):
            future.result(timeout=TIMEOUT)
    assert polls.empty()  # not polled again here
    assert [t.owner for t in sqlite().records()] == ["other"]


def test_a_postgres_restart_leaves_the_futures_pending_and_loses_nothing(
    executors: list[Any],
    postgres_server: PostgresServer,
    closing: list[Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = PostgresStore(postgres_server.conninfo, queue=uuid.uuid4().hex)
    closing.append(store)
    service = Service()
    executor = PollExecutor(
        Executors.sync(), service, default_interval=0.01, store=store, lease=LEASE
    )
    executors.append(executor)
    before = executor.submit(identity, "t1")
    assert service.calls.get(timeout=TIMEOUT) == ["t1"]  # written, polled

    with caplog.at_level(logging.WARNING, "fluent_executors.poll"):
        postgres_server.restart()  # every connection lost
        during = executor.submit(identity, "t2")  # its first write fails
        service.finish("t1", "t2")

        assert before.result(timeout=TIMEOUT) == "T1"
        assert during.result(timeout=TIMEOUT) == "T2"
        executor.shutdown()

    assert store.records() == []
    assert executor.stats().store_errors == 1
    messages = [r.getMessage() for r in caplog.records]
    assert len([m for m in messages if "failed to write" in m]) == 1
    assert len([m for m in messages if "works again" in m]) == 1


def test_the_leases_of_resumed_records_are_renewed(
    executors: list[Any], sqlite: Any
) -> None:
    wall = Clock()
    sqlite(clock=wall).add([NewRecord("k", "t")], LEASE)
    wall.now += LEASE
    store = sqlite(recording=True, clock=wall)
    with virtual_time() as clock:
        executor = PollExecutor(
            Executors.sync(), waiting_poll(queue.Queue()), store=store, lease=30.0
        )
        executors.append(executor)
        assert len(executor.resume()) == 1  # its first records: no add before

        assert store.next("renew") == 30.0  # at once
        clock.advance(10.0)
        assert store.next("renew") == 30.0  # and every third of the lease


def test_a_future_cancelled_as_it_enters_polling_leaves_no_record(
    executors: list[Any], sqlite: Any
) -> None:
    store = sqlite(recording=True)
    service = Service()
    futures: list[Any] = []

    def cancel_then_arrive(descriptor: PollDescriptor[Any]) -> int:
        if descriptor.result == "t1":  # cancelled after it entered polling
            assert futures[0].cancel()
        return arrived(descriptor)

    start = threading.Event()

    def started(value: str) -> str:
        assert start.wait(TIMEOUT)
        return value

    with Executors.thread_pool(1) as delegate:
        executor = PollExecutor(delegate, service, store=store, lease=LEASE)
        executors.append(executor)
        keeper = executor._poller.keeper
        arrived = keeper.arrived
        keeper.arrived = cancel_then_arrive
        futures.append(executor.submit(started, "t1"))
        start.set()
        with pytest.raises(CancelledError):
            futures[0].result(timeout=TIMEOUT)
        later = executor.submit(identity, "t2")  # a sync after the cancel
        service.finish("t2")
        assert later.result(timeout=TIMEOUT) == "T2"
        executor.shutdown(wait=True)

    assert store.records() == []


def test_resume_returns_no_future_for_the_executors_own_records(
    executors: list[Any], sqlite: Any
) -> None:
    store = sqlite(recording=True)
    polls: queue.Queue[list[Any]] = queue.Queue()
    executor = PollExecutor(
        Executors.sync(), waiting_poll(polls), store=store, lease=LEASE
    )
    executors.append(executor)
    executor.attach("mine")
    assert polls.get(timeout=TIMEOUT) == ["mine"]  # its record is written

    assert executor.resume() == {}

    stats = executor.stats()
    assert (stats.submitted, stats.cancelled) == (1, 0)


class FinishingAsItClaims(Recording):
    """A Recording that runs ``between`` after each claim, before resume()
    adopts the records it returned."""

    between: Any = None

    def claim(self, lease: float, limit: int | None = None, *, mine: bool) -> Any:
        tasks = super().claim(lease, limit, mine=mine)
        if self.between is not None:
            self.between()
        return tasks


def test_resume_takes_no_record_whose_future_ends_as_it_claims(
    executors: list[Any], sqlite: Any
) -> None:
    clock = Clock()
    sqlite(clock=clock).add([NewRecord("k", "t")], LEASE)
    clock.now += LEASE
    store = FinishingAsItClaims(sqlite(clock=clock))
    service = Service()
    executor = PollExecutor(Executors.sync(), service, store=store, lease=LEASE)
    executors.append(executor)
    ((future, _),) = executor.resume().items()  # "k" is held here now

    def finish() -> None:  # after the claim that returned "k" again
        service.finish("t")
        assert future.result(timeout=TIMEOUT) == "T"

    store.between = finish

    assert executor.resume() == {}


class AnsweringNone(Recording):
    """A Recording whose first ``add`` answers ``None`` (not a dict)."""

    broken = True

    def add(self, records: Any, lease: float) -> Any:
        broken, self.broken = self.broken, False
        answer = super().add(records, lease)
        return None if broken else answer


def test_a_store_that_answers_wrongly_is_a_contained_failure(
    executors: list[Any], sqlite: Any, caplog: pytest.LogCaptureFixture
) -> None:
    store = AnsweringNone(sqlite())
    service = Service()
    executor = PollExecutor(
        Executors.sync(), service, store=store, lease=LEASE, default_interval=0.01
    )
    executors.append(executor)
    with caplog.at_level(logging.WARNING, "fluent_executors.poll"):
        future = executor.submit(identity, "t")
        store.next("add")  # answered None
        service.finish("t")

        assert future.result(timeout=TIMEOUT) == "T"  # the poll thread lives on
    (record,) = [r for r in caplog.records if "failed to write" in r.getMessage()]
    assert record.exc_info is not None
    assert "not a dict" in str(record.exc_info[1])


def test_a_store_opened_from_a_path_is_closed_without_a_poll_thread(
    tmp_path: Path,
) -> None:
    executor = PollExecutor(Executors.sync(), Service(), store=tmp_path / "t.db")
    store = executor._poller.keeper.store

    executor.shutdown(wait=True)  # no future: its poll thread never started

    with pytest.raises(StoreError, match="closed"):
        store.records()


def test_a_store_object_in_use_is_refused_to_a_second_executor(
    executors: list[Any], sqlite: Any
) -> None:
    store = sqlite()
    first = PollExecutor(Executors.sync(), Service(), store=store)
    executors.append(first)

    with pytest.raises(ValueError, match="store"):
        PollExecutor(Executors.sync(), Service(), store=store)


def test_a_store_object_serves_a_new_executor_once_the_first_has_ended(
    executors: list[Any], sqlite: Any
) -> None:
    store = sqlite()
    service = Service()
    first = PollExecutor(Executors.sync(), service, store=store)
    service.finish("t")
    assert first.submit(identity, "t").result(timeout=TIMEOUT) == "T"
    first.shutdown(wait=True)  # its poll thread has ended

    second = PollExecutor(Executors.sync(), service, store=store)
    executors.append(second)

    assert second.submit(identity, "t").result(timeout=TIMEOUT) == "T"


class UnreadableResult:
    """A descriptor whose start result cannot be read: a keeper's sync raises."""

    @property
    def result(self) -> Any:
        raise RuntimeError("no result")


def test_a_keeper_counts_the_stores_failures_under_its_lock(sqlite: Any) -> None:
    # release() calls the store in the thread of resume() while the poll thread
    # may too: without a GIL, two "errors += 1" at once could count one.
    counted = WrittenUnderLock()

    class Spy(StoreKeeper):
        errors = counted  # type: ignore[assignment]

    store = sqlite(recording=True)
    keeper = Spy(store, False, LEASE, 1.0, ContainedLogger(logging.getLogger("t")), "t")
    counted.armed = True
    released = [StoredTask("k", None, False, None, "", 0.0)]
    store.failing = True
    keeper.release(released)
    store.failing = False
    keeper.release(released)

    assert keeper.errors == 1
    assert counted.unlocked == []
    keeper.finish(0.0)


def test_finish_closes_a_store_it_made_even_if_its_last_sync_raises(
    sqlite: Any,
) -> None:
    store = sqlite()
    logger = ContainedLogger(logging.getLogger("test"))
    keeper = StoreKeeper(store, True, LEASE, 1.0, logger, "test")
    keeper.arrived(UnreadableResult())  # type: ignore[arg-type]

    with pytest.raises(RuntimeError, match="no result"):
        keeper.finish(0.0)

    with pytest.raises(StoreError, match="closed"):
        store.records()


def test_resume_failing_half_way_undoes_its_futures_and_releases_every_record(
    executors: list[Any], sqlite: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    sqlite(clock=clock, owner="dead").add(
        [NewRecord(f"k{i}", f"t{i}") for i in range(3)], LEASE
    )
    clock.now += LEASE
    store = sqlite(recording=True, clock=clock)
    service = Service()
    executor = PollExecutor(Executors.sync(), service, store=store, lease=LEASE)
    executors.append(executor)
    attached = executor._attached
    calls = 0

    def failing_second(result: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:  # the executor shut down meanwhile, say
            raise RuntimeError("cannot schedule new futures after shutdown")
        return attached(result)

    monkeypatch.setattr(executor, "_attached", failing_second)

    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.resume()

    assert [t.owner for t in store.records()] == ["", "", ""]
    claimed = sqlite(clock=clock).claim(LEASE)  # at once: no lease to wait for
    assert sorted(t.key for t in claimed) == ["k0", "k1", "k2"]
    stats = executor.stats()  # the future made first: cancelled here alone
    assert (stats.submitted, stats.cancelled) == (1, 1)
    executor.shutdown()
    assert service.calls.empty()  # never polled
    assert "remove" not in [name for name, _ in list(store.calls.queue)]


class SlowRenewal(Recording):
    """A Recording whose ``renew`` takes ``seconds`` (a store under load)."""

    def __init__(self, store: Any, seconds: float) -> None:
        super().__init__(store)
        self.seconds = seconds
        self.renewals = 0

    def renew(self, keys: Any, lease: float) -> Any:
        time.sleep(self.seconds)  # the slow statement (not a synchronisation)
        held = super().renew(keys, lease)
        self.renewals += 1
        return held


def test_a_renewal_slower_than_a_third_of_the_lease_lets_rounds_begin(
    executors: list[Any], sqlite: Any
) -> None:
    store = SlowRenewal(sqlite(), seconds=0.2)  # a third of the lease: 0.1 s

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        if store.renewals >= 2:  # polled after its renewals too
            for descriptor in descriptors:
                descriptor.yield_result(descriptor.result)
        return 0.01

    executor = PollExecutor(Executors.sync(), poll, store=store, lease=0.3)
    executors.append(executor)

    assert executor.submit(identity, "t").result(timeout=TIMEOUT) == "t"
