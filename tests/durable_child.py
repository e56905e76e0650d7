"""The processes of tests/test_durable_crash.py: each starts tasks at a service
kept in an SQLite file (which outlives them, as a remote service outlives its
clients), polls them through a PollExecutor with a store, and prints a line as
each start call returns, until the test kills it with SIGKILL.

``python durable_child.py sqlite STORE SERVICE TASKS LOG``: one process, an
SQLite store; it also appends to the file LOG a line as each start call returns
(``returned ID``) and as each write of the store ends (``written [ID, ...]``),
each line one write to the file, which a SIGKILL does not lose.

``python durable_child.py share CONNINFO QUEUE SERVICE TASKS``: one of several
processes sharing a PostgreSQL store: once its own tasks are done and the test
has written a line to its standard input (when the one it kills is dead and the
store holds its records alone), it reads the store's clock past every lease and
takes over (``resume()``) those of dead processes, until the store holds no
record.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import wait
from typing import Any

from fluent_executors import Executors, PollDescriptor, PollExecutor
from fluent_executors.stores import (
    NewRecord,
    PostgresStore,
    RecordError,
    SQLiteStore,
    Store,
)

QUEUE = "crash"
LEASE = 60.0  # seconds: the test's resume() reads the store on a clock past it
# Seconds: the lease of the processes sharing a store, long enough that no stall
# of a loaded machine outlasts it. Once told to go on, the survivors read the
# store's clock that much later (the processes' own records are gone by then), so
# the dead one's leases have run out at once, without a wait.
SHARED_LEASE = 600.0
INTERVAL = 0.005  # seconds between polls


class FileService:
    """A task service in an SQLite file: a task ends at its second status check;
    each check is counted, so that the test knows which tasks were ever polled."""

    def __init__(self, path: str) -> None:
        self._db = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=30.0
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS tasks (id INTEGER PRIMARY KEY, "
            "payload TEXT NOT NULL, checks INTEGER NOT NULL DEFAULT 0)"
        )
        # Each check of a task, in order, and the process that made it.
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS checks (seq INTEGER PRIMARY KEY, "
            "task INTEGER NOT NULL, process INTEGER NOT NULL)"
        )
        self._lock = threading.Lock()

    def start(self, payload: str) -> int:
        """Start a task; its identifier."""
        with self._lock:
            (task,) = self._db.execute(
                "INSERT INTO tasks (payload) VALUES (?) RETURNING id", (payload,)
            ).fetchone()
        return int(task)

    def status(self, tasks: list[int]) -> dict[int, bool]:
        """Whether each task has ended (one request, which counts a check)."""
        ids = json.dumps(tasks)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute(
                "INSERT INTO checks (task, process) SELECT value, ? FROM json_each(?)",
                (os.getpid(), ids),
            )
            rows = self._db.execute(
                "UPDATE tasks SET checks = checks + 1 WHERE id IN "
                "(SELECT value FROM json_each(?)) RETURNING id, checks",
                (ids,),
            ).fetchall()
            self._db.execute("COMMIT")
        return {task: checks >= 2 for task, checks in rows}

    def checkers(self) -> dict[int, list[int]]:
        """The processes that checked each task, in the order of the checks."""
        with self._lock:
            rows = self._db.execute(
                "SELECT task, process FROM checks ORDER BY seq"
            ).fetchall()
        found: dict[int, list[int]] = {}
        for task, process in rows:
            found.setdefault(task, []).append(process)
        return found

    def tasks(self) -> dict[int, tuple[str, int]]:
        """Every task started: its payload and its checks."""
        with self._lock:
            rows = self._db.execute("SELECT id, payload, checks FROM tasks").fetchall()
        return {task: (payload, checks) for task, payload, checks in rows}

    def close(self) -> None:
        self._db.close()


def poll_with(service: FileService) -> Any:
    """The poll function of ``service``'s tasks."""

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        ended = service.status([d.result for d in descriptors])
        for descriptor in descriptors:
            if ended.get(descriptor.result):
                descriptor.yield_result()
        return INTERVAL

    return poll


class Log:
    """A file of events, one line each, each line one ``write`` (kept by the
    system however the process ends)."""

    def __init__(self, path: str | None) -> None:
        self._fd = None if path is None else os.open(path, os.O_WRONLY | os.O_APPEND)

    def event(self, line: str) -> None:
        if self._fd is not None:
            os.write(self._fd, f"{line}\n".encode())


class LoggedStore(SQLiteStore):
    """An SQLite store that logs the start results of each write once it has
    ended (committed)."""

    def __init__(self, path: str, log: Log) -> None:
        super().__init__(path, queue=QUEUE)
        self._log = log

    def add(self, records: Sequence[NewRecord], lease: float) -> dict[str, RecordError]:
        failed = super().add(records, lease)
        written = [r.result for r in records if r.key not in failed]
        self._log.event(f"written {json.dumps(written)}")
        return failed


def run(
    store: Store, service_path: str, count: int, lease: float, log: Log
) -> PollExecutor[Any]:
    """Start ``count`` tasks through a poll executor with ``store``, and wait for
    them; the executor."""
    service = FileService(service_path)
    lock = threading.Lock()

    def start(payload: str) -> int:
        task = service.start(payload)
        log.event(f"returned {task}")
        with lock:  # one whole line at a time
            print(task, flush=True)
        return task

    executor = PollExecutor(
        Executors.thread_pool(4),
        poll_with(service),
        default_interval=INTERVAL,
        store=store,
        lease=lease,
    )
    futures = [executor.submit(start, f"{os.getpid()}-{i}") for i in range(count)]
    wait(futures)
    print("done", flush=True)
    return executor


def share(store: Store, service_path: str, count: int, later: list[float]) -> None:
    """:func:`run`, then, told to go on, move the store's clock past the leases
    (``later``, the seconds it adds) and take over the tasks of dead processes
    until the store holds none (each resume() waits for what it took)."""
    executor = run(store, service_path, count, SHARED_LEASE, Log(None))
    sys.stdin.readline()
    later[0] = SHARED_LEASE + 1.0
    pause = threading.Event()
    while store.records():
        wait(executor.resume())
        pause.wait(INTERVAL * 10)  # for the tasks that another process took over
    executor.shutdown()


if __name__ == "__main__":
    if sys.argv[1] == "sqlite":
        log = Log(sys.argv[5])
        run(LoggedStore(sys.argv[2], log), sys.argv[3], int(sys.argv[4]), LEASE, log)
    else:
        later = [0.0]  # seconds added to the store's clock
        store = PostgresStore(
            sys.argv[2], queue=sys.argv[3], clock=lambda: time.time() + later[0]
        )
        share(store, sys.argv[4], int(sys.argv[5]), later)
