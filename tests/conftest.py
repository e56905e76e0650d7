"""Fixtures shared by the whole suite."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

import fluent_executors.pytest_plugin
from _fluent_executors import scheduler as _scheduler

if TYPE_CHECKING:
    from postgres_server import PostgresServer

# No hypothesis test is timed: its default deadline (200 ms an example) is a speed
# assertion, which a loaded machine fails (speed is the benchmarks' business).
settings.register_profile("fluent-executors", deadline=None)
settings.load_profile("fluent-executors")


def pytest_configure(config: pytest.Config) -> None:
    # Installed, the package registers the plugin by its pytest11 entry point; run
    # from a source tree (PYTHONPATH=src), it is registered here.
    plugin = fluent_executors.pytest_plugin
    if not config.pluginmanager.is_registered(plugin):
        config.pluginmanager.register(plugin, "fluent_executors")
    # The scheduler thread outlives its last callback by LINGER (50 ms), and every
    # test waits for the threads it started to end (no_leaked_threads below): at
    # 50 ms that is a fifth of the suite's time. tests/test_scheduler.py sets its
    # own LINGER where the linger is what it tests.
    _scheduler.LINGER = 0.002


@pytest.fixture(autouse=True)
def _no_library_thread_survives(no_leaked_threads: None) -> None:
    """Every poll or scheduler thread a test starts must end shortly after it."""


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test process's own (tests/postgres_server.py),
    started at the first test that asks for it; skipped where none is installed."""
    # (Imported here: tests/test_testing.py copies this file where it is not.)
    from postgres_server import PostgresServer, find_binaries

    binaries, why_not = find_binaries()
    if binaries is None:
        pytest.skip(why_not)
    server = PostgresServer(binaries)
    try:
        server.start()
        yield server
    finally:
        server.stop()
