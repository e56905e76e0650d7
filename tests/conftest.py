"""Fixtures shared by the whole suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

import fluent_executors.pytest_plugin
from fluent_executors import _clock, _scheduler

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


# A callback a test leaves pending later than this after it ends keeps the
# scheduler thread alive into the tests after it (seconds).
FAR = 2.0


@pytest.fixture(autouse=True)
def _no_library_thread_survives(no_leaked_threads: None) -> Iterator[None]:
    """Every poll or scheduler thread a test starts must end shortly after it, and
    it leaves no callback pending far ahead: a scheduler thread that an earlier
    test started (so not this test's to check) would carry it on, alive, into the
    tests after it, whose checks of the scheduler's threads then fail."""
    yield
    horizon = _clock.monotonic() + FAR
    scheduler = _scheduler._scheduler
    with scheduler._lock:
        far = [
            (round(when - horizon + FAR, 3), handle._fn)
            for when, _, handle in scheduler._heap
            if handle._fn is not None and when > horizon
        ]
    assert far == [], "callbacks left pending (seconds from now, callback)"
