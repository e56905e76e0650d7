"""What each layer of an async chain does with a run, one class per kind: the two
at the bottom, which call the function (inline, thread pool), and one per chain
method. An :class:`~fluent_executors.aio.AsyncExecutor` holds one of them and
hands it the run as ``call``: the function itself (its arguments bound) at the
bottom, else a coroutine function that runs the layers inside.

A layer serves one event loop at a time: the executors whose chain holds it count
on it the runs under way through it and the blocks open around it, and make it
start afresh (:meth:`Layer.fresh`: limiters, windows, clocks) as another loop
takes it up; on the same loop it keeps its state from block to block (a
rate-limit window, a ``Retry-After`` pause). A poll layer starts afresh at each
block, with its new poll loop."""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import anyio
import anyio.to_thread

from ..adaptive import AdaptiveRate
from ..logging import ContainedLogger
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

    def __init__(self) -> None:
        self.loop: object = None  # the event loop it serves (executor.Loop)
        self.runs = 0  # runs under way through it
        self.blocks = 0  # blocks open around it
        self.idle: anyio.Event | None = None  # set as its last run ends

    def busy(self) -> bool:
        """Whether a run or a block holds it to its event loop."""
        return bool(self.runs or self.blocks)

    def fresh(self) -> None:
        """Start afresh (another event loop, or a poll layer's new block): drop
        what belongs to an event loop."""

    async def run(self, call: Callable[[], Any]) -> Any:
        """Run ``call`` (the function, or the layers inside) as this layer does,
        and return what the run returns."""
        raise NotImplementedError

    async def resumed(self, call: Callable[[], Any], started: float) -> Any:
        """What this layer makes of a run that ``attach()`` or ``resume()`` made
        at ``started`` (``anyio.current_time()``), ``call`` awaiting the layers
        inside: as it is, by default (a retry layer has no callable to run
        again; a throttle or rate limit, no call to hold back)."""
        return await call()


class Inline(Layer):
    kind = "inline"

    async def run(self, call: Callable[[], Any]) -> Any:
        return await call_maybe_async(call)


class _Limited(Layer):
    """A layer with an ``anyio.CapacityLimiter`` of ``total`` tokens, made on the
    event loop at its first use (anyio makes one only inside a loop), anew for
    each loop."""

    def __init__(self, total: int) -> None:
        super().__init__()
        self._total = total
        self._limiter: anyio.CapacityLimiter | None = None

    def limiter(self) -> anyio.CapacityLimiter:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self._total)
        return self._limiter

    def fresh(self) -> None:
        self._limiter = None


class ThreadPool(_Limited):
    kind = "threadpool"

    async def run(self, call: Callable[[], Any]) -> Any:
        return await anyio.to_thread.run_sync(call, limiter=self.limiter())


class Poll(Layer):
    kind = "poll"

    def __init__(self, driver: AsyncPollDriver) -> None:
        super().__init__()
        self.driver = driver
        self.closing = False  # the block of its loop is ending: no new run

    def fresh(self) -> None:
        self.driver.reset()

    async def run(self, call: Callable[[], Any]) -> Any:
        return await self.driver.attach(await call())

    def stopped(self) -> None:
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
        super().__init__()
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
        super().__init__()
        self._timeout = timeout

    async def run(self, call: Callable[[], Any]) -> Any:
        with anyio.fail_after(self._timeout):
            return await call()

    async def resumed(self, call: Callable[[], Any], started: float) -> Any:
        # (anyio.fail_at is anyio 4.15's; this is what it does.)
        with anyio.CancelScope(deadline=started + self._timeout):
            return await call()
        raise TimeoutError  # the scope caught its own cancellation: time is out


class Throttle(_Limited):
    kind = "throttle"

    async def run(self, call: Callable[[], Any]) -> Any:
        async with self.limiter():
            return await call()


class RateLimit(Layer):
    kind = "ratelimit"

    def __init__(self, rate: AdaptiveRate) -> None:
        super().__init__()
        self.rate = rate  # its limit and pause; adaptive or not
        self._starts: deque[float] = deque()  # of the window, oldest first
        self.pausing = 0  # runs waiting now for the end of a Retry-After pause

    def fresh(self) -> None:
        self._starts.clear()  # times of another loop's clock
        self.rate.reset()

    async def run(self, call: Callable[[], Any]) -> Any:
        starts, rate, period = self._starts, self.rate, self.rate.period
        while True:
            now = anyio.current_time()
            while starts and starts[0] <= now - period:
                starts.popleft()
            if now < rate.paused_until:  # a Retry-After pause (adaptive)
                self.pausing += 1
                try:
                    await anyio.sleep(rate.paused_until - now)
                finally:
                    self.pausing -= 1
                continue
            limit = rate.limit
            if len(starts) < limit:
                break
            # When enough starts have left the window for one more (the oldest,
            # unless adaptive cut the limit).
            await anyio.sleep(starts[len(starts) - limit] + period - now)
        starts.append(now)
        if rate.settings is None:
            return await call()
        try:
            result = await call()
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as error:  # the run's: "too many"?
            too_many, pause = rate.classify(error)
            if too_many and rate.cut(anyio.current_time(), pause):
                rate.report_cut(rate.rate, pause)
            raise
        rate.succeeded()
        return result


class Map(Layer):
    kind = "map"

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        super().__init__()
        self._fn = fn

    async def run(self, call: Callable[[], Any]) -> Any:
        return await call_maybe_async(self._fn, await call())

    async def resumed(self, call: Callable[[], Any], started: float) -> Any:
        return await self.run(call)
