"""The library's pytest plugin, registered by the ``pytest11`` entry point
``fluent_executors``: two fixtures for users' tests (see ``docs/testing.rst``).

- ``no_leaked_threads``: fails the test if a poll or scheduler thread that the test
  started is still alive after it (each is given :data:`JOIN_TIMEOUT` seconds to
  end by itself).
- ``virtual_clock``: the test runs under
  :func:`fluent_executors.testing.virtual_time`; the fixture's value is the
  :class:`~fluent_executors.testing.VirtualClock`.

Neither is used unless a test asks for it (by argument, ``usefixtures``, or an
``autouse`` fixture of the user's ``conftest.py`` that requests it).

.. versionadded:: 0.2.0
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from .testing import VirtualClock, library_threads, virtual_time

__all__ = ["JOIN_TIMEOUT", "no_leaked_threads", "virtual_clock"]

JOIN_TIMEOUT = 10.0
"""Real seconds each library thread a test started is given to end after it."""


@pytest.fixture
def no_leaked_threads() -> Iterator[None]:
    """Fail the test if a library thread it started outlives it.

    Poll threads end after their executor's shutdown, the scheduler thread and its
    workers at a ``shutdown(wait=True)`` or 50 ms after their last callback; a
    survivor is a leaked executor (never shut down) or a future left pending.
    """
    before = set(threading.enumerate())
    yield
    started = [thread for thread in library_threads() if thread not in before]
    for thread in started:
        thread.join(timeout=JOIN_TIMEOUT)
    leaked = [thread.name for thread in started if thread.is_alive()]
    assert leaked == [], f"library threads left behind: {leaked}"


@pytest.fixture
def virtual_clock() -> Iterator[VirtualClock]:
    """Run the test on a virtual clock (see ``virtual_time``)."""
    with virtual_time() as clock:
        yield clock
