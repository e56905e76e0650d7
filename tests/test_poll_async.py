"""PollExecutor with an async poll function (docs/poll.rst, "Async poll
functions"): awaited on one event loop of the poll thread, cancelled after
``poll_timeout`` as a failed poll, the loop closed when the thread ends."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from typing import Any

from fluent_executors import (
    ExceptionRetryPolicy,
    Executors,
    PollDescriptor,
    PollExecutor,
    RetryPolicy,
)

TIMEOUT = 10.0  # seconds: a generous bound for anything that should happen "now"


def test_an_async_poll_function_is_awaited_on_one_loop() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def check(task: str) -> str:
        await asyncio.sleep(0)
        return task.upper()

    async def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        loops.append(asyncio.get_running_loop())
        results = await asyncio.gather(*(check(d.result) for d in descriptors))
        for descriptor, result in zip(descriptors, results, strict=True):
            if descriptor.polls >= 2:
                descriptor.yield_result(result)
        return 0.0

    with PollExecutor(Executors.sync(), poll) as executor:
        futures = [executor.submit(str, f"t{i}") for i in range(5)]
        assert [f.result(TIMEOUT) for f in futures] == [f"T{i}" for i in range(5)]
    assert len(loops) >= 2
    assert all(loop is loops[0] for loop in loops)
    assert loops[0].is_closed()  # shutdown ended the thread, which closed it


def test_an_async_poll_function_that_raises_fails_its_futures() -> None:
    error = ValueError("bad answer")

    async def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        raise error

    with PollExecutor(Executors.sync(), poll) as executor:
        assert executor.submit(lambda: 1).exception(TIMEOUT) is error


def test_an_async_poll_over_its_timeout_is_cancelled_and_retried() -> None:
    cancelled = threading.Event()
    attempts: list[int] = []

    class Recording(RetryPolicy):
        def should_retry(self, attempt: int, future: Future[Any]) -> bool:
            attempts.append(attempt)
            return isinstance(future.exception(), TimeoutError)

        def sleep_time(self, attempt: int, future: Future[Any]) -> float:
            return 0.0

    async def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        if not cancelled.is_set():
            try:
                await asyncio.sleep(TIMEOUT)  # hangs: cancelled by poll_timeout
            except asyncio.CancelledError:
                cancelled.set()
                raise
        for descriptor in descriptors:
            descriptor.yield_result()
        return 0.0

    with PollExecutor(
        Executors.sync(), poll, poll_timeout=0.05, poll_retry_policy=Recording()
    ) as executor:
        assert executor.submit(lambda: "t").result(TIMEOUT) == "t"
    assert cancelled.is_set()
    assert attempts == [1]


def test_an_async_poll_over_its_timeout_fails_its_futures_without_a_policy() -> None:
    async def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        await asyncio.sleep(TIMEOUT)

    with PollExecutor(Executors.sync(), poll, poll_timeout=0.01) as executor:
        error = executor.submit(lambda: "t").exception(TIMEOUT)
    assert isinstance(error, TimeoutError)
    assert "poll_timeout" in str(error)


def test_with_poll_takes_an_async_poll_function_and_a_policy() -> None:
    calls = 0

    async def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("503")
        for descriptor in descriptors:
            descriptor.yield_result()
        return 0.0

    policy = ExceptionRetryPolicy(
        max_attempts=3, sleep=0.0, exception_base=ConnectionError
    )
    with Executors.sync().with_poll(poll, poll_retry_policy=policy) as executor:
        assert executor.submit(lambda: 7).result(TIMEOUT) == 7
