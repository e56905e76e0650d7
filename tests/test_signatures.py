"""Every ``with_*`` method takes its class's arguments, in its order and of its kinds
(docs/migration.rst): one order for ``XExecutor(delegate, *args)``,
``Executors.with_x(delegate, *args)``, ``executor.with_x(*args)`` and
``bound.with_x(*args)``, which is more-executors' order."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

import fluent_executors as fe
from _fluent_executors.registry import WRAPPERS, load
from fluent_executors import BoundCallable, Executors, FluentExecutor

# Every wrapper, from the registry of executors.
CLASSES: dict[str, type[Any]] = {row.kind: load(row) for row in WRAPPERS}
BOUND = {row.kind for row in WRAPPERS if row.bound}

# more-executors 2.11.4's positional arguments after the delegate.
MORE_EXECUTORS_ORDER = {
    "poll": ["poll_fn", "cancel_fn", "default_interval", "logger", "name"],
    "retry": ["retry_policy", "logger", "name"],
    "timeout": ["timeout", "logger", "name"],
    "map": ["fn", "logger", "name"],
    "flat_map": ["fn", "logger", "name"],
    "throttle": ["count", "logger", "name", "block"],
    "cancel_on_shutdown": ["logger", "name"],
    "asyncio": ["loop", "logger", "name"],
}


def shape(fn: Callable[..., Any], skip: int) -> list[tuple[str, Any]]:
    """The names and kinds of ``fn``'s parameters after the first ``skip``."""
    parameters = list(inspect.signature(fn).parameters.values())[skip:]
    return [(p.name, p.kind) for p in parameters]


def positional(fn: Callable[..., Any], skip: int) -> list[str]:
    return [
        name
        for name, kind in shape(fn, skip)
        if kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    ]


@pytest.mark.parametrize("kind", CLASSES)
def test_every_with_method_has_its_classs_parameters(kind: str) -> None:
    expected = shape(CLASSES[kind].__init__, 2)  # self, delegate

    assert shape(getattr(FluentExecutor, f"with_{kind}"), 1) == expected
    assert shape(getattr(Executors, f"with_{kind}"), 1) == expected
    if kind in BOUND:  # not asyncio: a bound callable's futures are the library's
        assert shape(getattr(BoundCallable, f"with_{kind}"), 1) == expected


@pytest.mark.parametrize("kind", MORE_EXECUTORS_ORDER)
def test_positional_arguments_are_more_executors_ones_in_its_order(kind: str) -> None:
    assert positional(CLASSES[kind].__init__, 2) == MORE_EXECUTORS_ORDER[kind]


@pytest.mark.parametrize("kind", CLASSES)
def test_a_chain_methods_name_defaults_to_the_chains_name(kind: str) -> None:
    parameter = inspect.signature(getattr(FluentExecutor, f"with_{kind}")).parameters
    assert parameter["name"].default is None


def test_one_positional_call_means_the_same_everywhere() -> None:
    pool = Executors.sync(None, "pool")
    counts = [
        fe.ThrottleExecutor(pool, 3, None, "t", True),
        Executors.with_throttle(pool, 3, None, "t", True),
        pool.with_throttle(3, None, "t", True),
    ]
    assert {(t.count, t.name, t.block) for t in counts} == {(3, "t", True)}


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (
            fe.RateLimitExecutor.__init__,
            ["delegate", "max_calls", "period", "logger", "name"],
        ),
        (fe.DaskExecutor.__init__, ["address", "logger", "name"]),
        (fe.RayExecutor.__init__, ["logger", "name"]),
        (Executors.dask, ["address", "logger", "name"]),
        (Executors.ray, ["logger", "name"]),
        (fe.SyncExecutor.__init__, ["logger", "name"]),
        (Executors.sync, ["logger", "name"]),
    ],
    ids=[
        "rate_limit",
        "dask",
        "ray",
        "Executors.dask",
        "Executors.ray",
        "sync",
        "Executors.sync",
    ],
)
def test_executors_without_a_counterpart_take_main_arguments_logger_and_name(
    build: Callable[..., Any], expected: list[str]
) -> None:
    skip = 1 if build.__name__ == "__init__" else 0
    assert positional(build, skip) == expected
