"""Every ``with_*`` method takes its class's arguments, in its order and of its kinds
(docs/migration.rst): one order for ``XExecutor(delegate, *args)``,
``Executors.with_x(delegate, *args)``, ``executor.with_x(*args)`` and
``bound.with_x(*args)``, which is more-executors' order."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from wrapper_doubles import examples, wrapper_classes

import fluent_executors as fe
from fluent_executors import BoundCallable, Executors, FluentExecutor

CLASSES = wrapper_classes()
CHAIN_METHODS = sorted(f"with_{kind}" for kind in CLASSES)

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


def parameters(fn: Callable[..., Any], skip: int) -> list[inspect.Parameter]:
    """``fn``'s parameters after the first ``skip``, without their annotations, and
    with ``name``'s default ``None`` (a wrapper's name defaults to its delegate's
    when built by a method)."""
    return [
        p.replace(
            annotation=inspect.Parameter.empty,
            default=None if p.name == "name" else p.default,
        )
        for p in list(inspect.signature(fn).parameters.values())[skip:]
    ]


@pytest.mark.parametrize("kind", CLASSES)
def test_every_with_method_has_its_classs_parameters(kind: str) -> None:
    # Names, kinds, defaults and order: the three methods that build a wrapper are
    # written out, and this fails when one drifts from its class.
    expected = parameters(CLASSES[kind].__init__, 2)  # self, delegate
    method = f"with_{kind}"

    assert parameters(getattr(FluentExecutor, method), 1) == expected
    assert parameters(getattr(Executors, method), 1) == expected
    if kind == "asyncio":  # a bound callable's futures are concurrent ones
        assert not hasattr(BoundCallable, method)
    elif kind == "map":  # its fn is required there, as type checkers want it
        bound = parameters(BoundCallable.with_map, 1)
        assert bound == [
            expected[0].replace(default=inspect.Parameter.empty),
            *expected[1:],
        ]
    else:
        assert parameters(getattr(BoundCallable, method), 1) == expected


def test_the_facade_has_every_wrapper_and_the_tests_build_each() -> None:
    assert {n for n in vars(Executors) if n.startswith("with_")} == set(CHAIN_METHODS)
    built = examples()  # raises LookupError for a wrapper without an example
    assert set(built) == set(CLASSES)
    for kind, cls in CLASSES.items():
        assert issubclass(cls, FluentExecutor)
        with built[kind](Executors.sync(name="base")) as executor:
            assert (type(executor), executor.name) == (cls, "base")
            assert executor.stats().kind == kind


@pytest.mark.parametrize("kind", MORE_EXECUTORS_ORDER)
def test_positional_arguments_are_more_executors_ones_in_its_order(kind: str) -> None:
    assert positional(CLASSES[kind].__init__, 2) == MORE_EXECUTORS_ORDER[kind]


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
