"""Fixtures shared by the whole suite."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def no_poll_thread_survives() -> Iterator[None]:
    """Every poll thread a test starts must have ended shortly after the test."""
    before = set(threading.enumerate())
    yield
    started = [
        thread
        for thread in threading.enumerate()
        if thread not in before and thread.name.startswith("fluent-executors-poll-")
    ]
    for thread in started:
        thread.join(timeout=10.0)
    assert [t.name for t in started if t.is_alive()] == []
