"""Fixtures shared by the whole suite."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from fluent_executors._scheduler import THREAD_NAME as SCHEDULER_THREAD


def _is_library_thread(thread: threading.Thread) -> bool:
    # Poll threads, and the scheduler thread and its workers.
    return thread.name.startswith(("fluent-executors-poll-", SCHEDULER_THREAD))


@pytest.fixture(autouse=True)
def no_library_thread_survives() -> Iterator[None]:
    """Every poll or scheduler thread a test starts must end shortly after it.

    They end by themselves once idle (a poll thread after its executor's shutdown,
    the scheduler and its workers 50 ms after their last callback), so a survivor is
    a leaked thread or a future left pending.
    """
    before = set(threading.enumerate())
    yield
    started = [
        thread
        for thread in threading.enumerate()
        if thread not in before and _is_library_thread(thread)
    ]
    for thread in started:
        thread.join(timeout=10.0)
    assert [t.name for t in started if t.is_alive()] == []
