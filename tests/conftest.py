"""Fixtures shared by the whole suite."""

from __future__ import annotations

import pytest

import fluent_executors.pytest_plugin


def pytest_configure(config: pytest.Config) -> None:
    # Installed, the package registers the plugin by its pytest11 entry point; run
    # from a source tree (PYTHONPATH=src), it is registered here.
    plugin = fluent_executors.pytest_plugin
    if not config.pluginmanager.is_registered(plugin):
        config.pluginmanager.register(plugin, "fluent_executors")


@pytest.fixture(autouse=True)
def _no_library_thread_survives(no_leaked_threads: None) -> None:
    """Every poll or scheduler thread a test starts must end shortly after it."""
