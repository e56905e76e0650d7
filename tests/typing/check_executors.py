# pyright: strict, reportUnnecessaryTypeIgnoreComment=true
"""Static checks of the executors' types: ``Executors``, every ``with_*`` wrapper,
and chains of them.

Checked by ``mypy --strict`` and ``pyright`` (``nox -s typecheck``), never run;
see ``README.rst`` in this directory for how the checks read.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from concurrent.futures import Executor, Future
from typing import Any

from typing_extensions import assert_type

from fluent_executors import (
    AsyncioExecutor,
    CancelOnShutdownExecutor,
    ExceptionRetryPolicy,
    Executors,
    FlatMapExecutor,
    FluentExecutor,
    MapExecutor,
    PollDescriptor,
    PollExecutor,
    ProcessPoolExecutor,
    ProxyFuture,
    RateLimitExecutor,
    RetryExecutor,
    RetryPolicy,
    SyncExecutor,
    ThreadPoolExecutor,
    ThrottleCount,
    ThrottleExecutor,
    TimeoutExecutor,
    f_return,
)

# What submit is annotated to return on the library's executors (the pools, sync,
# every wrapper but asyncio's): the library's own future, which is awaitable.
ExecutorFuture = ProxyFuture


def work(task: int, *, scale: float = 1.0) -> str:
    return str(task * scale)


def parse(text: str) -> float:
    return float(text)


def to_int(value: float) -> int:
    return round(value)


def recover(error: Exception) -> float:
    return float("nan")


def upload(text: Any) -> Future[bytes]:
    return f_return(str(text).encode())


def poll_tasks(descriptors: list[PollDescriptor[str]]) -> float | None:
    for descriptor in descriptors:
        descriptor.yield_result()
    return None


def cancel_task(task: str) -> bool:
    return True


# -- base executors ----------------------------------------------------------------


def check_base_executors() -> None:
    assert_type(Executors.thread_pool(), ThreadPoolExecutor)
    assert_type(Executors.thread_pool(4, name="pool"), ThreadPoolExecutor)
    assert_type(Executors.process_pool(), ProcessPoolExecutor)
    assert_type(Executors.process_pool(2, name="pool"), ProcessPoolExecutor)
    assert_type(Executors.sync(), SyncExecutor)
    assert_type(Executors.sync(name="sync"), SyncExecutor)

    assert_type(Executors.thread_pool().submit(work, 1), ExecutorFuture[str])
    assert_type(Executors.process_pool().submit(work, 1), ExecutorFuture[str])
    assert_type(Executors.sync().submit(work, 1), ExecutorFuture[str])
    assert_type(Executors.sync().submit(work, 1, scale=2.0), ExecutorFuture[str])
    assert_type(Executors.sync().submit(parse, "1.5"), ExecutorFuture[float])
    assert_type(Executors.sync().submit(lambda: b""), ExecutorFuture[bytes])

    # Every executor of the library is a concurrent.futures.Executor and a
    # FluentExecutor, named.
    executor: Executor = Executors.sync()
    fluent: FluentExecutor = Executors.thread_pool()
    assert_type(fluent.name, str)
    del executor


def check_base_executors_errors() -> None:
    Executors.thread_pool(max_workers="4")  # type: ignore[arg-type]
    Executors.thread_pool(name=1)  # type: ignore[arg-type]
    Executors.sync(name=None)  # type: ignore[arg-type]
    Executors.sync().submit(work, "1")  # type: ignore[arg-type]
    Executors.sync().submit(work, 1, scale="2")  # type: ignore[arg-type]
    Executors.sync().submit(work)  # type: ignore[call-arg]
    Executors.sync().submit(work, 1, size=2)  # type: ignore[call-arg]
    Executors.thread_pool().submit(work, "1")  # type: ignore[arg-type]
    Executors.process_pool().submit(work, "1")  # type: ignore[arg-type]
    text = Executors.sync().submit(work, 1)
    wrong: Future[int] = text  # type: ignore[assignment]
    del wrong


def check_context_manager() -> None:
    with Executors.thread_pool() as pool:
        assert_type(pool, ThreadPoolExecutor)
    with Executors.sync().with_map(parse) as mapped:
        assert_type(mapped, MapExecutor[float])
        assert_type(mapped.submit(work, 1), ExecutorFuture[float])
    with Executors.sync().with_retry() as retry:
        assert_type(retry, RetryExecutor)


# -- each with_* method --------------------------------------------------------------


def check_with_map(base: ThreadPoolExecutor) -> None:
    assert_type(base.with_map(parse), MapExecutor[float])
    assert_type(base.with_map(parse).submit(work, 1), ExecutorFuture[float])
    assert_type(base.with_map(parse, None, "parser"), MapExecutor[float])
    assert_type(base.with_map(parse, error_fn=recover), MapExecutor[float])
    assert_type(base.with_map(parse, name="parsed"), MapExecutor[float])
    assert_type(base.with_map(lambda result: len(result)), MapExecutor[int])
    assert_type(Executors.with_map(base, parse), MapExecutor[float])
    # The submitted callable's parameters are still checked.
    assert_type(base.with_map(parse).submit(work, 1, scale=2.0), ExecutorFuture[float])
    # Maps compose: the outer map's type wins.
    assert_type(base.with_map(parse).with_map(to_int), MapExecutor[int])


def check_with_map_errors(base: ThreadPoolExecutor) -> None:
    base.with_map(parse).submit(work, "1")  # type: ignore[arg-type]
    base.with_map(1)  # type: ignore[arg-type]
    number = base.with_map(parse).submit(work, 1)
    wrong: Future[str] = number  # type: ignore[assignment]
    del wrong


def check_with_flat_map(base: ThreadPoolExecutor) -> None:
    assert_type(base.with_flat_map(upload), FlatMapExecutor[bytes])
    assert_type(base.with_flat_map(upload).submit(work, 1), ExecutorFuture[bytes])
    assert_type(
        base.with_flat_map(upload, error_fn=lambda e: upload(e)), FlatMapExecutor[bytes]
    )
    assert_type(Executors.with_flat_map(base, upload), FlatMapExecutor[bytes])


def check_with_flat_map_errors(base: ThreadPoolExecutor) -> None:
    # fn must return a future: parse returns a float.
    base.with_flat_map(parse)  # type: ignore[arg-type]


def check_with_retry(base: ThreadPoolExecutor) -> None:
    policy = ExceptionRetryPolicy(max_attempts=5, exception_base=(OSError,))
    assert_type(base.with_retry(), RetryExecutor)
    assert_type(base.with_retry(policy), RetryExecutor)
    assert_type(base.with_retry(max_attempts=5, sleep=0.1), RetryExecutor)
    assert_type(Executors.with_retry(base, policy), RetryExecutor)
    retry = base.with_retry(policy)
    assert_type(retry.submit(work, 1), ExecutorFuture[str])
    assert_type(retry.submit_retry(RetryPolicy(), work, 1), ExecutorFuture[str])
    assert_type(retry.retry_policy, RetryPolicy)
    assert_type(retry.delegate, Executor)


def check_with_retry_errors(base: ThreadPoolExecutor) -> None:
    base.with_retry(5)  # type: ignore[arg-type]
    base.with_retry().submit(work, "1")  # type: ignore[call-overload]
    base.with_retry().submit_retry(work, 1)  # type: ignore[call-overload]
    ExceptionRetryPolicy(max_attempts="5")  # type: ignore[arg-type]
    ExceptionRetryPolicy(exception_base=str)  # type: ignore[arg-type]
    base.with_retry().retry_policy = RetryPolicy()  # type: ignore[misc]


def check_with_timeout(base: ThreadPoolExecutor) -> None:
    assert_type(base.with_timeout(10.0), TimeoutExecutor)
    assert_type(base.with_timeout(10), TimeoutExecutor)
    assert_type(Executors.with_timeout(base, 10.0), TimeoutExecutor)
    timeout = base.with_timeout(10.0)
    assert_type(timeout.submit(work, 1), ExecutorFuture[str])
    assert_type(timeout.submit_timeout(1.0, work, 1), ExecutorFuture[str])
    assert_type(timeout.timeout, float)


def check_with_timeout_errors(base: ThreadPoolExecutor) -> None:
    base.with_timeout("10")  # type: ignore[arg-type]
    base.with_timeout(10.0).submit_timeout(work, 1)  # type: ignore[call-overload]
    base.with_timeout(10.0).timeout = 1.0  # type: ignore[misc]


def check_with_throttle(base: ThreadPoolExecutor) -> None:
    assert_type(base.with_throttle(4), ThrottleExecutor)
    assert_type(base.with_throttle(lambda: 4), ThrottleExecutor)
    assert_type(base.with_throttle(lambda: None, block=True), ThrottleExecutor)
    assert_type(Executors.with_throttle(base, 4), ThrottleExecutor)
    throttle = base.with_throttle(4)
    assert_type(throttle.submit(work, 1), ExecutorFuture[str])
    assert_type(throttle.count, ThrottleCount)
    assert_type(throttle.block, bool)


def check_with_throttle_errors(base: ThreadPoolExecutor) -> None:
    base.with_throttle("4")  # type: ignore[arg-type]
    base.with_throttle(lambda: "4")  # type: ignore[arg-type,return-value]


def check_with_rate_limit(base: ThreadPoolExecutor) -> None:
    assert_type(base.with_rate_limit(10), RateLimitExecutor)
    assert_type(base.with_rate_limit(10, period=60.0), RateLimitExecutor)
    assert_type(Executors.with_rate_limit(base, 10), RateLimitExecutor)
    rate_limit = base.with_rate_limit(10, 1.0)
    assert_type(rate_limit.submit(work, 1), ExecutorFuture[str])
    assert_type(rate_limit.max_calls, int)
    assert_type(rate_limit.period, float)


def check_with_rate_limit_errors(base: ThreadPoolExecutor) -> None:
    base.with_rate_limit(2.5)  # type: ignore[arg-type]


def check_with_cancel_on_shutdown(base: ThreadPoolExecutor) -> None:
    assert_type(base.with_cancel_on_shutdown(), CancelOnShutdownExecutor)
    assert_type(
        Executors.with_cancel_on_shutdown(base, name="x"), CancelOnShutdownExecutor
    )
    assert_type(base.with_cancel_on_shutdown().submit(work, 1), ExecutorFuture[str])


def check_with_poll(base: ThreadPoolExecutor) -> None:
    assert_type(base.with_poll(poll_tasks), PollExecutor)
    assert_type(base.with_poll(poll_tasks, cancel_task, 2.0), PollExecutor)
    assert_type(base.with_poll(poll_tasks, name="tasks"), PollExecutor)
    assert_type(
        Executors.with_poll(base, poll_tasks, cancel_fn=cancel_task), PollExecutor
    )
    assert_type(base.with_poll(poll_tasks).submit(work, 1), ExecutorFuture[str])
    assert_type(base.with_poll(poll_tasks).notify(), None)


def check_with_asyncio(
    base: ThreadPoolExecutor, loop: asyncio.AbstractEventLoop
) -> None:
    assert_type(base.with_asyncio(), AsyncioExecutor)
    assert_type(base.with_asyncio(loop), AsyncioExecutor)
    assert_type(Executors.with_asyncio(base, loop=loop), AsyncioExecutor)
    executor = base.with_asyncio(loop)
    assert_type(executor.loop, asyncio.AbstractEventLoop | None)
    assert_type(executor.submit(work, 1), asyncio.Future[str])
    assert_type(executor.submit_with_loop(loop, work, 1), asyncio.Future[str])


async def check_with_asyncio_await(base: ThreadPoolExecutor) -> None:
    assert_type(await base.with_asyncio().submit(work, 1), str)
    assert_type(await base.with_asyncio().submit(parse, "1"), float)


def check_with_asyncio_errors(base: ThreadPoolExecutor) -> None:
    base.with_asyncio(loop=1)  # type: ignore[arg-type]
    base.with_asyncio().submit(work, "1")  # type: ignore[call-overload]
    # Its futures are asyncio futures, not concurrent.futures ones.
    future = base.with_asyncio().submit(work, 1)
    wrong: Future[str] = future  # type: ignore[assignment]
    del wrong


def check_wrapping_any_executor() -> None:
    # The with_* static methods take any concurrent.futures.Executor.
    pool = concurrent.futures.ThreadPoolExecutor()
    assert_type(Executors.with_retry(pool).submit(work, 1), ExecutorFuture[str])
    assert_type(Executors.with_map(pool, parse).submit(work, 1), ExecutorFuture[float])
    # The wrapper classes can be built directly too.
    assert_type(MapExecutor(pool, parse), MapExecutor[float])
    assert_type(MapExecutor(pool), MapExecutor[Any])
    assert_type(FlatMapExecutor(pool, upload), FlatMapExecutor[bytes])
    assert_type(RetryExecutor(pool).submit(work, 1), ExecutorFuture[str])
    assert_type(TimeoutExecutor(pool, 1.0).submit(work, 1), ExecutorFuture[str])
    assert_type(ThrottleExecutor(pool, 2).submit(work, 1), ExecutorFuture[str])
    assert_type(RateLimitExecutor(pool, 2).submit(work, 1), ExecutorFuture[str])
    assert_type(CancelOnShutdownExecutor(pool).submit(work, 1), ExecutorFuture[str])
    assert_type(PollExecutor(pool, poll_tasks).submit(work, 1), ExecutorFuture[str])
    assert_type(AsyncioExecutor(pool).submit(work, 1), asyncio.Future[str])


def check_wrapping_any_executor_errors() -> None:
    Executors.with_retry(object())  # type: ignore[arg-type]
    Executors.with_map(work, parse)  # type: ignore[call-overload]


# -- chains --------------------------------------------------------------------------


def check_chains_keep_the_type() -> None:
    # The user guide's chain (docs/guide.rst): every link keeps the result type.
    executor = (
        Executors.thread_pool(max_workers=8, name="publisher")
        .with_poll(poll_tasks, cancel_fn=cancel_task, default_interval=2.0)
        .with_timeout(600.0)
        .with_retry()
    )
    assert_type(executor, RetryExecutor)
    assert_type(executor.submit(work, 1), ExecutorFuture[str])

    chain = (
        Executors.sync()
        .with_cancel_on_shutdown()
        .with_throttle(2)
        .with_rate_limit(5)
        .with_timeout(1.0)
    )
    assert_type(chain.submit(work, 1), ExecutorFuture[str])


def check_chains_change_the_type_at_the_outer_end() -> None:
    base = Executors.thread_pool()
    assert_type(
        base.with_retry().with_map(parse).submit(work, 1), ExecutorFuture[float]
    )
    assert_type(
        base.with_timeout(1.0).with_flat_map(upload).submit(work, 1),
        ExecutorFuture[bytes],
    )
    assert_type(base.with_map(parse).with_flat_map(upload), FlatMapExecutor[bytes])
    assert_type(base.with_retry().with_asyncio().submit(work, 1), asyncio.Future[str])


async def check_wrapper_futures_are_awaitable() -> None:
    # docs/asyncio.rst: "Every ProxyFuture - the futures of the wrapper executors
    # and of the future combinators - can be awaited in a coroutine"; and the
    # pools' submit: "A Future[T] of the library (ProxyFuture), which can also be
    # awaited in a coroutine."
    base = Executors.thread_pool()
    assert_type(await base.submit(work, 1), str)
    assert_type(await Executors.process_pool().submit(work, 1), str)
    assert_type(await base.with_retry().submit(work, 1), str)
    assert_type(await base.with_timeout(1.0).submit(work, 1), str)
    assert_type(await base.with_map(parse).submit(work, 1), float)
    assert_type(await Executors.sync().submit(work, 1), str)


def check_library_futures_work_with_wait_and_as_completed() -> None:
    futures = [Executors.thread_pool().submit(work, n) for n in range(3)]
    for future in concurrent.futures.as_completed(futures):
        assert_type(future, concurrent.futures.Future[str])
    assert_type(
        concurrent.futures.wait(futures).done, set[concurrent.futures.Future[str]]
    )
