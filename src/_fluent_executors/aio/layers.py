"""What each layer of an async chain does with a run, one class per kind: the two
at the bottom, which call the function (inline, thread pool), and one per chain
method. An :class:`~fluent_executors.aio.AsyncExecutor` holds one of them and
hands it the run as ``call``: the function itself (its arguments bound) at the
bottom, else a coroutine function that runs the layers inside."""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import anyio
import anyio.to_thread

from ..logging import ContainedLogger
from ..poll.descriptor import PollDescriptor, PollFuture
from ..retry_policy import RetryPolicy, ask_policy, success_is_final
from .driver import AsyncPollDriver, call_maybe_async

__all__ = [
    "Inline",
    "Layer",
    "Map",
    "Poll",
    "RateLimit",
    "Retry",
    "ThreadPool",
    "Throttle",
    "Timeout",
]


class Layer:
    """The work of one layer; its class's name is the layer's in ``repr``."""

    kind = "async"  # the kind of its executor's stats()

    async def run(self, call: Callable[[], Any]) -> Any:
        """Run ``call`` (the function, or the layers inside) as this layer does,
        and return what the run returns."""
        raise NotImplementedError


class Inline(Layer):
    kind = "inline"

    async def run(self, call: Callable[[], Any]) -> Any:
        return await call_maybe_async(call)


class _Limiter:
    """An ``anyio.CapacityLimiter`` of ``total`` tokens, made on the event loop at
    its first use (anyio makes one only inside a loop)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._limiter: anyio.CapacityLimiter | None = None

    def get(self) -> anyio.CapacityLimiter:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.total)
        return self._limiter


class ThreadPool(Layer):
    kind = "threadpool"

    def __init__(self, max_workers: int) -> None:
        self._limiter = _Limiter(max_workers)

    async def run(self, call: Callable[[], Any]) -> Any:
        return await anyio.to_thread.run_sync(call, limiter=self._limiter.get())


class Poll(Layer):
    kind = "poll"

    def __init__(self, driver: AsyncPollDriver) -> None:
        self.driver = driver
        self.started = False  # its loop runs in a block

    async def run(self, call: Callable[[], Any]) -> Any:
        result = await call()
        driver = self.driver
        future: PollFuture[Any] = PollFuture(driver)
        descriptor = PollDescriptor(future, result)
        future.attach(descriptor)
        driver.adopt(future)
        done = anyio.Event()
        future.add_done_callback(lambda _: driver.call_on_loop(done.set))
        driver.start_polling(future, descriptor)
        try:
            await done.wait()
        except anyio.get_cancelled_exc_class():
            if future.cancel_now():  # still polled: stop, and cancel the remote task
                await driver.cancel_remote(result)
            raise
        return future.result()

    def close(self) -> None:
        """The poll loop has stopped: fail what it still polled."""
        error = RuntimeError(
            f"the 'async with' block of async executor {self.driver.name!r} ended "
            "while this run was polled"
        )
        self.driver.fail_polled(error)


class Retry(Layer):
    kind = "retry"

    def __init__(
        self, name: str, policy: RetryPolicy, logger: logging.Logger | None
    ) -> None:
        self._name = name
        self._policy = policy
        self._logger = ContainedLogger(
            logger or logging.getLogger("fluent_executors.aio")
        )

    async def run(self, call: Callable[[], Any]) -> Any:
        policy, started, attempt = self._policy, anyio.current_time(), 0
        while True:
            attempt += 1
            outcome: Future[Any] = Future()
            try:
                result = await call()
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as error:  # the attempt's: the policy decides
                outcome.set_exception(error)
                failure: Exception | None = error
            else:
                if success_is_final(policy):
                    return result
                outcome.set_result(result)
                failure = None
            try:
                delay = ask_policy(
                    policy, attempt, outcome, anyio.current_time() - started
                )
            except BaseException:  # the policy's: logged, the attempt's outcome
                self._logger.exception(
                    "retry policy %r of async executor %r raised", policy, self._name
                )
                delay = None
            if delay is None:
                if failure is not None:
                    raise failure
                return outcome.result()
            if delay == math.inf:
                await anyio.sleep_forever()
            await anyio.sleep(delay)


class Timeout(Layer):
    kind = "timeout"

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout

    async def run(self, call: Callable[[], Any]) -> Any:
        with anyio.fail_after(self._timeout):
            return await call()


class Throttle(Layer):
    kind = "throttle"

    def __init__(self, count: int) -> None:
        self._limiter = _Limiter(count)

    async def run(self, call: Callable[[], Any]) -> Any:
        async with self._limiter.get():
            return await call()


class RateLimit(Layer):
    kind = "ratelimit"

    def __init__(self, max_calls: int, period: float) -> None:
        self._max_calls = max_calls
        self._period = period
        self._starts: deque[float] = deque()  # of the window, oldest first

    async def run(self, call: Callable[[], Any]) -> Any:
        starts = self._starts
        while True:
            now = anyio.current_time()
            while starts and starts[0] <= now - self._period:
                starts.popleft()
            if len(starts) < self._max_calls:
                break
            await anyio.sleep(starts[0] + self._period - now)
        starts.append(now)
        return await call()


class Map(Layer):
    kind = "map"

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self._fn = fn

    async def run(self, call: Callable[[], Any]) -> Any:
        return await call_maybe_async(self._fn, await call())
