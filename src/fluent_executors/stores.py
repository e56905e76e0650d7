"""The stores of durable polling: where a poll executor keeps the identifiers of its
remote tasks, so that they survive a crash and several processes share them.

:class:`SQLiteStore` keeps them in an SQLite file (the standard library's
:mod:`sqlite3`), for the processes of one machine; :class:`PostgresStore` in a
PostgreSQL database (psycopg 3: ``pip install fluent-executors[postgres]``), for
processes on several machines. Both follow the
:class:`~fluent_executors.stores.Store` protocol, which a
store of another database may follow too; see the docs' "Durable polling" page.

The protocol and what it reads and writes are defined in the private
``_fluent_executors.durable``; the stores here write their SQL.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from _fluent_executors.durable import (
    TABLE,
    NewRecord,
    RecordError,
    Serializer,
    SQLStore,
    Store,
    StoredTask,
    StoreError,
    check_lease,
    check_limit,
    check_seconds,
)
from _fluent_executors.wrapper import check_non_negative

__all__ = [
    "NewRecord",
    "PostgresStore",
    "RecordError",
    "SQLiteStore",
    "Serializer",
    "Store",
    "StoreError",
    "StoredTask",
]

# The columns both stores read back, in the order SQLStore._decode takes them.
_COLUMNS = "key, data, label, owner, expires"


class SQLiteStore(SQLStore):
    """A :class:`~fluent_executors.stores.Store` in an SQLite file, for the
    processes of one machine.

    The file is opened in WAL mode (readers do not wait for the writer) with
    ``synchronous=FULL`` (a committed write survives a crash of the machine, not
    only of the process); its table is made if missing. Each call is one write
    transaction (``BEGIN IMMEDIATE``): two processes claiming at once take turns,
    and never both get a record. A call waits up to ``timeout`` seconds for
    another process's write to end, then raises
    :class:`~fluent_executors.stores.StoreError`. It needs SQLite 3.35 or
    later (``sqlite3.sqlite_version``), for ``RETURNING``, upserts and JSON.
    One store object serves one poll executor (its owner is the executor's);
    executors sharing a file each open a store of their own.

    Args:
        path: the file (``str`` or path-like), made if missing. A network file
            system does not give SQLite the locks it needs: for several machines,
            use :class:`PostgresStore`.
        queue: keyword-only, the queue's name (``str``): the records of one poll
            executor (one poll function). Default ``"default"``.
        serializer: keyword-only, turns start results into text and back
            (:class:`~fluent_executors.stores.Serializer`: ``dumps`` and
            ``loads``); default :mod:`json`.
        owner: keyword-only, the identity this store holds leases under
            (``str``), unique among the live processes sharing the store. A
            process that restarts under the same owner takes its records back
            at once (:meth:`~fluent_executors.stores.Store.claim`), without
            waiting for their lease. Default: ``host:pid:`` and a random part,
            unique to this object.
        clock: keyword-only, the wall clock, ``Callable[[], float]`` returning
            seconds since the epoch; default :func:`time.time`.
        timeout: keyword-only, seconds to wait for another connection's write
            (a float >= 0). Default 5.0.

    Raises:
        TypeError: an argument has the wrong type (named in the message).
        ValueError: ``queue`` or ``owner`` is empty; ``timeout`` is negative or
            NaN.
        StoreError: the file cannot be opened, or its table made.
        RuntimeError: the SQLite library is older than 3.35.

    .. versionadded:: 0.2.0
    """

    _driver_errors = (sqlite3.Error,)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        queue: str = "default",
        serializer: Serializer | None = None,
        owner: str | None = None,
        clock: Callable[[], float] | None = None,
        timeout: float = 5.0,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(
                f"path must be a str or path-like, got {type(path).__name__}"
            )
        wait = check_non_negative("timeout", timeout, finite=True)
        super().__init__(queue=queue, serializer=serializer, owner=owner, clock=clock)
        if sqlite3.sqlite_version_info < (3, 35):
            raise RuntimeError(
                "SQLiteStore needs SQLite 3.35 or later (RETURNING, upserts, JSON); "
                f"this Python's sqlite3 has {sqlite3.sqlite_version}"
            )
        self._path = os.fspath(path)
        try:
            # Autocommit (isolation_level=None): each call says BEGIN IMMEDIATE.
            self._db = sqlite3.connect(
                self._path, timeout=wait, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise StoreError(f"cannot open {self._path!r}: {error}") from error
        try:
            with self._calling("make its table"):
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=FULL")
                self._db.execute(
                    f"CREATE TABLE IF NOT EXISTS {TABLE} (key TEXT PRIMARY KEY, "
                    "queue TEXT NOT NULL, owner TEXT NOT NULL, "
                    "expires REAL NOT NULL, data TEXT, label TEXT)"
                )
                self._db.execute(
                    f"CREATE INDEX IF NOT EXISTS {TABLE}_due ON {TABLE} "
                    "(queue, expires)"
                )
        except BaseException:
            self.close()  # (the connection is open)
            raise

    @property
    def path(self) -> str:
        """The file's path (``str``)."""
        return self._path

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: it waits for the write
        lock first, so that it never fails half-way for another writer), rolled
        back if its body raises (the caller holds the lock)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.execute("COMMIT")  # (if it fails, the transaction is still open)
        except BaseException:
            if db.in_transaction:  # (SQLite rolls back itself on some errors)
                db.execute("ROLLBACK")
            raise

    def add(self, records: Sequence[NewRecord], lease: float) -> dict[str, RecordError]:
        """Write ``records``, in one statement for them all, passed as one JSON
        array (see :meth:`fluent_executors.stores.Store.add`)."""
        seconds = check_lease(lease)
        rows, failed = self._encode(records)
        if rows:
            # (WHERE true: an upsert's SELECT needs one, else ON reads as a join's)
            with self._calling("add records"), self._transaction() as db:
                _, expires = self._expiry(seconds)
                db.execute(
                    f"INSERT INTO {TABLE} (key, queue, owner, expires, data, label) "
                    "SELECT json_extract(value, '$[0]'), ?, ?, ?, "
                    "json_extract(value, '$[1]'), json_extract(value, '$[2]') "
                    "FROM json_each(?) WHERE true ON CONFLICT (key) DO UPDATE SET "
                    "queue = excluded.queue, owner = excluded.owner, "
                    "expires = excluded.expires, data = excluded.data, "
                    f"label = coalesce(excluded.label, {TABLE}.label)",
                    (self._queue, self._owner, expires, json.dumps(rows)),
                )
        return failed

    def remove(self, keys: Collection[str]) -> None:
        """Delete the records of ``keys``, in one statement for them all, passed
        as one JSON array (see :meth:`fluent_executors.stores.Store.remove`)."""
        if keys:
            with self._calling("remove records"), self._transaction() as db:
                db.execute(
                    f"DELETE FROM {TABLE} WHERE key IN "
                    "(SELECT value FROM json_each(?))",
                    (json.dumps(list(keys)),),
                )

    def release(self, keys: Collection[str]) -> None:
        """Let go of this owner's records of ``keys``, in one statement for them
        all (see :meth:`fluent_executors.stores.Store.release`)."""
        if keys:
            with self._calling("release records"), self._transaction() as db:
                now, _ = self._expiry(0.0)
                db.execute(
                    f"UPDATE {TABLE} SET owner = '', expires = ? WHERE owner = ? "
                    "AND key IN (SELECT value FROM json_each(?))",
                    (now, self._owner, json.dumps(list(keys))),
                )

    def renew(self, keys: Collection[str], lease: float) -> int:
        """Extend this owner's leases of ``keys``, in one statement (see
        :meth:`fluent_executors.stores.Store.renew`)."""
        seconds = check_lease(lease)
        if not keys:
            return 0
        with self._calling("renew leases"), self._transaction() as db:
            _, expires = self._expiry(seconds)
            cursor = db.execute(
                f"UPDATE {TABLE} SET expires = ? WHERE queue = ? AND owner = ? "
                "AND key IN (SELECT value FROM json_each(?))",
                (expires, self._queue, self._owner, json.dumps(list(keys))),
            )
            return cursor.rowcount

    def claim(
        self, lease: float, limit: int | None = None, *, mine: bool = False
    ) -> list[StoredTask]:
        """Take over the expired records, in one statement (see
        :meth:`fluent_executors.stores.Store.claim`)."""
        seconds = check_lease(lease)
        size = check_limit(limit)
        with self._calling("claim records"), self._transaction() as db:
            now, expires = self._expiry(seconds)
            rows = db.execute(
                f"UPDATE {TABLE} SET owner = ?, expires = ? WHERE key IN "
                f"(SELECT key FROM {TABLE} WHERE queue = ? AND "
                "(expires <= ? OR owner = ?) ORDER BY expires LIMIT ?) "
                f"RETURNING {_COLUMNS}",
                (
                    self._owner,
                    expires,
                    self._queue,
                    now,
                    self._owner if mine else None,
                    -1 if size is None else size,
                ),
            ).fetchall()
        return self._decode(rows)

    def records(self) -> list[StoredTask]:
        """Every record of the queue (see
        :meth:`fluent_executors.stores.Store.records`)."""
        with self._calling("read records"):
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM {TABLE} WHERE queue = ? ORDER BY expires",
                (self._queue,),
            ).fetchall()
        return self._decode(rows)

    def _disconnect(self) -> None:
        self._db.close()


class PostgresStore(SQLStore):
    """A :class:`~fluent_executors.stores.Store` in a PostgreSQL database, for
    processes on several machines (psycopg 3: ``pip install
    fluent-executors[postgres]``).

    Its table is made if missing. Each call is one transaction of one statement,
    its rows passed as arrays (``unnest``, ``= ANY``): one round trip whatever
    their number. A claim takes the expired records with ``SELECT ... FOR UPDATE
    SKIP LOCKED``, so that processes claiming at once take different records
    without waiting for each other. A connection lost (the server restarted) is
    made again at the next call; the call that found it lost raises
    :class:`~fluent_executors.stores.StoreError`. One store object serves one
    poll executor (its owner is the executor's); executors sharing a database
    each open a store of their own.

    No call blocks for long on a server that stops answering (a frozen machine,
    a lost network): connecting gives up after ``timeout`` seconds (at least 2,
    libpq's least ``connect_timeout``), a statement is stopped by the server
    after ``timeout`` seconds (``statement_timeout``), TCP keepalives and
    ``tcp_user_timeout`` find a dead peer, and a call that still runs a second
    after its timeout has its connection shut by the store. The call raises
    :class:`~fluent_executors.stores.StoreError`, which a poll executor treats
    as any outage of its store (its futures stay pending). Settings of these
    names in ``conninfo`` take precedence.

    Args:
        conninfo: the connection string (``str``), as psycopg's ``connect``
            takes it: ``"host=db.example dbname=tasks user=poller"`` or a
            ``postgresql://`` URL.
        queue: keyword-only, the queue's name (``str``); see
            :class:`SQLiteStore`. Default ``"default"``.
        serializer: keyword-only, see :class:`SQLiteStore`; default :mod:`json`.
        owner: keyword-only, see :class:`SQLiteStore`.
        clock: keyword-only, see :class:`SQLiteStore`: lease times are this
            process's wall clock, which every machine sharing the store must keep
            in step with the others.
        timeout: keyword-only, seconds (``float``) a call may wait for the
            server, as above. Default 5.0.

            .. versionadded:: 0.2.0

    Raises:
        TypeError: an argument has the wrong type (named in the message).
        ValueError: ``queue`` or ``owner`` is empty; ``timeout`` is not a finite
            number > 0.
        ImportError: psycopg is not installed.
        StoreError: the server cannot be reached, or the table made.

    .. versionadded:: 0.2.0
    """

    def __init__(
        self,
        conninfo: str,
        *,
        queue: str = "default",
        serializer: Serializer | None = None,
        owner: str | None = None,
        clock: Callable[[], float] | None = None,
        timeout: float = 5.0,
    ) -> None:
        if not isinstance(conninfo, str):
            raise TypeError(f"conninfo must be a str, got {type(conninfo).__name__}")
        self._timeout = check_seconds("timeout", timeout)
        super().__init__(queue=queue, serializer=serializer, owner=owner, clock=clock)
        try:
            import psycopg
            from psycopg.conninfo import conninfo_to_dict, make_conninfo
        except ImportError as error:
            raise ImportError(
                "PostgresStore needs psycopg 3: pip install fluent-executors[postgres]"
            ) from error
        self._psycopg = psycopg
        self._driver_errors = (psycopg.Error,)
        self._db: Any = None
        try:
            with self._calling("make its table"):
                # The timeouts of ``timeout``, but those conninfo sets.
                given = conninfo_to_dict(conninfo)
                seconds = math.ceil(self._timeout)  # libpq takes whole seconds
                timeouts = {
                    "connect_timeout": max(seconds, 2),
                    "keepalives": 1,
                    "keepalives_idle": seconds,
                    "keepalives_interval": max(seconds // 3, 1),
                    "keepalives_count": 3,
                    "tcp_user_timeout": math.ceil(self._timeout * 1000),  # ms
                }
                self._conninfo = make_conninfo(
                    conninfo,
                    **{name: v for name, v in timeouts.items() if name not in given},
                )
                self._statement_timeout = "statement_timeout" not in str(
                    given.get("options", "")
                )
                db = self._connection()
                with db.transaction():
                    # Two processes making the table at once would collide.
                    db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (TABLE,))
                    db.execute(
                        f"CREATE TABLE IF NOT EXISTS {TABLE} (key text PRIMARY KEY, "
                        "queue text NOT NULL, owner text NOT NULL, "
                        "expires double precision NOT NULL, data text, label text)"
                    )
                    db.execute(
                        f"CREATE INDEX IF NOT EXISTS {TABLE}_due ON {TABLE} "
                        "(queue, expires)"
                    )
        except BaseException:
            self.close()  # (the connection may be open)
            raise

    def _connection(self) -> Any:
        """The connection, made again if it was lost (the caller holds the lock),
        its statements stopped by the server after the timeout (unless the
        ``options`` of ``conninfo`` set ``statement_timeout``)."""
        if self._db is None:
            db = self._psycopg.connect(self._conninfo, autocommit=True)
            try:
                if self._statement_timeout:
                    with self._watching(db):
                        db.execute(
                            "SELECT set_config('statement_timeout', %s, false)",
                            (str(math.ceil(self._timeout * 1000)),),
                        )
            except BaseException:
                db.close()
                raise
            self._db = db
        return self._db

    @contextmanager
    def _watching(self, db: Any) -> Iterator[None]:
        """Shut the socket of ``db`` if the call within runs for a second more
        than the timeout (a server frozen, whose statement_timeout cannot act,
        whose kernel still answers TCP): the call raises, the connection is lost
        and made again at the next call. (A call ending just as it is shut
        leaves the next call to find the connection lost: one failed call.)"""
        timer = threading.Timer(self._timeout + 1.0, self._shut, (db,))
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def _shut(self, db: Any) -> None:
        """Shut the socket of the connection ``db`` (the watch's thread)."""
        try:
            with socket.socket(fileno=os.dup(db.pgconn.socket)) as connection:
                connection.shutdown(socket.SHUT_RDWR)
        except (OSError, self._psycopg.Error):  # closed already
            return

    def _failed(self, error: BaseException) -> None:
        db = self._db
        if db is not None and (db.closed or db.broken):
            db.close()
            self._db = None  # made again at the next call

    def _run(self, sql: str, params: Sequence[object]) -> Any:
        """One statement in a transaction of its own; its cursor."""
        db = self._connection()
        with self._watching(db), db.transaction():
            return db.execute(sql, params)

    def add(self, records: Sequence[NewRecord], lease: float) -> dict[str, RecordError]:
        """Write ``records``, in one statement for them all (see
        :meth:`fluent_executors.stores.Store.add`)."""
        seconds = check_lease(lease)
        rows, failed = self._encode(records)
        if rows:
            keys, data, labels = (list(column) for column in zip(*rows, strict=True))
            with self._calling("add records"):
                _, expires = self._expiry(seconds)
                self._run(
                    f"INSERT INTO {TABLE} (key, queue, owner, expires, data, label) "
                    "SELECT k, %s, %s, %s, d, l "
                    "FROM unnest(%s::text[], %s::text[], %s::text[]) AS r(k, d, l) "
                    "ON CONFLICT (key) DO UPDATE SET queue = excluded.queue, "
                    "owner = excluded.owner, expires = excluded.expires, "
                    f"data = excluded.data, label = coalesce(excluded.label, "
                    f"{TABLE}.label)",
                    (self._queue, self._owner, expires, keys, data, labels),
                )
        return failed

    def remove(self, keys: Collection[str]) -> None:
        """Delete the records of ``keys``, in one statement for them all (see
        :meth:`fluent_executors.stores.Store.remove`)."""
        if keys:
            with self._calling("remove records"):
                self._run(f"DELETE FROM {TABLE} WHERE key = ANY(%s)", (list(keys),))

    def release(self, keys: Collection[str]) -> None:
        """Let go of this owner's records of ``keys``, in one statement for them
        all (see :meth:`fluent_executors.stores.Store.release`)."""
        if keys:
            with self._calling("release records"):
                now, _ = self._expiry(0.0)
                self._run(
                    f"UPDATE {TABLE} SET owner = '', expires = %s WHERE owner = %s "
                    "AND key = ANY(%s)",
                    (now, self._owner, list(keys)),
                )

    def renew(self, keys: Collection[str], lease: float) -> int:
        """Extend this owner's leases of ``keys``, in one statement (see
        :meth:`fluent_executors.stores.Store.renew`)."""
        seconds = check_lease(lease)
        if not keys:
            return 0
        with self._calling("renew leases"):
            _, expires = self._expiry(seconds)
            cursor = self._run(
                f"UPDATE {TABLE} SET expires = %s WHERE queue = %s AND owner = %s "
                "AND key = ANY(%s)",
                (expires, self._queue, self._owner, list(keys)),
            )
            return int(cursor.rowcount)

    def claim(
        self, lease: float, limit: int | None = None, *, mine: bool = False
    ) -> list[StoredTask]:
        """Take over the expired records, in one statement (``FOR UPDATE SKIP
        LOCKED``; see :meth:`fluent_executors.stores.Store.claim`)."""
        seconds = check_lease(lease)
        size = check_limit(limit)
        with self._calling("claim records"):
            now, expires = self._expiry(seconds)
            rows = self._run(
                f"WITH due AS (SELECT key FROM {TABLE} WHERE queue = %s AND "
                "(expires <= %s OR owner = %s) ORDER BY expires LIMIT %s "
                "FOR UPDATE SKIP LOCKED) "
                f"UPDATE {TABLE} AS t SET owner = %s, expires = %s FROM due "
                f"WHERE t.key = due.key RETURNING t.key, t.data, t.label, t.owner, "
                "t.expires",
                (
                    self._queue,
                    now,
                    self._owner if mine else None,
                    size,
                    self._owner,
                    expires,
                ),
            ).fetchall()
        return self._decode(rows)

    def records(self) -> list[StoredTask]:
        """Every record of the queue (see
        :meth:`fluent_executors.stores.Store.records`)."""
        with self._calling("read records"):
            rows = self._run(
                f"SELECT {_COLUMNS} FROM {TABLE} WHERE queue = %s ORDER BY expires",
                (self._queue,),
            ).fetchall()
        return self._decode(rows)

    def _disconnect(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
