"""The stores of durable polling (fluent_executors.stores): SQLiteStore always,
PostgresStore against a server the tests start (tests/postgres_server.py), each
through the same tests of the Store protocol; leases run on a clock the tests
move, never on sleeps."""

from __future__ import annotations

import gc
import json
import math
import socket
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from postgres_server import PostgresServer
from store_doubles import LEASE, Clock
from wrapper_doubles import TIMEOUT

from fluent_executors.stores import (
    NewRecord,
    PostgresStore,
    RecordError,
    SQLiteStore,
    Store,
    StoreError,
)

MakeStore = Callable[..., Any]


@pytest.fixture(params=["sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeStore]:
    """Makes stores of one queue, new to this test, in one database: each call a
    new store object (a new connection, a new owner unless told)."""
    queue = f"queue-{uuid.uuid4().hex}"
    made: list[Any] = []
    if request.param == "sqlite":
        path = tmp_path / "tasks.db"

        def build(**options: Any) -> Any:
            return SQLiteStore(path, **{"queue": queue, **options})

    else:
        server: PostgresServer = request.getfixturevalue("postgres_server")

        def build(**options: Any) -> Any:
            return PostgresStore(server.conninfo, **{"queue": queue, **options})

    def make(**options: Any) -> Any:
        store = build(**options)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


def test_a_store_follows_the_protocol(make_store: MakeStore) -> None:
    store: Store = make_store()

    assert store.queue.startswith("queue-")
    assert store.owner


def test_added_records_are_held_by_their_owner_for_the_lease(
    make_store: MakeStore,
) -> None:
    clock = Clock()
    store = make_store(clock=clock, owner="one")

    failed = store.add(
        [NewRecord("a", {"task": 1}), NewRecord("b", "task-2", label="input b")], LEASE
    )

    assert failed == {}
    found = {task.key: task for task in store.records()}
    assert sorted(found) == ["a", "b"]
    assert found["a"].result == {"task": 1}
    assert found["b"].result == "task-2"
    assert found["b"].label == "input b"
    assert {t.owner for t in found.values()} == {"one"}
    assert {t.expires for t in found.values()} == {clock.now + LEASE}
    assert not any(t.intent or t.error for t in found.values())


def test_an_unserialisable_result_fails_that_record_alone(
    make_store: MakeStore,
) -> None:
    store = make_store()

    failed = store.add([NewRecord("bad", object()), NewRecord("good", 1)], LEASE)

    assert list(failed) == ["bad"]
    assert isinstance(failed["bad"], RecordError)
    assert failed["bad"].key == "bad"
    assert "cannot store the start result" in str(failed["bad"])
    assert isinstance(failed["bad"].__cause__, TypeError)
    assert [t.key for t in store.records()] == ["good"]


def test_an_intent_is_replaced_by_its_start_result_and_keeps_its_label(
    make_store: MakeStore,
) -> None:
    store = make_store()
    store.add([NewRecord("k", intent=True, label="input 7")], LEASE)
    (intent,) = store.records()
    assert (intent.intent, intent.result, intent.label) == (True, None, "input 7")

    store.add([NewRecord("k", "task-7")], LEASE)

    (task,) = store.records()
    assert (task.intent, task.result, task.label) == (False, "task-7", "input 7")


def test_a_result_of_none_is_no_intent(make_store: MakeStore) -> None:
    store = make_store()

    store.add([NewRecord("k", None)], LEASE)

    (task,) = store.records()
    assert (task.intent, task.result) == (False, None)


def test_removed_records_are_gone_and_missing_keys_are_no_error(
    make_store: MakeStore,
) -> None:
    store = make_store()
    store.add([NewRecord(key, key) for key in "abcd"], LEASE)

    store.remove(["a", "c", "missing"])
    store.remove([])

    assert sorted(t.key for t in store.records()) == ["b", "d"]


def test_no_record_is_claimed_before_its_lease_runs_out(make_store: MakeStore) -> None:
    clock = Clock()
    writer = make_store(clock=clock)
    other = make_store(clock=clock)
    writer.add([NewRecord("a", 1)], LEASE)

    clock.now += LEASE - 0.001

    assert other.claim(LEASE) == []


def test_an_expired_record_is_claimed_with_a_new_lease(make_store: MakeStore) -> None:
    clock = Clock()
    writer = make_store(clock=clock, owner="dead")
    other = make_store(clock=clock, owner="alive")
    writer.add([NewRecord("a", [1, 2], label="x")], LEASE)

    clock.now += LEASE  # run out: free to take, with no further grace
    (task,) = other.claim(10.0)

    assert (task.key, task.result, task.label) == ("a", [1, 2], "x")
    assert (task.owner, task.expires) == ("alive", clock.now + 10.0)
    assert other.claim(10.0) == []  # held now
    assert writer.renew(["a"], LEASE) == 0  # the dead owner's lease is gone
    assert [t.owner for t in writer.records()] == ["alive"]


def test_an_owner_restarted_takes_its_records_back_at_once(
    make_store: MakeStore,
) -> None:
    clock = Clock()
    make_store(clock=clock, owner="publisher").add([NewRecord("a", 1)], LEASE)
    others = make_store(clock=clock)

    restarted = make_store(clock=clock, owner="publisher")

    assert others.claim(LEASE, mine=True) == []  # its lease runs
    assert restarted.claim(LEASE) == []
    assert [t.key for t in restarted.claim(LEASE, mine=True)] == ["a"]


def test_renewing_extends_the_owners_records_of_the_keys_only(
    make_store: MakeStore,
) -> None:
    clock = Clock()
    mine = make_store(clock=clock, owner="mine")
    theirs = make_store(clock=clock)
    mine.add([NewRecord("a", 1), NewRecord("b", 2), NewRecord("old", 0)], LEASE)
    theirs.add([NewRecord("c", 3)], LEASE)
    restarted = make_store(clock=clock, owner="mine")  # "old": an earlier life's

    clock.now += LEASE - 1
    assert restarted.renew(["a", "b", "c"], LEASE) == 2
    assert restarted.renew([], LEASE) == 0
    clock.now += 1

    claimed = make_store(clock=clock).claim(LEASE)
    assert sorted(t.key for t in claimed) == ["c", "old"]


def test_released_records_are_held_by_no_one_and_claimed_at_once(
    make_store: MakeStore,
) -> None:
    clock = Clock()
    mine = make_store(clock=clock)
    theirs = make_store(clock=clock)
    mine.add([NewRecord("a", 1), NewRecord("b", 2)], LEASE)
    theirs.add([NewRecord("c", 3)], LEASE)

    mine.release(["a", "c", "missing"])  # "c" is not its own: left as it is

    assert mine.renew(["a", "b"], LEASE) == 1  # "b" alone
    assert {t.key: t.owner for t in mine.records()}["a"] == ""
    assert [t.key for t in make_store(clock=clock).claim(LEASE)] == ["a"]


def test_a_claim_takes_at_most_limit_records_expired_first(
    make_store: MakeStore,
) -> None:
    clock = Clock()
    writer = make_store(clock=clock)
    for key in ["first", "second", "third"]:
        writer.add([NewRecord(key, key)], LEASE)
        clock.now += 1
    clock.now += LEASE
    other = make_store(clock=clock)

    assert [t.key for t in other.claim(LEASE, limit=2)] == ["first", "second"]
    assert [t.key for t in other.claim(LEASE, limit=2)] == ["third"]


def test_a_corrupt_record_is_claimed_with_its_error(make_store: MakeStore) -> None:
    clock = Clock()

    class NotJson:
        @staticmethod
        def dumps(obj: object) -> str:
            return f"<{obj}>"

        @staticmethod
        def loads(text: str) -> object:
            return text

    make_store(clock=clock, serializer=NotJson()).add(
        [NewRecord("bad", 1), NewRecord("fine", intent=True)], LEASE
    )
    make_store(clock=clock).add([NewRecord("good", 2)], LEASE)
    clock.now += LEASE

    claimed = {t.key: t for t in make_store(clock=clock).claim(LEASE)}

    assert claimed["good"].result == 2
    assert claimed["fine"].intent
    assert claimed["good"].error is None
    assert claimed["fine"].error is None
    bad = claimed["bad"]
    assert bad.result is None
    assert isinstance(bad.error, RecordError)
    assert bad.error.key == "bad"
    assert "cannot read the stored start result '<1>'" in str(bad.error)
    assert isinstance(bad.error.__cause__, json.JSONDecodeError)


def test_queues_do_not_see_each_others_records(make_store: MakeStore) -> None:
    clock = Clock()
    make_store(clock=clock, queue="elsewhere").add([NewRecord("x", 1)], LEASE)
    mine = make_store(clock=clock)
    mine.add([NewRecord("y", 2)], LEASE)
    clock.now += LEASE

    assert [t.key for t in mine.records()] == ["y"]
    assert [t.key for t in make_store(clock=clock).claim(LEASE)] == ["y"]


def test_two_stores_claiming_at_once_never_get_the_same_record(
    make_store: MakeStore,
) -> None:
    clock = Clock()
    keys = [f"task-{i}" for i in range(400)]
    make_store(clock=clock).add([NewRecord(k, k) for k in keys], LEASE)
    clock.now += LEASE
    stores = [make_store(clock=clock) for _ in range(2)]
    start = threading.Barrier(len(stores))
    claimed: list[list[str]] = [[] for _ in stores]

    def claim_all(index: int) -> None:
        start.wait()
        while batch := stores[index].claim(LEASE, limit=7):
            claimed[index].extend(t.key for t in batch)

    threads = [
        threading.Thread(target=claim_all, args=(i,)) for i in range(len(stores))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(claimed[0] + claimed[1]) == sorted(keys)
    assert not set(claimed[0]) & set(claimed[1])


def test_thousands_of_records_take_one_call_each(make_store: MakeStore) -> None:
    clock = Clock()
    writer, other = make_store(clock=clock), make_store(clock=clock)
    keys = [f"task-{i}" for i in range(5_000)]

    assert writer.add([NewRecord(k, {"id": k}) for k in keys], LEASE) == {}
    assert writer.renew(keys, LEASE) == len(keys)
    clock.now += LEASE
    assert len(other.claim(LEASE)) == len(keys)
    other.remove(keys)

    assert other.records() == []


@pytest.mark.parametrize(
    ("lease", "error"),
    [
        (0, ValueError),
        (-1.0, ValueError),
        (math.nan, ValueError),
        (math.inf, ValueError),
        ("30", TypeError),
        (True, TypeError),
    ],
)
def test_a_bad_lease_is_refused_naming_it(
    make_store: MakeStore, lease: object, error: type[Exception]
) -> None:
    store = make_store()

    calls: list[Callable[[], object]] = [
        lambda: store.add([NewRecord("a", 1)], lease),
        lambda: store.renew(["a"], lease),
        lambda: store.claim(lease),
    ]
    for call in calls:
        with pytest.raises(error, match="lease"):
            call()
    assert store.records() == []


@pytest.mark.parametrize(
    ("options", "error", "named"),
    [
        ({"queue": ""}, ValueError, "queue"),
        ({"queue": 3}, TypeError, "queue"),
        ({"owner": ""}, ValueError, "owner"),
        ({"serializer": object()}, TypeError, "serializer"),
        ({"clock": 1.0}, TypeError, "clock"),
    ],
)
def test_bad_arguments_are_refused_naming_them(
    make_store: MakeStore,
    options: dict[str, object],
    error: type[Exception],
    named: str,
) -> None:
    with pytest.raises(error, match=named):
        make_store(**options)


@pytest.mark.parametrize(("limit", "error"), [(0, ValueError), (1.5, TypeError)])
def test_a_bad_limit_is_refused_naming_it(
    make_store: MakeStore, limit: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match="limit"):
        make_store().claim(LEASE, limit=limit)


def test_a_bad_key_or_label_is_refused(make_store: MakeStore) -> None:
    store = make_store()

    with pytest.raises(TypeError, match="key"):
        store.add([NewRecord("", 1)], LEASE)
    with pytest.raises(TypeError, match="label"):
        store.add([NewRecord("a", 1, label=3)], LEASE)  # type: ignore[arg-type]


def test_a_closed_store_raises_store_error(make_store: MakeStore) -> None:
    store = make_store()
    store.close()
    store.close()  # harmless

    with pytest.raises(StoreError, match="closed"):
        store.records()


def test_the_sqlite_file_is_in_wal_mode(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "t.db") as store:
        mode = store._db.execute("PRAGMA journal_mode").fetchone()[0]

    assert mode == "wal"


def test_an_sqlite_file_that_cannot_be_opened_raises_store_error(
    tmp_path: Path,
) -> None:
    with pytest.raises(StoreError, match="cannot open"):
        SQLiteStore(tmp_path / "missing" / "t.db")


def test_an_sqlite_file_that_is_no_database_raises_store_error_and_is_closed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.db"
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(StoreError, match="make its table") as raised:
        SQLiteStore(path)
    del raised
    gc.collect()  # an open connection would warn here (ResourceWarning)


def test_an_sqlite_store_locked_by_another_writer_raises_store_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.db"
    with SQLiteStore(path, timeout=0.0) as store:
        with SQLiteStore(path) as other:
            other._db.execute("BEGIN IMMEDIATE")
            with pytest.raises(StoreError, match="could not add records"):
                store.add([NewRecord("a", 1)], LEASE)
            other._db.execute("ROLLBACK")

        store.add([NewRecord("a", 1)], LEASE)  # and again once free
        assert [t.key for t in store.records()] == ["a"]


def test_a_bad_path_is_refused_naming_it() -> None:
    with pytest.raises(TypeError, match="path"):
        SQLiteStore(3)  # type: ignore[arg-type]


def test_an_unreachable_server_raises_store_error() -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(StoreError, match="could not make its table"):
        PostgresStore("host=127.0.0.1 port=1 dbname=x connect_timeout=5")


def test_a_postgres_store_whose_table_cannot_be_made_closes_its_connection(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    schema = f"s{uuid.uuid4().hex}"
    with psycopg.connect(postgres_server.conninfo, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        # A view of the table's name: its index cannot be made.
        admin.execute(f"CREATE VIEW {schema}.fluent_executors_tasks AS SELECT 1 AS x")
    opened: list[Any] = []
    connect = psycopg.connect

    def recording(*args: Any, **kwargs: Any) -> Any:
        opened.append(connect(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(psycopg, "connect", recording)
    conninfo = f"{postgres_server.conninfo} options='-c search_path={schema}'"

    with pytest.raises(StoreError, match="could not make its table"):
        PostgresStore(conninfo)

    (connection,) = opened
    assert connection.closed


def test_a_postgres_store_reconnects_after_a_server_restart(
    postgres_server: PostgresServer,
) -> None:
    with PostgresStore(postgres_server.conninfo, queue=uuid.uuid4().hex) as store:
        store.add([NewRecord("a", 1)], LEASE)

        postgres_server.restart()

        with pytest.raises(StoreError, match="could not read records"):
            store.records()  # the call that finds the connection lost
        store.add([NewRecord("b", 2)], LEASE)
        assert sorted(t.key for t in store.records()) == ["a", "b"]


@pytest.mark.parametrize("timeout", [0, -1.0, math.nan, math.inf])
def test_a_bad_postgres_timeout_is_refused_naming_it(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout must be a finite number of seconds"):
        PostgresStore("host=127.0.0.1", timeout=timeout)


def raises_in_time(call: Callable[[], object]) -> BaseException:
    """What ``call`` raises, run in a thread of its own; it must not block."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as error:
            raised.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(TIMEOUT)
    assert not thread.is_alive(), "the call blocks"
    (error,) = raised
    return error


def test_a_postgres_server_that_accepts_and_never_answers_fails_the_call() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        conninfo = f"host=127.0.0.1 port={port} user=x dbname=x"

        error = raises_in_time(lambda: PostgresStore(conninfo, timeout=0.5))

    assert isinstance(error, StoreError)
    assert "ConnectionTimeout" in str(error)


class FreezingProxy:
    """A TCP proxy to a server that holds the bytes it is given while
    ``thawed`` is clear: a server that stops answering, its kernel still taking
    the bytes (a frozen machine)."""

    def __init__(self, port: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.server_port = port
        self.thawed = threading.Event()
        self.thawed.set()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            server = socket.create_connection(("127.0.0.1", self.server_port))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(
                    target=self._pass, args=(source, sink), daemon=True
                ).start()

    def _pass(self, source: socket.socket, sink: socket.socket) -> None:
        with source, sink:
            try:
                while data := source.recv(65536):
                    self.thawed.wait()
                    sink.sendall(data)
            except OSError:  # the other side is shut
                return

    def close(self) -> None:
        self.thawed.set()
        self.listener.close()


def test_a_postgres_server_frozen_mid_run_fails_the_call_and_is_reconnected(
    postgres_server: PostgresServer,
) -> None:
    proxy = FreezingProxy(postgres_server.port)
    conninfo = f"host=127.0.0.1 port={proxy.port} user=postgres dbname=postgres"
    try:
        with PostgresStore(conninfo, queue=uuid.uuid4().hex, timeout=0.5) as store:
            store.add([NewRecord("a", 1)], LEASE)
            proxy.thawed.clear()

            error = raises_in_time(store.records)

            assert isinstance(error, StoreError)
            proxy.thawed.set()
            assert [task.key for task in store.records()] == ["a"]
    finally:
        proxy.close()


def test_postgres_writes_one_statement_per_call(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    with PostgresStore(
        postgres_server.conninfo, queue=uuid.uuid4().hex, clock=clock
    ) as store:
        statements: list[str] = []
        execute = store._db.execute

        def counting(sql: str, *args: Any, **kwargs: Any) -> Any:
            statements.append(sql)
            return execute(sql, *args, **kwargs)

        monkeypatch.setattr(store._db, "execute", counting)
        keys = [f"task-{i}" for i in range(1_000)]
        store.add([NewRecord(k, k) for k in keys], LEASE)
        store.renew(keys, LEASE)
        store.release(keys[:500])
        clock.now += LEASE
        store.claim(LEASE)
        store.remove(keys)

    assert len(statements) == 5


def test_sqlite_writes_one_statement_per_call(tmp_path: Path) -> None:
    clock = Clock()
    with SQLiteStore(tmp_path / "t.db", clock=clock) as store:
        statements: list[str] = []
        store._db.set_trace_callback(statements.append)
        keys = [f"task-{i}" for i in range(1_000)]
        store.add([NewRecord(k, k) for k in keys], LEASE)
        store.renew(keys, LEASE)
        store.release(keys[:500])
        clock.now += LEASE
        store.claim(LEASE)
        store.remove(keys)

    transactions = ("BEGIN IMMEDIATE", "COMMIT")
    assert len([s for s in statements if s not in transactions]) == 5


class FailingConnection:
    """An SQLite connection whose next statement starting with ``failing``
    raises ``error``, after a rollback of SQLite's own if ``rolled_back``."""

    def __init__(
        self, db: Any, failing: str, error: str, *, rolled_back: bool = False
    ) -> None:
        self.db, self.failing, self.error = db, failing, error
        self.rolled_back = rolled_back

    @property
    def in_transaction(self) -> bool:
        return bool(self.db.in_transaction)

    def execute(self, sql: str, *args: Any) -> Any:
        if self.failing and sql.startswith(self.failing):
            self.failing = ""
            if self.rolled_back:
                self.db.execute("ROLLBACK")
            raise sqlite3.OperationalError(self.error)
        return self.db.execute(sql, *args)

    def close(self) -> None:
        self.db.close()


def test_an_sqlite_commit_that_fails_leaves_no_transaction_open(
    tmp_path: Path,
) -> None:
    with SQLiteStore(tmp_path / "t.db") as store:
        store._db = FailingConnection(store._db, "COMMIT", "disk I/O error")
        with pytest.raises(StoreError, match="disk I/O error"):
            store.add([NewRecord("k1", 1)], LEASE)

        store.add([NewRecord("k2", 2)], LEASE)  # the next call works

        assert [t.key for t in store.records()] == ["k2"]


def test_an_sqlite_error_after_sqlites_own_rollback_is_the_one_raised(
    tmp_path: Path,
) -> None:
    with SQLiteStore(tmp_path / "t.db") as store:
        store._db = FailingConnection(
            store._db, "INSERT", "database or disk is full", rolled_back=True
        )
        with pytest.raises(StoreError, match="disk is full"):
            store.add([NewRecord("k1", 1)], LEASE)

        store.add([NewRecord("k2", 2)], LEASE)

        assert [t.key for t in store.records()] == ["k2"]


def test_an_sqlite_library_older_than_3_35_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 34, 1))
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.34.1")

    with pytest.raises(RuntimeError, match=r"SQLite 3\.35 or later.*3\.34\.1"):
        SQLiteStore(tmp_path / "t.db")


def test_an_sqlite_store_reads_the_clock_once_it_holds_the_write_lock(
    tmp_path: Path,
) -> None:
    events: list[str] = []

    def clock() -> float:
        events.append("clock")
        return 1_800_000_000.0

    with SQLiteStore(tmp_path / "t.db", clock=clock) as store:
        store._db.set_trace_callback(events.append)
        store.add([NewRecord("k", "t")], LEASE)
        store.renew(["k"], LEASE)
        store.claim(LEASE)

    begins = [i for i, event in enumerate(events) if event == "BEGIN IMMEDIATE"]
    assert len(begins) == 3
    for begin in begins:  # a wait for the lock does not shorten the lease
        assert events[begin + 1] == "clock"
