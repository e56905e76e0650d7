"""The process that tests/test_durable_crash.py kills: it starts tasks at a service
kept in an SQLite file (which outlives it, as a remote service outlives its
clients), polls them through a PollExecutor with a store, and prints a line as
each start call returns, until the test kills it with SIGKILL.

``python durable_child.py STORE SERVICE TASKS``
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
from typing import Any

from fluent_executors import Executors, PollDescriptor, PollExecutor
from fluent_executors.stores import SQLiteStore

QUEUE = "crash"
LEASE = 60.0  # seconds: the test's resume() reads the store on a clock past it
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
        with self._lock:
            rows = self._db.execute(
                "UPDATE tasks SET checks = checks + 1 WHERE id IN "
                "(SELECT value FROM json_each(?)) RETURNING id, checks",
                (json.dumps(tasks),),
            ).fetchall()
        return {task: checks >= 2 for task, checks in rows}

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


def main(store_path: str, service_path: str, count: int) -> None:
    service = FileService(service_path)
    lock = threading.Lock()

    def start(payload: str) -> int:
        task = service.start(payload)
        with lock:  # one whole line at a time
            print(task, flush=True)
        return task

    executor = PollExecutor(
        Executors.thread_pool(4),
        poll_with(service),
        default_interval=INTERVAL,
        store=SQLiteStore(store_path, queue=QUEUE),
        lease=LEASE,
    )
    futures = [executor.submit(start, f"payload-{i}") for i in range(count)]
    for future in futures:
        future.result()
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
