"""Durable polling against real crashes (the processes: tests/durable_child.py).

A child process starting 1,000 tasks is killed with SIGKILL at a random moment
(after a random number of start calls, seeded), and resume() in this process
takes over what its SQLite store kept: every task the store kept is resolved,
once; nothing is started again; no task was ever polled before its record was
written, so the tasks lost in the crash are only those started and never polled:
those whose start call had not returned (one per thread of the child's pool at
most), and those whose start call returned since the last write of the store
(the crash window), which the child's log tells.

Two and four processes share a PostgreSQL store; one is killed; the others take
its tasks over once its lease has run out and end them all; no task is started
twice, nor checked by two processes in turn and back (the service records each
check and its process)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from itertools import groupby
from pathlib import Path

import pytest
from durable_child import LEASE, QUEUE, FileService, poll_with
from postgres_server import PostgresServer
from wrapper_doubles import TIMEOUT

from fluent_executors import Executors, PollExecutor
from fluent_executors.stores import PostgresStore, SQLiteStore

CHILD = Path(__file__).with_name("durable_child.py")
CHILD_THREADS = 4  # the child's pool: start calls under way at once, at most
TASKS = 1_000
# The seeds of the SIGKILL trials: 50 by default; nox gives each session of one run
# its own ten (FLUENT_EXECUTORS_CRASH_TRIALS="first:stop", noxfile.py), so that a
# run of every session makes 70 trials in all, none twice, at a fifth of the time.
FIRST_TRIAL, STOP_TRIAL = map(
    int, os.environ.get("FLUENT_EXECUTORS_CRASH_TRIALS", "0:50").split(":")
)
SHARED_TASKS = 200  # started by each process sharing a PostgreSQL store
# Seconds a child process may take to end once told to (a bound, not a wait: the
# processes sharing a store wait for a dead one's lease, then end its tasks).
CHILD_TIMEOUT = 60.0


def run_child_until(store: Path, service: Path, log: Path, starts: int) -> int:
    """Run the child until it has returned from ``starts`` start calls (or has
    ended), then kill it with SIGKILL; the start calls it reported. Its events
    are in ``log``."""
    log.touch()
    command = [sys.executable, str(CHILD), "sqlite", str(store), str(service)]
    child = subprocess.Popen(
        [*command, str(TASKS), str(log)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert child.stdout is not None
    reported = 0
    try:
        for line in child.stdout:
            if line.strip() == "done":
                break
            reported += 1
            if reported >= starts:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(CHILD_TIMEOUT)
        child.stdout.close()
    assert child.returncode in (-signal.SIGKILL, 0)
    return reported


def read_log(log: Path) -> tuple[set[int], set[int]]:
    """The tasks whose start call returned, and those whose record was written,
    as the child logged them (a line cut by the kill is not read)."""
    returned: set[int] = set()
    written: set[int] = set()
    for line in log.read_text().splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        event, _, detail = line.strip().partition(" ")
        if event == "returned":
            returned.add(int(detail))
        else:
            written.update(json.loads(detail))
    return returned, written


@pytest.mark.parametrize("trial", range(FIRST_TRIAL, STOP_TRIAL))
def test_resume_after_sigkill_resolves_every_stored_task_and_starts_none(
    tmp_path: Path, trial: int
) -> None:
    starts = random.Random(trial).randint(1, TASKS)
    store_path, service_path = tmp_path / "store.db", tmp_path / "service.db"
    log = tmp_path / "child.log"
    reported = run_child_until(store_path, service_path, log, starts)
    service = FileService(str(service_path))
    started = service.tasks()
    assert len(started) >= reported
    # As another process sees the store once the dead one's lease has run out.
    store = SQLiteStore(store_path, queue=QUEUE, clock=lambda: time.time() + LEASE)
    kept = {task.key: task.result for task in store.records()}
    executor = PollExecutor(
        Executors.sync(), poll_with(service), default_interval=0.005, store=store
    )
    try:
        resumed = executor.resume()

        assert sorted(task.key for task in resumed.values()) == sorted(kept)
        for future, task in resumed.items():
            assert future.result(timeout=TIMEOUT) == task.result
    finally:
        executor.shutdown()
    try:
        assert store.records() == []
        after = service.tasks()
        assert len(after) == len(started)  # nothing started again
        never_polled = {task for task, (_, checks) in started.items() if checks == 0}
        polled = set(started) - never_polled
        # A task is polled only once its record is written: one polled and not
        # ended was kept; the lost ones were never polled.
        unfinished = {task for task in polled if started[task][1] < 2}
        assert unfinished <= set(kept.values()) <= set(started)
        # The lost: started, never polled, not kept. Those whose record was
        # written are none of them; the others' start calls either had not
        # returned (at most one per thread of the child's pool) or returned
        # since the last write: the crash window.
        returned, written = read_log(log)
        lost = never_polled - set(kept.values())
        assert not lost & written
        in_window = returned - written
        assert len(lost - returned) <= CHILD_THREADS
        assert len(lost & returned) <= len(in_window), (lost, in_window)
    finally:
        store.close()
        service.close()


@pytest.mark.parametrize("processes", [2, 4])
def test_processes_sharing_a_postgres_store_finish_the_tasks_of_a_killed_one(
    tmp_path: Path, postgres_server: PostgresServer, processes: int
) -> None:
    queue = f"share-{uuid.uuid4().hex}"
    service_path = tmp_path / "service.db"
    FileService(str(service_path)).close()  # its tables, before the processes race
    command = [sys.executable, str(CHILD), "share", postgres_server.conninfo, queue]
    command += [str(service_path), str(SHARED_TASKS)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    # (Its standard input, never written, keeps it from taking over others' tasks.)
    victim = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    others = [
        subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        for _ in range(processes - 1)
    ]
    try:
        assert victim.stdout is not None
        starts = random.Random(processes).randint(1, SHARED_TASKS)
        for count, _ in enumerate(victim.stdout, 1):  # its start calls
            if count >= starts:
                break
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait(CHILD_TIMEOUT)
        assert victim.stdout is not None
        assert victim.stdin is not None
        victim.stdout.close()
        victim.stdin.close()

    def of_victim(owner: str) -> bool:
        return owner.split(":")[1] == str(victim.pid)

    with PostgresStore(postgres_server.conninfo, queue=queue) as store:
        kept = [t.result for t in store.records() if of_victim(t.owner)]
    for other in others:  # each has ended its own tasks
        assert other.stdout is not None
        assert "done" in (line.strip() for line in other.stdout)
        other.stdout.close()
    # Once the store holds the dead one's records alone, the others move their
    # clocks past every lease (tests/durable_child.py) and take its tasks over.
    with PostgresStore(postgres_server.conninfo, queue=queue) as store:
        deadline, tick = time.monotonic() + CHILD_TIMEOUT, threading.Event()
        while not all(of_victim(task.owner) for task in store.records()):
            assert time.monotonic() < deadline, "the others' records stay"
            tick.wait(0.01)  # their last removals, written at their next round
    for other in others:
        assert other.stdin is not None
        other.stdin.write("go on\n")
        other.stdin.close()
    for other in others:
        assert other.wait(CHILD_TIMEOUT) == 0

    service = FileService(str(service_path))
    try:
        started = service.tasks()
        checkers = service.checkers()
    finally:
        service.close()
    with PostgresStore(postgres_server.conninfo, queue=queue) as store:
        assert store.records() == []
    payloads = [payload for payload, _ in started.values()]
    assert len(payloads) == len(set(payloads))  # none started twice
    for task, (_, checks) in started.items():
        assert checks == 0 or checks >= 2, task  # polled: polled until it ended
        # One process after another, never two at once: no interleaving.
        runs = [process for process, _ in groupby(checkers.get(task, []))]
        assert len(runs) == len(set(runs)), (task, checkers[task])
    for task in kept:  # taken over: ended by another process
        assert checkers[task][-1] != victim.pid, task
