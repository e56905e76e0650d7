# pyright: strict, reportUnnecessaryTypeIgnoreComment=true
"""Static checks of how a result type flows down a chain: an executor is a
``FluentExecutor[R]``, ``SameResult`` (the default) standing for the submitted
callable's own result type, and every wrapper keeps the ``R`` of the executor it
wraps, so that wrappers around a map executor have the map's result type.

Checked by ``mypy --strict`` and ``pyright`` (``nox -s typecheck``), never run;
see ``README.rst`` in this directory for how the checks read.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Iterator
from concurrent.futures import Executor, Future
from typing import Any

from typing_extensions import assert_type

from fluent_executors import (
    AsyncioExecutor,
    BoundCallable,
    CancelOnShutdownExecutor,
    Executors,
    FlatMapExecutor,
    FluentExecutor,
    MapExecutor,
    PollDescriptor,
    PollExecutor,
    ProxyFuture,
    RateLimitExecutor,
    RetryExecutor,
    RetryPolicy,
    SameResult,
    ThreadPoolExecutor,
    ThrottleExecutor,
    TimeoutExecutor,
    f_return,
)


def work(task: int, *, scale: float = 1.0) -> str:
    return str(task * scale)


# Positional-only, so that assert_type can spell a BoundCallable's parameters.
def fetch(url: str, /) -> bytes:
    return url.encode()


def parse(text: str) -> float:
    return float(text)


def to_int(value: float) -> int:
    return round(value)


def upload(text: Any) -> Future[bytes]:
    return f_return(str(text).encode())


def poll_tasks(descriptors: list[PollDescriptor[Any]]) -> None:
    for descriptor in descriptors:
        descriptor.yield_result()


# -- the plain case: futures of the callable's result type -------------------------


def check_wrappers_of_a_plain_executor_have_the_same_result(
    base: ThreadPoolExecutor, loop: asyncio.AbstractEventLoop
) -> None:
    assert_type(base.with_retry(), RetryExecutor[SameResult])
    assert_type(base.with_retry().submit(work, 1), ProxyFuture[str])
    assert_type(
        base.with_retry().submit_retry(RetryPolicy(), work, 1), ProxyFuture[str]
    )
    assert_type(base.with_timeout(1.0).submit_timeout(2.0, work, 1), ProxyFuture[str])
    assert_type(
        base.with_asyncio().submit_with_loop(loop, work, 1), asyncio.Future[str]
    )
    # SameResult is the default: the bare class names the same type.
    plain: RetryExecutor = base.with_retry()
    same: RetryExecutor[SameResult] = plain
    fluent: FluentExecutor = base.with_timeout(1.0).with_retry()
    del same, fluent
    # A FluentExecutor[SameResult] delegate, to the facade and the classes.
    assert_type(Executors.with_retry(base), RetryExecutor[SameResult])
    assert_type(TimeoutExecutor(base, 1.0), TimeoutExecutor[SameResult])


def check_any_executor_wrapped_has_the_same_result() -> None:
    pool = concurrent.futures.ThreadPoolExecutor()
    assert_type(Executors.with_retry(pool), RetryExecutor[SameResult])
    assert_type(Executors.with_timeout(pool, 1.0), TimeoutExecutor[SameResult])
    assert_type(RetryExecutor(pool), RetryExecutor[SameResult])
    assert_type(TimeoutExecutor(pool, 1.0).submit(work, 1), ProxyFuture[str])
    assert_type(Executors.bind(pool, fetch), BoundCallable[[str], bytes])


# -- wrappers around a map: the map's result type ----------------------------------


def check_wrappers_around_a_map_have_its_result_type(
    base: ThreadPoolExecutor, loop: asyncio.AbstractEventLoop
) -> None:
    assert_type(base.with_map(parse).with_retry().submit(work, 1), ProxyFuture[float])
    assert_type(
        base.with_flat_map(upload).with_timeout(1.0).submit(work, 1),
        ProxyFuture[bytes],
    )
    assert_type(
        base.with_map(parse).with_asyncio().submit(work, 1), asyncio.Future[float]
    )

    mapped = base.with_map(parse)
    assert_type(mapped.with_poll(poll_tasks), PollExecutor[float])
    assert_type(mapped.with_retry(), RetryExecutor[float])
    assert_type(mapped.with_timeout(1.0), TimeoutExecutor[float])
    assert_type(mapped.with_throttle(2), ThrottleExecutor[float])
    assert_type(mapped.with_rate_limit(5), RateLimitExecutor[float])
    assert_type(mapped.with_cancel_on_shutdown(), CancelOnShutdownExecutor[float])
    assert_type(mapped.with_asyncio(), AsyncioExecutor[float])

    assert_type(mapped.with_poll(poll_tasks).submit(work, 1), ProxyFuture[float])
    assert_type(mapped.with_throttle(2).submit(work, 1), ProxyFuture[float])
    assert_type(mapped.with_rate_limit(5).submit(work, 1), ProxyFuture[float])
    assert_type(mapped.with_cancel_on_shutdown().submit(work, 1), ProxyFuture[float])
    # The other submit methods too.
    retry = mapped.with_retry()
    assert_type(retry.submit_retry(RetryPolicy(), work, 1), ProxyFuture[float])
    timeout = mapped.with_timeout(1.0)
    assert_type(timeout.submit_timeout(2.0, work, 1), ProxyFuture[float])
    in_loop = mapped.with_asyncio()
    assert_type(in_loop.submit_with_loop(loop, work, 1), asyncio.Future[float])


def check_a_chain_of_every_wrapper_around_a_map(base: ThreadPoolExecutor) -> None:
    chain = (
        base.with_map(parse)
        .with_poll(poll_tasks)
        .with_timeout(1.0)
        .with_retry()
        .with_throttle(2)
        .with_rate_limit(5)
        .with_cancel_on_shutdown()
    )
    assert_type(chain, CancelOnShutdownExecutor[float])
    assert_type(chain.submit(work, 1), ProxyFuture[float])
    assert_type(chain.with_asyncio().submit(work, 1), asyncio.Future[float])
    # A map anywhere in the chain sets the type from there outwards.
    assert_type(
        base.with_retry().with_map(parse).with_timeout(1.0).submit(work, 1),
        ProxyFuture[float],
    )
    assert_type(
        chain.with_map(to_int).with_retry().with_throttle(1).submit(work, 1),
        ProxyFuture[int],
    )
    assert_type(
        base.with_map(parse).with_retry().with_flat_map(upload).with_timeout(1.0),
        TimeoutExecutor[bytes],
    )


async def check_awaiting_a_wrapper_around_a_map(base: ThreadPoolExecutor) -> None:
    assert_type(await base.with_map(parse).with_retry().submit(work, 1), float)
    assert_type(await base.with_map(parse).with_asyncio().submit(work, 1), float)


def check_executors_functions_around_a_map(base: ThreadPoolExecutor) -> None:
    mapped = Executors.with_map(base, parse)
    assert_type(
        Executors.with_retry(Executors.with_map(base, parse)).submit(work, 1),
        ProxyFuture[float],
    )
    assert_type(Executors.with_poll(mapped, poll_tasks), PollExecutor[float])
    assert_type(Executors.with_retry(mapped), RetryExecutor[float])
    assert_type(Executors.with_timeout(mapped, 1.0), TimeoutExecutor[float])
    assert_type(Executors.with_throttle(mapped, 2), ThrottleExecutor[float])
    assert_type(Executors.with_rate_limit(mapped, 5), RateLimitExecutor[float])
    assert_type(
        Executors.with_cancel_on_shutdown(mapped), CancelOnShutdownExecutor[float]
    )
    assert_type(Executors.with_asyncio(mapped), AsyncioExecutor[float])
    assert_type(
        Executors.with_timeout(Executors.with_flat_map(base, upload), 1.0),
        TimeoutExecutor[bytes],
    )


def check_constructors_around_a_map() -> None:
    pool = concurrent.futures.ThreadPoolExecutor()
    mapped = MapExecutor(pool, parse)
    assert_type(RetryExecutor(mapped), RetryExecutor[float])
    assert_type(RetryExecutor(mapped).submit(work, 1), ProxyFuture[float])
    assert_type(PollExecutor(mapped, poll_tasks), PollExecutor[float])
    assert_type(TimeoutExecutor(mapped, 1.0), TimeoutExecutor[float])
    assert_type(ThrottleExecutor(mapped, 2), ThrottleExecutor[float])
    assert_type(RateLimitExecutor(mapped, 5), RateLimitExecutor[float])
    assert_type(CancelOnShutdownExecutor(mapped), CancelOnShutdownExecutor[float])
    assert_type(AsyncioExecutor(mapped).submit(work, 1), asyncio.Future[float])
    assert_type(
        RetryExecutor(TimeoutExecutor(FlatMapExecutor(pool, upload), 1.0)),
        RetryExecutor[bytes],
    )


def check_the_result_type_in_annotations(base: ThreadPoolExecutor) -> None:
    def run(executor: FluentExecutor[float]) -> None:
        del executor

    run(base.with_map(parse))
    run(base.with_map(parse).with_retry().with_timeout(1.0))
    retry: RetryExecutor[float] = base.with_map(parse).with_retry()
    del retry


def check_binding_to_a_wrapper_around_a_map(base: ThreadPoolExecutor) -> None:
    mapped = base.with_map(parse).with_retry()
    assert_type(mapped.bind(fetch), BoundCallable[[str], float])
    assert_type(Executors.bind(mapped, fetch), BoundCallable[[str], float])
    assert_type(mapped.bind(fetch)("u"), Future[float])
    # flat_bind takes the executor's futures of futures apart.
    of_futures = base.with_map(upload).with_timeout(1.0)
    assert_type(of_futures, TimeoutExecutor[Future[bytes]])
    assert_type(of_futures.flat_bind(fetch), BoundCallable[[str], bytes])
    assert_type(Executors.flat_bind(of_futures, fetch), BoundCallable[[str], bytes])


def check_result_type_errors(base: ThreadPoolExecutor) -> None:
    # The submitted callable's parameters are still checked.
    base.with_map(parse).with_retry().submit(work, "1")  # type: ignore[arg-type]
    number = base.with_map(parse).with_retry().submit(work, 1)
    wrong: Future[str] = number  # type: ignore[assignment]
    del wrong
    # The bare class is the SameResult one: a wrapper around a map is not that.
    plain: RetryExecutor = base.with_map(parse).with_retry()  # type: ignore[assignment]
    del plain

    def run(executor: FluentExecutor) -> None:
        del executor

    run(base.with_map(parse).with_timeout(1.0))  # type: ignore[arg-type]
    # flat_bind needs futures of futures; these resolve with a float.
    base.with_map(parse).flat_bind(upload)  # type: ignore[misc]


def check_every_executor_is_a_fluent_executor_of_some_result(
    base: ThreadPoolExecutor,
) -> None:
    executors: list[FluentExecutor[Any]] = [base, base.with_map(parse).with_retry()]
    as_executor: Executor = base.with_map(parse).with_retry()
    del executors, as_executor


def check_map_gives_the_result_type_of_the_executor(base: ThreadPoolExecutor) -> None:
    # map, on every executor: fn's results on a plain one, the map's on one
    # around a map executor.
    assert_type(base.map(fetch, ["a"], buffersize=2), Iterator[bytes])
    assert_type(base.with_retry().map(fetch, ["a"]), Iterator[bytes])
    assert_type(base.with_map(parse).with_retry().map(fetch, ["a"]), Iterator[float])
    assert_type(
        Executors.process_pool().map(fetch, ["a"], chunksize=4), Iterator[bytes]
    )
    assert_type(Executors.interpreter_pool(2).map(fetch, ["a"]), Iterator[bytes])
    assert_type(base.with_asyncio().map(fetch, ["a"]), Iterator[bytes])
    assert_type(base.with_map(parse).with_asyncio().map(fetch, ["a"]), Iterator[float])
