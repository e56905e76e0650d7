"""Durable polling against a real crash: a child process (tests/durable_child.py)
starting 1,000 tasks is killed with SIGKILL at a random moment (after a random
number of start calls, seeded), and resume() in this process takes over what its
store kept. Every task the store kept is resolved, once; nothing is started
again; no task was ever polled before its record was written, so the tasks lost
in the crash are only those started and never polled."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from durable_child import LEASE, QUEUE, FileService, poll_with
from wrapper_doubles import TIMEOUT

from fluent_executors import Executors, PollExecutor
from fluent_executors.stores import SQLiteStore

CHILD = Path(__file__).with_name("durable_child.py")
TASKS = 1_000
TRIALS = 50


def run_child_until(store: Path, service: Path, starts: int) -> int:
    """Run the child until it has returned from ``starts`` start calls (or has
    ended), then kill it with SIGKILL; the start calls it reported."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(store), str(service), str(TASKS)],
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
        child.wait(TIMEOUT)
        child.stdout.close()
    assert child.returncode in (-signal.SIGKILL, 0)
    return reported


@pytest.mark.parametrize("trial", range(TRIALS))
def test_resume_after_sigkill_resolves_every_stored_task_and_starts_none(
    tmp_path: Path, trial: int
) -> None:
    starts = random.Random(trial).randint(1, TASKS)
    store_path, service_path = tmp_path / "store.db", tmp_path / "service.db"
    reported = run_child_until(store_path, service_path, starts)
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
    finally:
        store.close()
        service.close()
