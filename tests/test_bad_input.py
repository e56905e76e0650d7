"""Bad input gets a clear, early error naming the bad argument: loggers, coroutine
functions and non-callables at submit, and retry policies' settings (docs/guide.rst,
Errors and logging)."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

import pytest
import structlog_like
from wrapper_doubles import examples

from fluent_executors import (
    AsyncioExecutor,
    ExceptionRetryPolicy,
    Executors,
    SyncExecutor,
)

# Every wrapper, built with the logger given.
BUILDERS: dict[str, Callable[[Executor, Any], Any]] = {
    kind: functools.partial(lambda build, d, log: build(d, logger=log), build)
    for kind, build in examples().items()
}


@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS.keys())
@pytest.mark.parametrize("logger", ["fluent", 42, object()])
def test_a_logger_that_is_not_one_is_refused_at_construction(
    build: Callable[[Executor, Any], Any], logger: Any
) -> None:
    with pytest.raises(TypeError, match=r"^logger must be a logging\.Logger"):
        build(Executors.sync(), logger)


def test_sync_executor_checks_its_logger_too() -> None:
    with pytest.raises(TypeError, match=r"^logger must"):
        SyncExecutor("not a logger")  # type: ignore[arg-type]


@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS.keys())
@pytest.mark.parametrize(
    "logger",
    [
        logging.getLogger("fluent-test"),
        logging.LoggerAdapter(logging.getLogger("fluent-test"), {}),
        structlog_like.Logger(),
    ],
    ids=["Logger", "LoggerAdapter", "structlog-like"],
)
def test_any_object_with_the_logger_methods_is_accepted(
    build: Callable[[Executor, Any], Any], logger: Any
) -> None:
    build(Executors.sync(), logger).shutdown()


async def a_coroutine_function() -> int:
    return 1


# Base executors, and every wrapper whose futures are concurrent ones on one.
EXECUTORS: dict[str, Callable[[], Any]] = {
    "thread_pool": lambda: Executors.thread_pool(max_workers=1),
    "sync": Executors.sync,
    **{
        kind: functools.partial(lambda build: build(Executors.sync()), build)
        for kind, build in examples(concurrent=True).items()
    },
}


@pytest.mark.parametrize("make", EXECUTORS.values(), ids=EXECUTORS.keys())
@pytest.mark.parametrize(
    "fn",
    [a_coroutine_function, functools.partial(a_coroutine_function)],
    ids=["async def", "partial of async def"],
)
def test_a_coroutine_function_is_refused_at_submit_saying_it_needs_a_loop(
    make: Callable[[], Any], fn: Any
) -> None:
    with make() as executor, pytest.raises(TypeError, match="needs an event loop"):
        executor.submit(fn)


def test_the_asyncio_executor_refuses_a_coroutine_function_too() -> None:
    loop = asyncio.new_event_loop()
    try:
        executor = AsyncioExecutor(Executors.sync(), loop=loop)
        with pytest.raises(TypeError, match="coroutine needs an event loop"):
            executor.submit(a_coroutine_function)
    finally:
        loop.close()


@pytest.mark.parametrize("make", EXECUTORS.values(), ids=EXECUTORS.keys())
def test_a_non_callable_is_refused_at_submit(make: Callable[[], Any]) -> None:
    with make() as executor, pytest.raises(TypeError, match=r"^fn must be callable"):
        executor.submit(42)


def test_the_process_pool_refuses_a_non_callable_at_submit() -> None:
    with (
        Executors.process_pool(max_workers=1) as pool,
        pytest.raises(TypeError, match=r"^fn must be callable"),
    ):
        pool.submit("print")


@pytest.mark.parametrize("jitter", [1, "yes", None])
def test_retry_policy_jitter_must_be_a_bool(jitter: Any) -> None:
    with pytest.raises(TypeError, match=r"^jitter must be a bool"):
        ExceptionRetryPolicy(jitter=jitter)


# A wrong keyword to a method of the facade or a with_* method: the TypeError names
# the method called, not the constructor it passes its arguments to.
WRONG_KEYWORDS: dict[str, Callable[[], object]] = {
    "FluentExecutor.with_timeout": lambda: Executors.sync().with_timeout(
        1.0, max_attemps=3
    ),
    "Executors.with_timeout": lambda: Executors.with_timeout(
        Executors.sync(), 1.0, max_attemps=3
    ),
    "BoundCallable.with_timeout": lambda: Executors.bind(
        Executors.sync(), int
    ).with_timeout(1.0, max_attemps=3),
    "Executors.with_poll": lambda: Executors.with_poll(
        Executors.sync(), print, max_attemps=3
    ),
    "Executors.thread_pool": lambda: Executors.thread_pool(max_attemps=3),
    "Executors.process_pool": lambda: Executors.process_pool(max_attemps=3),
    "Executors.sync": lambda: Executors.sync(max_attemps=3),
}


@pytest.mark.parametrize("method", WRONG_KEYWORDS)
def test_a_wrong_keyword_names_the_method_called(method: str) -> None:
    expected = f"{method}() got an unexpected keyword argument 'max_attemps'"
    with pytest.raises(TypeError) as raised:
        WRONG_KEYWORDS[method]()
    # Python 3.13 adds a suggestion of its own, which the message keeps.
    suggestion = ". Did you mean 'max_attempts'?"
    assert str(raised.value) in (expected, expected + suggestion)


@pytest.mark.parametrize(
    "build",
    [
        lambda: Executors.sync().with_retry(max_attemps=3),
        lambda: Executors.with_retry(Executors.sync(), max_attemps=3),
        lambda: Executors.bind(Executors.sync(), int).with_retry(max_attemps=3),
    ],
    ids=["chain", "facade", "bound"],
)
def test_a_wrong_policy_keyword_of_with_retry_names_the_policy(
    build: Callable[[], object],
) -> None:
    # with_retry passes the keywords it does not take on to ExceptionRetryPolicy.
    with pytest.raises(TypeError, match=r"^ExceptionRetryPolicy.__init__\(\) got an "):
        build()


def test_a_missing_argument_names_the_facade_method() -> None:
    with pytest.raises(TypeError, match=r"^Executors\.with_timeout\(\) missing 1 "):
        Executors.with_timeout(Executors.sync())  # type: ignore[call-arg]


def test_a_type_error_of_the_arguments_themselves_is_left_as_it_is() -> None:
    with pytest.raises(TypeError, match=r"^name must be a str"):
        Executors.with_timeout(Executors.sync(), 1.0, name=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("pool", ["thread_pool", "process_pool"])
@pytest.mark.parametrize("value", ["4", 2.5, True])
def test_a_max_workers_not_an_int_is_refused_by_name(pool: str, value: object) -> None:
    build = getattr(Executors, pool)
    with pytest.raises(TypeError, match=r"^max_workers must be an int or None, got "):
        build(max_workers=value)
    with pytest.raises(TypeError, match=r"^max_workers must be an int or None, got "):
        build(value)


@pytest.mark.parametrize("pool", ["thread_pool", "process_pool"])
@pytest.mark.parametrize("value", [0, -1])
def test_a_max_workers_below_1_is_refused_by_name(pool: str, value: int) -> None:
    with pytest.raises(
        ValueError, match=rf"^max_workers must be at least 1, got {value}$"
    ):
        getattr(Executors, pool)(max_workers=value)
