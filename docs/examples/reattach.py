"""Re-attach to remote tasks after a restart (docs/poll.rst, "Re-attaching after a
restart").

A first process publishes tasks to a remote service and stores each task's
identifier in a sqlite file as soon as the publish returns. It stops mid-run,
after ``--stop-after`` tasks are stored, leaving the remote tasks running. A second
process reads the file, re-attaches a future to every stored task with
``PollExecutor.attach`` (nothing is published again) and publishes only the
payloads that were never stored. It ends with every task resolved, each published
exactly once.

The remote service is an in-process fake so that the example runs anywhere:
``python docs/examples/reattach.py --tasks 20 --stop-after 8``.
"""

from __future__ import annotations

import argparse
import collections
import sqlite3
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from fluent_executors import Executors, PollDescriptor, PollExecutor


class FakeService:
    """A remote service that outlives the processes using it: a task ends at the
    second status check after its publish, with the payload upper-cased."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: dict[str, tuple[str, int]] = {}  # task id: payload, checks
        self.publishes: collections.Counter[str] = collections.Counter()

    def publish(self, payload: str) -> str:
        """Start a task for ``payload``; return its identifier."""
        with self._lock:
            self.publishes[payload] += 1
            task_id = f"task-{len(self._tasks)}"
            self._tasks[task_id] = (payload, 0)
            return task_id

    def status(self, task_ids: list[str]) -> dict[str, str | None]:
        """The result of each task, or ``None`` while it runs (one request)."""
        answers: dict[str, str | None] = {}
        with self._lock:
            for task_id in task_ids:
                payload, checks = self._tasks[task_id]
                self._tasks[task_id] = (payload, checks + 1)
                answers[task_id] = payload.upper() if checks >= 1 else None
        return answers


def open_store(path: Path) -> sqlite3.Connection:
    """The sqlite file of published tasks: one row per payload, its task id, and
    its result once known. Usable from any thread (sqlite serialises access)."""
    store = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    store.execute(
        "CREATE TABLE IF NOT EXISTS tasks "
        "(payload TEXT PRIMARY KEY, task_id TEXT NOT NULL, result TEXT)"
    )
    return store


class Process:
    """One run of the program: a poll executor over the service, and the store."""

    def __init__(self, service: FakeService, store_path: Path) -> None:
        self.service = service
        self.store = open_store(store_path)
        self._lock = threading.Lock()  # one sqlite statement at a time
        self._inserted = threading.Condition(self._lock)
        self.publishes = 0  # by this process
        self.executor: PollExecutor[Any] = Executors.thread_pool(
            max_workers=4
        ).with_poll(self.poll, default_interval=0.01)

    def poll(self, descriptors: list[PollDescriptor[str]]) -> float:
        """Check every polled task in one request; resolve the ended ones."""
        answers = self.service.status([d.result for d in descriptors])
        for descriptor in descriptors:
            result = answers[descriptor.result]
            if result is not None:
                descriptor.yield_result(result)
        return 0.01

    def publish_and_store(self, payload: str) -> str:
        """The delegate's callable: publish, then store the task id at once."""
        task_id = self.service.publish(payload)
        with self._lock:
            self.store.execute(
                "INSERT INTO tasks (payload, task_id) VALUES (?, ?)",
                (payload, task_id),
            )
            self.publishes += 1
            self._inserted.notify_all()
        return task_id

    def wait_stored(self, count: int) -> None:
        """Wait until this process has stored ``count`` tasks."""
        with self._inserted:
            self._inserted.wait_for(lambda: self.publishes >= count, 30.0)

    def stored(self) -> dict[str, str]:
        """Payload: task id of every stored task without a result yet."""
        with self._lock:
            rows = self.store.execute(
                "SELECT payload, task_id FROM tasks WHERE result IS NULL"
            ).fetchall()
        return {payload: task_id for payload, task_id in rows}

    def save_result(self, payload: str, result: str) -> None:
        with self._lock:
            self.store.execute(
                "UPDATE tasks SET result = ? WHERE payload = ?", (result, payload)
            )

    def close(self) -> None:
        self.executor.shutdown(cancel_futures=True)
        self.store.close()


def first_run(
    service: FakeService, store_path: Path, payloads: list[str], stop_after: int
) -> None:
    """Publish ``payloads`` one by one; stop (as a crash would) once ``stop_after``
    are stored, without waiting for any result."""
    process = Process(service, store_path)
    for payload in payloads[:stop_after]:
        # the future is lost with the process; the remote task goes on
        process.executor.submit(process.publish_and_store, payload)
    process.wait_stored(stop_after)
    process.close()  # cancels the futures here only: no cancel function


def second_run(
    service: FakeService, store_path: Path, payloads: list[str]
) -> dict[str, str]:
    """Re-attach every stored task, publish the others; return every result."""
    process = Process(service, store_path)
    stored = process.stored()
    futures: dict[str, Future[str]] = {}
    for payload in payloads:
        if payload in stored:
            futures[payload] = process.executor.attach(stored[payload])
        else:
            futures[payload] = process.executor.submit(
                process.publish_and_store, payload
            )
    results = {payload: future.result(30.0) for payload, future in futures.items()}
    for payload, result in results.items():
        process.save_result(payload, result)
    process.close()
    return results


def run(tasks: int, stop_after: int, store_path: Path) -> tuple[dict[str, str], int]:
    """Both runs against one service; return the results and the highest number
    of publishes of one payload."""
    service = FakeService()
    payloads = [f"payload-{i}" for i in range(tasks)]
    first_run(service, store_path, payloads, stop_after)
    results = second_run(service, store_path, payloads)
    return results, max(service.publishes.values())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Re-attach to remote tasks after a restart."
    )
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--stop-after", type=int, default=8)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        results, most = run(args.tasks, args.stop_after, Path(directory) / "tasks.db")
    print(f"{len(results)} tasks resolved; most publishes of one payload: {most}")


if __name__ == "__main__":
    main()
