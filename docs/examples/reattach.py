"""Pick remote tasks up again after a crash (docs/durable.rst; docs/poll.rst,
"Re-attaching after a restart").

A first process publishes tasks to a remote service through a poll executor whose
store is an SQLite file: each task's identifier is written there before it is
polled. Once ``--stop-after`` tasks are stored, the process is killed
(``SIGKILL``), leaving the remote tasks running. A second process, under the same
owner, calls ``resume()``: it gets a future for every stored task (nothing is
published again), publishes only the payloads it has no record of, and ends with
every task resolved, each published exactly once. Each process records the
results it gets in a file of its own (``results.db``), as a real program would.

The remote service is a fake kept in a third SQLite file, so that it outlives
the processes using it, as a real service does:
``python docs/examples/reattach.py --tasks 20 --stop-after 8``.
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from fluent_executors import Executors, PollDescriptor, PollExecutor
from fluent_executors.stores import SQLiteStore

OWNER = "reattach-example"  # the store's owner, the same after a restart


def connect(path: Path) -> sqlite3.Connection:
    """An SQLite file usable from any thread (sqlite serialises access)."""
    return sqlite3.connect(
        path, check_same_thread=False, isolation_level=None, timeout=30.0
    )


class FakeService:
    """A remote service in an SQLite file: a task ends at its second status
    check, with its payload upper-cased."""

    def __init__(self, path: Path) -> None:
        self._db = connect(path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS tasks (id INTEGER PRIMARY KEY, "
            "payload TEXT NOT NULL, checks INTEGER NOT NULL DEFAULT 0)"
        )
        self._lock = threading.Lock()

    def publish(self, payload: str) -> int:
        """Start a task for ``payload``; return its identifier."""
        with self._lock:
            (task,) = self._db.execute(
                "INSERT INTO tasks (payload) VALUES (?) RETURNING id", (payload,)
            ).fetchone()
        return int(task)

    def status(self, tasks: list[int]) -> dict[int, str | None]:
        """The result of each task, or ``None`` while it runs (one request)."""
        answers: dict[int, str | None] = {}
        with self._lock:
            for task in tasks:
                (payload, checks) = self._db.execute(
                    "UPDATE tasks SET checks = checks + 1 WHERE id = ? "
                    "RETURNING payload, checks",
                    (task,),
                ).fetchone()
                answers[task] = payload.upper() if checks >= 2 else None
        return answers

    def publishes(self) -> dict[str, int]:
        """How many times each payload was published."""
        with self._lock:
            rows = self._db.execute(
                "SELECT payload, count(*) FROM tasks GROUP BY payload"
            ).fetchall()
        return dict(rows)

    def close(self) -> None:
        self._db.close()


class Process:
    """One run of the program: a poll executor over the service, with a store."""

    def __init__(self, directory: Path) -> None:
        self.service = FakeService(directory / "service.db")
        self.results = connect(directory / "results.db")
        self.results.execute(
            "CREATE TABLE IF NOT EXISTS results (payload TEXT PRIMARY KEY, result TEXT)"
        )
        self.store = SQLiteStore(directory / "tasks.db", owner=OWNER)
        self.polled: set[int] = set()
        self._polled_changed = threading.Condition()
        self.executor: PollExecutor[Any] = PollExecutor(
            Executors.thread_pool(4),
            self.poll,
            default_interval=0.01,
            store=self.store,
        )

    def publish(self, payload: str) -> dict[str, Any]:
        """The start call: publish; its result, which the store keeps, says which
        payload the task is for."""
        return {"payload": payload, "task": self.service.publish(payload)}

    def poll(self, descriptors: list[PollDescriptor[dict[str, Any]]]) -> float:
        """Check every polled task in one request; resolve the ended ones. (A
        task is polled only once its identifier is stored.)"""
        answers = self.service.status([d.result["task"] for d in descriptors])
        for descriptor in descriptors:
            result = answers[descriptor.result["task"]]
            if result is not None:
                descriptor.yield_result({**descriptor.result, "result": result})
        with self._polled_changed:
            self.polled.update(d.result["task"] for d in descriptors)
            self._polled_changed.notify_all()
        return 0.01

    def record(self, future: Future[dict[str, Any]]) -> None:
        """A done callback: record the result of a task that ended."""
        outcome = future.result()
        self.results.execute(
            "INSERT OR REPLACE INTO results VALUES (?, ?)",
            (outcome["payload"], outcome["result"]),
        )

    def recorded(self) -> dict[str, str]:
        """Every result recorded, by payload."""
        return dict(self.results.execute("SELECT payload, result FROM results"))

    def wait_polled(self, count: int) -> None:
        """Wait until ``count`` tasks have been polled (so stored)."""
        with self._polled_changed:
            self._polled_changed.wait_for(lambda: len(self.polled) >= count, 30.0)

    def close(self) -> None:
        self.executor.shutdown()
        self.store.close()
        self.results.close()
        self.service.close()


def first_run(directory: Path, stop_after: int) -> None:
    """In a child process: publish the first ``stop_after`` payloads, then be
    killed once all of them are stored, as a crash would kill it."""
    child = subprocess.Popen(
        [sys.executable, __file__, "--first-run", str(directory), str(stop_after)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    child.stdout.readline()  # "stored"
    child.kill()  # SIGKILL: no shutdown, no cleanup
    child.wait()
    child.stdout.close()
    assert child.stdin is not None
    child.stdin.close()


def crashing(directory: Path, stop_after: int) -> None:
    """The first process: publish ``stop_after`` payloads, say when they are all
    stored, and wait to be killed."""
    process = Process(directory)
    for i in range(stop_after):
        future = process.executor.submit(process.publish, f"payload-{i}")
        future.add_done_callback(process.record)
    process.wait_polled(stop_after)
    print("stored", flush=True)
    sys.stdin.read()  # until killed


def second_run(directory: Path, payloads: list[str]) -> dict[str, str]:
    """Resume every stored task, publish the payloads with no record; return
    every result."""
    process = Process(directory)
    futures: list[Future[dict[str, Any]]] = []
    handled = set(process.recorded())
    for resumed, task in process.executor.resume().items():  # stored before
        futures.append(resumed)
        handled.add(task.result["payload"])
    for payload in payloads:
        if payload not in handled:
            futures.append(process.executor.submit(process.publish, payload))
    for future in futures:
        future.add_done_callback(process.record)
    for future in futures:
        future.result(30.0)
    process.executor.shutdown()  # every callback has run
    results = process.recorded()
    process.close()
    return results


def run(tasks: int, stop_after: int, directory: Path) -> tuple[dict[str, str], int]:
    """Both runs against one service; return the results and the highest number
    of publishes of one payload."""
    payloads = [f"payload-{i}" for i in range(tasks)]
    first_run(directory, stop_after)
    results = second_run(directory, payloads)
    service = FakeService(directory / "service.db")
    most = max(service.publishes().values())
    service.close()
    return results, most


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Pick remote tasks up again after a crash."
    )
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--stop-after", type=int, default=8)
    parser.add_argument("--first-run", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.first_run:
        crashing(Path(args.first_run[0]), int(args.first_run[1]))
        return
    with tempfile.TemporaryDirectory() as directory:
        results, most = run(args.tasks, args.stop_after, Path(directory))
    print(f"{len(results)} tasks resolved; most publishes of one payload: {most}")


if __name__ == "__main__":
    main()
