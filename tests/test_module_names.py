"""Every public module of more-executors 2.11.4 has a counterpart of the same name
here, exporting the same names, so that ``from more_executors.X import Y`` switches
by the import alone (docs/migration.rst, Imports)."""

from __future__ import annotations

import importlib

import pytest

# more-executors 2.11.4's public modules and their __all__.
MORE_EXECUTORS_MODULES = {
    "asyncio": ["AsyncioExecutor"],
    "cancel_on_shutdown": ["CancelOnShutdownExecutor"],
    "flat_map": ["FlatMapExecutor"],
    "futures": [
        "f_apply",
        "f_or",
        "f_and",
        "f_return",
        "f_return_error",
        "f_return_cancelled",
        "f_zip",
        "f_map",
        "f_flat_map",
        "f_traverse",
        "f_sequence",
        "f_nocancel",
        "f_timeout",
        "f_proxy",
    ],
    "map": ["MapExecutor"],
    "poll": ["PollExecutor", "PollDescriptor"],
    "retry": ["RetryExecutor", "RetryPolicy", "ExceptionRetryPolicy"],
    "sync": ["SyncExecutor"],
    "throttle": ["ThrottleExecutor"],
    "timeout": ["TimeoutExecutor"],
}


@pytest.mark.parametrize("module", MORE_EXECUTORS_MODULES)
def test_each_public_module_of_more_executors_has_a_counterpart(module: str) -> None:
    ours = importlib.import_module(f"fluent_executors.{module}")
    package = importlib.import_module("fluent_executors")

    for name in MORE_EXECUTORS_MODULES[module]:
        assert getattr(ours, name) is getattr(package, name), (module, name)
        assert name in ours.__all__, (module, name)


def test_the_package_exports_every_name_more_executors_exports() -> None:
    package = importlib.import_module("fluent_executors")
    names = {name for names in MORE_EXECUTORS_MODULES.values() for name in names}

    assert names | {"Executors"} <= set(package.__all__)
    assert package.futures is importlib.import_module("fluent_executors.futures")
