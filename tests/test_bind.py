"""Executors.bind, Executors.flat_bind and BoundCallable."""

from __future__ import annotations

import inspect
from concurrent.futures import Future

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wrapper_doubles import TIMEOUT, ManualExecutor

from fluent_executors import (
    BoundCallable,
    Executors,
    FluentExecutor,
    MapExecutor,
    ThrottleExecutor,
)


def scale(value: int, factor: int = 2) -> int:
    """Multiply ``value`` by ``factor``."""
    return value * factor


def test_calling_a_bound_callable_submits_the_function_with_its_arguments():
    delegate = ManualExecutor(done_after=0)
    bound = Executors.bind(delegate, scale)

    future = bound(3, factor=5)

    assert future.result(TIMEOUT) == 15
    assert delegate.arguments == [(3,)]


def test_bound_callable_looks_like_the_function():
    bound = Executors.bind(Executors.sync(), scale)

    assert bound.__name__ == "scale"
    assert bound.__doc__ == "Multiply ``value`` by ``factor``."
    assert bound.__wrapped__ is scale
    assert str(inspect.signature(bound)) == "(value: 'int', factor: 'int' = 2) -> 'int'"


def test_with_map_on_a_bound_callable_transforms_its_results():
    bound = Executors.bind(Executors.sync(), scale).with_map(str)

    assert bound(4).result() == "8"
    assert isinstance(bound.executor, MapExecutor)


def test_with_methods_wrap_the_executor_and_keep_the_function():
    pool = Executors.sync(name="api")
    bound = pool.bind(scale).with_throttle(2).with_map(lambda v: v + 1)

    assert bound(5).result() == 11
    assert isinstance(bound.executor.delegate, ThrottleExecutor)
    assert bound.executor.name == "api"


@given(st.lists(st.integers(-1000, 1000)))
def test_bind_then_map_equals_submit_then_map(values):
    bound = Executors.bind(Executors.sync(), scale).with_map(lambda v: v - 1)

    assert [bound(v).result() for v in values] == [2 * v - 1 for v in values]


def test_flat_bind_follows_the_future_the_function_returns():
    second = ManualExecutor()

    def start(value: int) -> Future[int]:
        return second.submit(scale, value)

    bound = Executors.flat_bind(Executors.sync(), start)
    future = bound(21)
    assert not future.done()

    second.finish(0)

    assert future.result(TIMEOUT) == 42


def test_executor_flat_bind_method_is_the_facade_one():
    bound = Executors.sync().flat_bind(lambda v: Executors.sync().submit(scale, v))

    assert bound(4).result() == 8


def test_calling_after_shutdown_raises_runtime_error():
    bound = Executors.bind(Executors.sync(), scale)
    bound.executor.shutdown()

    with pytest.raises(RuntimeError):
        bound(1)


@pytest.mark.parametrize(
    ("executor", "fn", "message"),
    [
        (object(), scale, "delegate must be an executor"),
        (Executors.sync(), "scale", "fn must be callable"),
    ],
)
def test_bad_arguments_raise_type_error(executor, fn, message):
    with pytest.raises(TypeError, match=message):
        Executors.bind(executor, fn)


def test_bound_callable_has_every_with_method_of_executors():
    # with_asyncio returns asyncio futures, which a bound callable does not.
    names = {n for n in dir(FluentExecutor) if n.startswith("with_")} - {"with_asyncio"}

    for name in sorted(names):
        executor_method = inspect.signature(getattr(FluentExecutor, name))
        bound_method = inspect.signature(getattr(BoundCallable, name))
        # After the first: self, or the executor that a bound callable wraps.
        assert (
            list(bound_method.parameters)[1:] == list(executor_method.parameters)[1:]
        ), name
