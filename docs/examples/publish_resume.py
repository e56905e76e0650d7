"""Kill the publishing process part-way and resume in a new one (``nox -s demo``).

A task service (``task_service.py``) runs in this process and outlives two runs of
the publishing program, each a process of its own, which keep their remote tasks
in one SQLite store (docs/durable.rst):

1. ``publish_resume.py --url URL --store tasks.db --crash-after N`` publishes every
   object through a :class:`~fluent_executors.PollExecutor` with ``store=`` and is
   killed (``SIGKILL``: no shutdown, no cleanup) as its ``N``-th publish request
   returns, leaving tasks running on the service.
2. ``publish_resume.py --url URL --store tasks.db --resume`` calls ``resume()`` for
   the stored tasks, reconciles the ones started in the crash window with the
   service, publishes the objects with no task yet, and waits for all of them.

Then the service's count of publishes per object says whether each object was
published once. The program keeps a journal next to the store, in the same file:
the objects it began to publish (written before the request) and how each ended.

    python publish_resume.py                  # 500 objects, killed after 200
    python publish_resume.py --tasks 50 --crash-after 20
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from publish import (
    POLL_ATTEMPTS,
    PUBLISH_ATTEMPTS,
    REQUEST_TIMEOUT,
    PublishedTask,
    RetryAfterPolicy,
    ServiceUnavailable,
    TaskClient,
)
from task_service import (
    MAX_SEARCH,
    TaskServer,
    add_service_arguments,
    service_from_arguments,
)

from fluent_executors import ExceptionRetryPolicy, Executors
from fluent_executors.stores import SQLiteStore

OWNER = "publisher-1"
"""The store's owner: the same in the process that resumes, which so takes the
crashed one's records back at once, without waiting for their lease."""

RESUMED = "resumed:"
"""Starts the line, JSON after it, in which the resuming process says what it did."""


class Journal:
    """The program's own record, in an SQLite file: the objects it began to
    publish (written before the publish request) and how each ended.

    Args:
        path: the file (the store's file may hold it too).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._db = sqlite3.connect(
            path, check_same_thread=False, isolation_level=None, timeout=30.0
        )
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS publish_started "
                "(object_id TEXT PRIMARY KEY)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS publish_ended "
                "(object_id TEXT PRIMARY KEY, outcome TEXT NOT NULL)"
            )

    def start(self, object_id: str) -> None:
        """Note that ``object_id`` is about to be published."""
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO publish_started VALUES (?)", (object_id,)
            )

    def end(self, object_id: str, outcome: str) -> None:
        """Note how the publishing of ``object_id`` ended (``"finished"`` or the
        exception's type)."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO publish_ended VALUES (?, ?)",
                (object_id, outcome),
            )

    def started(self) -> set[str]:
        """The objects whose publishing began."""
        with self._lock:
            rows = self._db.execute("SELECT object_id FROM publish_started")
            return {object_id for (object_id,) in rows}

    def ended(self) -> dict[str, str]:
        """How the publishing of each object that ended ended, by object."""
        with self._lock:
            rows = self._db.execute("SELECT object_id, outcome FROM publish_ended")
            return dict(rows)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def publish_durably(
    url: str,
    store_path: Path,
    objects: Sequence[str],
    *,
    crash_after: int | None = None,
    resume: bool = False,
    workers: int = 8,
    interval: float = 0.5,
) -> dict[str, int]:
    """Publish ``objects`` through the service at ``url``, each task kept in the
    store at ``store_path`` until it ends; wait for every task.

    Args:
        crash_after: kill this process with ``SIGKILL`` as the publish request of
            this many objects has returned.
        resume: first resume the tasks of the store, and reconcile with the
            service the objects whose publishing began and left no record; then
            publish only the objects that have no task yet.

    Returns:
        ``{"resumed": ..., "reconciled": ..., "published": ...}``: how many
        futures came from the store, from the service, and from new publishes.
    """
    journal = Journal(store_path)
    store = SQLiteStore(store_path, owner=OWNER)
    published = 0
    lock = threading.Lock()
    with requests.Session() as session:
        client = TaskClient(url, session)

        def start(object_id: str) -> PublishedTask:
            """The start call: note the object, publish it, add its id to the
            answer (the store keeps the answer, and resume() gives it back)."""
            nonlocal published
            journal.start(object_id)  # from here to the record: the crash window
            if crash_after is None:
                task = client.publish(object_id)
            else:
                # One request at a time, so that none is in flight at the kill:
                # the service has then seen every publish of this process, which
                # crash_and_resume() counts as soon as the process is gone.
                with lock:
                    task = client.publish(object_id)
                    published += 1
                    if published == crash_after:
                        os.kill(os.getpid(), signal.SIGKILL)
            return PublishedTask(task_id=task["task_id"], object_id=object_id)

        poll_executor = Executors.thread_pool(
            max_workers=workers, name="publish"
        ).with_poll(
            client.poll_tasks,
            client.cancel_task,
            interval,
            poll_retry_policy=RetryAfterPolicy(
                max_attempts=POLL_ATTEMPTS,
                sleep=interval,
                max_sleep=5.0,
                exception_base=(ServiceUnavailable, requests.ConnectionError),
            ),
            max_batch=MAX_SEARCH,
            store=store,
        )
        executor = poll_executor.with_retry(
            ExceptionRetryPolicy(
                max_attempts=PUBLISH_ATTEMPTS,
                sleep=0.1,
                jitter=True,
                exception_base=ServiceUnavailable,
            )
        )
        futures: dict[str, Future[PublishedTask]] = {}
        counts = Counter[str]()
        if resume:
            for resumed, stored in poll_executor.resume().items():
                futures[stored.result["object_id"]] = resumed
                counts["resumed"] += 1
            ended = journal.ended()
            for object_id in sorted(journal.started() - ended.keys() - futures.keys()):
                # Started in the crash window, or not at all: ask the service.
                answer = session.get(
                    f"{url}/object/{object_id}/tasks", timeout=REQUEST_TIMEOUT
                )
                answer.raise_for_status()
                task_ids: list[int] = answer.json()
                if task_ids:
                    task = PublishedTask(task_id=task_ids[-1], object_id=object_id)
                    futures[object_id] = poll_executor.attach(task)
                    counts["reconciled"] += 1
        else:
            ended = {}
        for object_id in objects:
            if object_id not in ended and object_id not in futures:
                futures[object_id] = executor.submit(start, object_id)
                counts["published"] += 1
        for object_id, future in futures.items():
            future.add_done_callback(_recorder(journal, object_id))
        wait(futures.values())
        executor.shutdown()  # every done callback has run
    store.close()
    journal.close()
    return {name: counts[name] for name in ("resumed", "reconciled", "published")}


def _recorder(
    journal: Journal, object_id: str
) -> Callable[[Future[PublishedTask]], None]:
    """A done callback that notes in ``journal`` how ``object_id`` ended."""

    def record(future: Future[PublishedTask]) -> None:
        journal.end(object_id, _outcome(future))

    return record


def _outcome(future: Future[PublishedTask]) -> str:
    """``"finished"``, ``"cancelled"`` or the type of the exception."""
    if future.cancelled():
        return "cancelled"
    error = future.exception()
    return "finished" if error is None else type(error).__name__


@dataclass(frozen=True)
class Accounting:
    """What the crash and the resume did, as the service and the store saw it.

    Attributes:
        tasks: how many objects there are to publish.
        crash_status: the first process's exit status (``-9``: killed by SIGKILL).
        started: tasks the service had started when the first process died.
        ended_before: of those, the ones whose end the first process recorded.
        stored: tasks whose record the store held when the first process died.
        lost_in_window: tasks started but neither stored nor ended: the crash
            came between the publish request's answer and the record's write.
        resumed, reconciled, published: what the second process did (see
            :func:`publish_durably`).
        outcomes: how each object ended, by outcome (``"finished"``,
            ``"TaskFailed"``...).
        publishes: how many objects the service published once, twice...
        seconds: wall time of both processes.
    """

    tasks: int
    crash_status: int
    started: int
    ended_before: int
    stored: int
    lost_in_window: int
    resumed: int
    reconciled: int
    published: int
    outcomes: dict[str, int]
    publishes: dict[int, int]
    seconds: float

    @property
    def accounted(self) -> int:
        """Objects whose publishing ended, each published exactly once."""
        return min(sum(self.outcomes.values()), self.publishes.get(1, 0))

    @property
    def twice(self) -> int:
        """Objects published more than once (0, or the crash lost track)."""
        return sum(n for times, n in self.publishes.items() if times > 1)

    def report(self) -> str:
        """The accounting, as printed."""
        outcomes = ", ".join(f"{name} {n}" for name, n in sorted(self.outcomes.items()))
        rows = [
            ("tasks started", self.started),
            ("ended before the crash", self.ended_before),
            ("stored, still running", self.stored),
            ("lost in the crash window", self.lost_in_window),
        ]
        resumed = [
            ("resumed from the store", self.resumed),
            ("reconciled with the service", self.reconciled),
            ("published for the first time", self.published),
        ]
        return "\n".join(
            [
                f"Crash and resume: {self.tasks} objects, one task service, one store.",
                f"  first process, killed part-way (exit status {self.crash_status}):",
                *(f"    {name + ':':<30}{n:>6}" for name, n in rows),
                "    (lost in the crash window: started on the service, not yet in the",
                "    store when the process died; found again by asking the service)",
                "  second process:",
                *(f"    {name + ':':<30}{n:>6}" for name, n in resumed),
                f"  accounted for: {self.accounted} of {self.tasks} tasks, each ended "
                f"({outcomes})",
                f"  published once: {self.publishes.get(1, 0)}, "
                f"published twice: {self.twice}",
                f"  both processes took {self.seconds:.1f} s",
            ]
        )


def crash_and_resume(
    url: str, published: Any, directory: Path, tasks: int, crash_after: int
) -> Accounting:
    """Run the crashing process and then the resuming one against the service at
    ``url``, whose publish counts per object ``published()`` returns."""
    store_path = directory / "tasks.db"
    command = [sys.executable, __file__, "--url", url, "--store", str(store_path)]
    command += ["--tasks", str(tasks)]
    began = time.monotonic()
    crashed = subprocess.run([*command, "--crash-after", str(crash_after)], check=False)
    starts = published()
    journal = Journal(store_path)
    ended_before = journal.ended()
    journal.close()
    observer = SQLiteStore(store_path, owner="observer")
    stored = {task.result["object_id"] for task in observer.records()}
    observer.close()
    resumed = subprocess.run(
        [*command, "--resume"], check=True, capture_output=True, text=True
    )
    seconds = time.monotonic() - began
    (line,) = [x for x in resumed.stdout.splitlines() if x.startswith(RESUMED)]
    did = json.loads(line.removeprefix(RESUMED))
    journal = Journal(store_path)
    outcomes = Counter(journal.ended().values())
    journal.close()
    return Accounting(
        tasks=tasks,
        crash_status=crashed.returncode,
        started=len(starts),
        ended_before=len(ended_before),
        stored=len(stored),
        lost_in_window=len(starts.keys() - stored - ended_before.keys()),
        resumed=did["resumed"],
        reconciled=did["reconciled"],
        published=did["published"],
        outcomes=dict(outcomes),
        publishes=dict(Counter(published().values())),
        seconds=seconds,
    )


def run(argv: Sequence[str] | None = None) -> Accounting | None:
    """Run as the command line ``argv`` says: with ``--store``, one of the two
    processes (``None``); else serve the task service and run both."""
    parser = _parser()
    arguments = parser.parse_args(argv)
    objects = [f"object-{n}" for n in range(arguments.tasks)]
    if arguments.store is not None:
        if arguments.url is None:
            parser.error("--store needs --url: the service must outlive the process")
        did = publish_durably(
            arguments.url,
            Path(arguments.store),
            objects,
            crash_after=arguments.crash_after,
            resume=arguments.resume,
            interval=arguments.interval,
        )
        print(RESUMED + json.dumps(did), flush=True)
        return None
    service = service_from_arguments(parser, arguments)
    with TaskServer(service) as server, tempfile.TemporaryDirectory() as directory:
        return crash_and_resume(
            server.url,
            service.publishes,
            Path(directory),
            arguments.tasks,
            arguments.crash_after or arguments.tasks * 2 // 5,
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Run; print the accounting. Returns 0 if every object was published once
    and ended, else 1."""
    accounting = run(argv)
    if accounting is None:
        return 0
    print(accounting.report())
    ok = accounting.accounted == accounting.tasks and not accounting.twice
    return 0 if ok else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Kill the publishing process part-way and resume in a new one."
    )
    parser.add_argument("--tasks", type=int, default=500, help="objects to publish")
    parser.add_argument(
        "--crash-after",
        type=int,
        help="be killed by SIGKILL as this many publish requests have returned "
        "(default: two fifths of --tasks)",
    )
    parser.add_argument("--interval", type=float, default=0.5, help="between polls")
    parser.add_argument("--url", help="a running task service (with --store)")
    parser.add_argument("--store", help="run one process, with this SQLite store")
    parser.add_argument(
        "--resume", action="store_true", help="resume the store's tasks first"
    )
    add_service_arguments(parser)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
