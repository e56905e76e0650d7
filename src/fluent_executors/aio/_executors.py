"""The async executors: a base (:class:`AsyncExecutor`, its ``run`` and
``async with``), the two that run the function (inline, thread pool), and one
layer per chain method."""

from __future__ import annotations

import functools
import logging
import math
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import anyio
import anyio.to_thread

from .._counts import Counts
from .._fluent import R, SameResult
from .._logging import ContainedLogger
from .._poll.descriptor import PollDescriptor, PollFuture
from .._poll.settings import PollSettings
from .._retry_policy import RetryPolicy, ask_policy, policy_of, success_is_final
from .._wrapper import check_callable, check_non_negative
from ..rate_limit import check_rate
from ._driver import AsyncPollDriver, call_maybe_async

if TYPE_CHECKING:
    from types import TracebackType

    from anyio.abc import TaskGroup
    from typing_extensions import ParamSpec, Self

    from .._stats import ExecutorStats, PollStats

    P = ParamSpec("P")

__all__ = ["AsyncExecutor", "AsyncExecutors", "AsyncPollFn"]

T = TypeVar("T")
U = TypeVar("U")

AsyncPollFn = Callable[[list[PollDescriptor[Any]]], Any]
"""A poll function of an async executor: a plain or coroutine function taking the
descriptors and returning (or resolving to) the seconds until the next poll, or
``None``."""

_logger = ContainedLogger(logging.getLogger("fluent_executors.aio"))


class AsyncExecutor(Generic[R]):
    """An executor for async programs (asyncio or trio, through anyio): ``await
    executor.run(fn, *args, **kwargs)`` returns what the chain makes of ``fn``'s
    result, or raises. Made by :class:`AsyncExecutors`; each ``with_*`` method
    returns a new executor around this one, which is left as it is.

    ``async with executor:`` starts what the chain needs (the poll loop of each
    ``with_poll`` layer, a task of the executor's own task group on the caller's
    event loop); leaving the block refuses new runs with ``RuntimeError``, waits for
    the runs under way, then stops the poll loops. A chain without ``with_poll``
    runs without the block too.

    Type parameters:
        R: the result type of ``run`` (``SameResult``: what ``fn`` returns).

    .. versionadded:: 0.2.0
    """

    _kind = "async"  # the kind of its stats(): the layer's

    def __init__(self, delegate: AsyncExecutor[Any] | None, name: str) -> None:
        self._delegate = delegate
        self.name = name
        self._closed = False
        self._runs = 0  # runs under way through this executor's run()
        self._done = self._failed = self._cancelled = 0  # runs ended, of them
        self._idle: anyio.Event | None = None
        self._group: TaskGroup | None = None

    # -- running ---------------------------------------------------------------------

    @overload
    async def run(
        self: AsyncExecutor[SameResult],
        fn: Callable[P, Awaitable[T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T: ...

    @overload
    async def run(
        self: AsyncExecutor[SameResult],
        fn: Callable[P, T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T: ...

    @overload
    async def run(
        self, fn: Callable[P, object], *args: P.args, **kwargs: P.kwargs
    ) -> R: ...

    async def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` through the chain and return its result.

        Args:
            fn: a coroutine function (awaited) or a plain function (called; in a
                worker thread under :meth:`AsyncExecutors.thread_pool`).
            args, kwargs: its arguments.

        Returns:
            What the chain makes of ``fn``'s result (type ``R``).

        Raises:
            TypeError: ``fn`` is not callable.
            RuntimeError: the executor's ``async with`` block has ended, or the
                chain has a poll layer and the block has not begun.
            TimeoutError: a ``with_timeout`` layer's time ran out.
            BaseException: whatever ``fn``, or the poll function through its
                descriptor, raised.
        """
        check_callable("fn", fn)
        self._check_runnable()
        self._runs += 1
        try:
            return await self._run(fn, args, kwargs)
        except anyio.get_cancelled_exc_class():
            self._cancelled += 1
            raise
        except BaseException:
            self._failed += 1
            raise
        finally:
            self._done += 1
            self._runs -= 1
            if not self._runs and self._idle is not None:
                self._idle.set()

    async def _run(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """The work of :meth:`run` in this layer (a layer calls its delegate's)."""
        assert self._delegate is not None  # the base executors override it
        return await self._delegate._run(fn, args, kwargs)

    def _check_runnable(self) -> None:
        if self._closed:
            raise RuntimeError(
                f"cannot run on async executor {self.name!r}: its 'async with' "
                "block has ended"
            )
        if self._needs_loop():
            raise RuntimeError(
                f"async executor {self.name!r} polls: enter 'async with executor:' "
                "before calling run()"
            )

    def _layers(self) -> list[AsyncExecutor[Any]]:
        """This executor and those inside it, outermost first."""
        layers: list[AsyncExecutor[Any]] = []
        layer: AsyncExecutor[Any] | None = self
        while layer is not None:
            layers.append(layer)
            layer = layer._delegate
        return layers

    def _needs_loop(self) -> bool:
        """Whether a poll layer of the chain has no poll loop running."""
        return any(
            isinstance(layer, _Poll) and not layer._started for layer in self._layers()
        )

    # -- the block -------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        """Start the poll loops of the chain in a task group of this executor.

        Raises:
            RuntimeError: the block was entered before (an executor is entered
                once), or a poll layer of the chain was started by another block.
        """
        if self._group is not None or self._closed:
            raise RuntimeError(f"async executor {self.name!r} was started before")
        polls = [layer for layer in self._layers() if isinstance(layer, _Poll)]
        if any(layer._started for layer in polls):
            raise RuntimeError(
                f"a poll layer of async executor {self.name!r} was started by "
                "another block"
            )
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        for layer in polls:
            layer._started = True
            group.start_soon(layer._driver.loop, name=f"poll loop {layer.name}")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        """Refuse new runs; wait for the runs under way (unless the block is left
        by an exception); stop the poll loops (a run they still polled then fails
        with ``RuntimeError``)."""
        self._closed = True
        group = self._group
        assert group is not None
        raised: BaseException | None = None
        try:
            if exc_type is None:
                while self._runs:
                    self._idle = anyio.Event()
                    await self._idle.wait()
        except BaseException as error:  # cancelled while waiting: the group ends
            raised = error
            exc_type, exc, tb = type(error), error, error.__traceback__
        group.cancel_scope.cancel()
        for layer in self._layers():  # a run through an inner layer is refused too
            layer._closed = True
            if isinstance(layer, _Poll):
                layer._close()
        suppressed = await group.__aexit__(exc_type, exc, tb)
        if raised is not None and not suppressed:
            raise raised
        return suppressed

    # -- stats -----------------------------------------------------------------------

    def stats(self) -> ExecutorStats:
        """A snapshot of the runs of this executor's :meth:`run`: an
        :class:`~fluent_executors.ExecutorStats` (a
        :class:`~fluent_executors.PollStats` of a ``with_poll`` layer's runs and
        poll calls).

        Returns:
            An :class:`~fluent_executors.ExecutorStats`.
        """
        from .._stats import ExecutorStats

        done = self._done
        return ExecutorStats(
            kind=self._kind,
            name=self.name,
            submitted=self._runs + done,
            pending=0,
            running=self._runs,
            done=done,
            failed=self._failed,
            cancelled=self._cancelled,
        )

    # -- the chain -------------------------------------------------------------------

    def with_poll(
        self,
        poll_fn: AsyncPollFn,
        cancel_fn: Callable[[Any], Any] | None = None,
        default_interval: float = 5.0,
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        poll_retry_policy: RetryPolicy | None = None,
        max_batch: int | None = None,
        poll_timeout: float | None = None,
    ) -> AsyncExecutor[R]:
        """The result of each run is the identifier of a remote task, polled with
        those of the other runs by one call of ``poll_fn`` per round, on the
        caller's event loop; the run returns what its descriptor is resolved with.

        The arguments, their defaults and checks are those of
        :class:`~fluent_executors.PollExecutor`; ``poll_fn`` and ``cancel_fn`` may
        be plain or coroutine functions. When the task awaiting ``run`` is
        cancelled, its descriptor stops being polled, ``cancel_fn`` is called with
        the remote task's identifier (shielded, at most ``poll_timeout`` seconds,
        its failure logged), and the cancellation propagates.

        Args:
            poll_fn: the poll function (:data:`AsyncPollFn`), called on the
                caller's loop, never concurrently.
            cancel_fn: called with a cancelled run's remote task identifier;
                ``None``: nothing remote to cancel.
            default_interval: seconds between polls when the poll function returns
                ``None``, raises, or returns something that is not a number.
            logger: where to log; default ``logging.getLogger("fluent_executors.aio")``.
            name: the layer's name, in log messages; default this executor's.
            poll_retry_policy: keyword-only, asked after a failed call whether its
                runs stay pending; default none (they fail with the error).
            max_batch: keyword-only, at most this many descriptors per call.
            poll_timeout: keyword-only, seconds a call of the poll or cancel
                function may take: a coroutine is cancelled (the call fails with
                ``TimeoutError``), a plain call is logged once over.

        Returns:
            A new ``AsyncExecutor[R]``.

        Raises:
            TypeError, ValueError: as :class:`~fluent_executors.PollExecutor`.
        """
        layer_name = name or self.name
        settings = PollSettings(
            poll_fn,
            cancel_fn,
            default_interval,
            ContainedLogger(logger or logging.getLogger("fluent_executors.aio")),
            layer_name,
            poll_retry_policy=poll_retry_policy,
            max_batch=max_batch,
            poll_timeout=poll_timeout,
        )
        driver = AsyncPollDriver(settings, Counts("poll", layer_name, None))
        return _Poll(self, layer_name, driver)

    def with_retry(
        self,
        retry_policy: RetryPolicy | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> AsyncExecutor[R]:
        """Retry failed runs as ``retry_policy`` says (the policies of
        :class:`~fluent_executors.RetryExecutor`; default an
        :class:`~fluent_executors.ExceptionRetryPolicy` from ``kwargs``), sleeping
        through anyio between attempts. A cancellation is never retried.

        Args:
            retry_policy: the policy; default an
                :class:`~fluent_executors.ExceptionRetryPolicy` from ``kwargs``.
            logger: where a policy that raises is logged.
            name: the layer's name; default this executor's.
            kwargs: the arguments of :class:`~fluent_executors.ExceptionRetryPolicy`.

        Returns:
            A new ``AsyncExecutor[R]``.

        Raises:
            TypeError, ValueError: as :class:`~fluent_executors.RetryExecutor`.
        """
        policy = policy_of(retry_policy, kwargs)
        return _Retry(self, name or self.name, policy, logger)

    def with_timeout(self, timeout: float, name: str | None = None) -> AsyncExecutor[R]:
        """Each run may take at most ``timeout`` seconds; then it is cancelled (a
        remote task polled inside through the cancel function) and raises the
        builtin :class:`TimeoutError`.

        Args:
            timeout: seconds, a number >= 0 (``math.inf``: none).
            name: the layer's name; default this executor's.

        Returns:
            A new ``AsyncExecutor[R]``.

        Raises:
            TypeError, ValueError: ``timeout`` is not a number >= 0.
        """
        seconds = check_non_negative("timeout", timeout)
        return _Timeout(self, name or self.name, seconds)

    def with_throttle(self, count: int, name: str | None = None) -> AsyncExecutor[R]:
        """At most ``count`` runs at once; the others wait their turn.

        Args:
            count: an ``int`` >= 1.
            name: the layer's name; default this executor's.

        Returns:
            A new ``AsyncExecutor[R]``.

        Raises:
            TypeError: ``count`` is not an ``int``. ValueError: it is below 1.
        """
        if not isinstance(count, int) or isinstance(count, bool):
            raise TypeError(f"count must be an int, got {type(count).__name__}")
        if count < 1:
            raise ValueError(f"count must be at least 1, got {count}")
        return _Throttle(self, name or self.name, count)

    def with_rate_limit(
        self, max_calls: int, period: float = 1.0, name: str | None = None
    ) -> AsyncExecutor[R]:
        """At most ``max_calls`` runs start in any ``period`` seconds; the others
        wait (an anyio sleep) for the window to let them.

        Args:
            max_calls: an ``int`` >= 1.
            period: seconds, finite and > 0.
            name: the layer's name; default this executor's.

        Returns:
            A new ``AsyncExecutor[R]``.

        Raises:
            TypeError, ValueError: as :class:`~fluent_executors.RateLimitExecutor`.
        """
        seconds = check_rate(max_calls, period)
        return _RateLimit(self, name or self.name, max_calls, seconds)

    def with_map(
        self,
        fn: Callable[[Any], Awaitable[U]] | Callable[[Any], U],
        name: str | None = None,
    ) -> AsyncExecutor[U]:
        """Each run returns ``fn(result)`` (awaited if ``fn`` is a coroutine
        function); what ``fn`` raises, the run raises.

        Args:
            fn: called with each result (type ``Any``), returning ``U``.
            name: the layer's name; default this executor's.

        Returns:
            A new ``AsyncExecutor[U]``.

        Raises:
            TypeError: ``fn`` is not callable.
        """
        check_callable("fn", fn)
        return _Map(self, name or self.name, fn)

    def __repr__(self) -> str:
        return f"<{type(self).__name__.strip('_')} async executor {self.name!r}>"


class _Inline(AsyncExecutor[SameResult]):
    _kind = "inline"

    async def _run(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return await call_maybe_async(functools.partial(fn, *args, **kwargs))


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


class _ThreadPool(AsyncExecutor[SameResult]):
    _kind = "threadpool"

    def __init__(self, name: str, max_workers: int) -> None:
        super().__init__(None, name)
        self._limiter = _Limiter(max_workers)

    async def _run(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        call = functools.partial(fn, *args, **kwargs)
        return await anyio.to_thread.run_sync(call, limiter=self._limiter.get())


class _Poll(AsyncExecutor[R]):
    _kind = "poll"

    def __init__(
        self, delegate: AsyncExecutor[Any], name: str, driver: AsyncPollDriver
    ) -> None:
        super().__init__(delegate, name)
        self._driver = driver
        self._started = False

    async def _run(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        result = await super()._run(fn, args, kwargs)
        driver = self._driver
        future: PollFuture[Any] = PollFuture(driver)
        descriptor = PollDescriptor(future, result)
        future.attach(descriptor)
        driver._counts.adopt(future)
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

    def _close(self) -> None:
        """The poll loop has stopped: fail what it still polled."""
        error = RuntimeError(
            f"the 'async with' block of async executor {self.name!r} ended "
            "while this run was polled"
        )
        for future in list(self._driver._futures):
            future.fail(error)

    def stats(self) -> PollStats:
        """A :class:`~fluent_executors.PollStats` of this layer's runs and poll
        calls."""
        from .._stats import PollStats

        counts = self._driver._counts
        return PollStats(
            **counts.fields(),
            polls=counts.polls,
            poll_errors=counts.poll_errors,
            poll_timeouts=counts.poll_timeouts,
            polled=self._driver.polled(),
        )


class _Retry(AsyncExecutor[R]):
    _kind = "retry"

    def __init__(
        self,
        delegate: AsyncExecutor[Any],
        name: str,
        policy: RetryPolicy,
        logger: logging.Logger | None,
    ) -> None:
        super().__init__(delegate, name)
        self._policy = policy
        self._logger = ContainedLogger(
            logger or logging.getLogger("fluent_executors.aio")
        )

    async def _run(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        policy, started, attempt = self._policy, anyio.current_time(), 0
        while True:
            attempt += 1
            outcome: Future[Any] = Future()
            try:
                result = await super()._run(fn, args, kwargs)
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
                    "retry policy %r of async executor %r raised", policy, self.name
                )
                delay = None
            if delay is None:
                if failure is not None:
                    raise failure
                return outcome.result()
            if delay == math.inf:
                await anyio.sleep_forever()
            await anyio.sleep(delay)


class _Timeout(AsyncExecutor[R]):
    _kind = "timeout"

    def __init__(self, delegate: AsyncExecutor[Any], name: str, timeout: float) -> None:
        super().__init__(delegate, name)
        self._timeout = timeout

    async def _run(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        with anyio.fail_after(self._timeout):
            return await super()._run(fn, args, kwargs)


class _Throttle(AsyncExecutor[R]):
    _kind = "throttle"

    def __init__(self, delegate: AsyncExecutor[Any], name: str, count: int) -> None:
        super().__init__(delegate, name)
        self._limiter = _Limiter(count)

    async def _run(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        async with self._limiter.get():
            return await super()._run(fn, args, kwargs)


class _RateLimit(AsyncExecutor[R]):
    _kind = "ratelimit"

    def __init__(
        self, delegate: AsyncExecutor[Any], name: str, max_calls: int, period: float
    ) -> None:
        super().__init__(delegate, name)
        self._max_calls = max_calls
        self._period = period
        self._starts: deque[float] = deque()  # of the window, oldest first

    async def _run(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        starts = self._starts
        while True:
            now = anyio.current_time()
            while starts and starts[0] <= now - self._period:
                starts.popleft()
            if len(starts) < self._max_calls:
                break
            await anyio.sleep(starts[0] + self._period - now)
        starts.append(now)
        return await super()._run(fn, args, kwargs)


class _Map(AsyncExecutor[Any]):
    _kind = "map"

    def __init__(
        self, delegate: AsyncExecutor[Any], name: str, fn: Callable[[Any], Any]
    ) -> None:
        super().__init__(delegate, name)
        self._fn = fn

    async def _run(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return await call_maybe_async(self._fn, await super()._run(fn, args, kwargs))


class AsyncExecutors:
    """The async executors at the bottom of a chain (see :class:`AsyncExecutor`).

    .. versionadded:: 0.2.0
    """

    @staticmethod
    def inline(name: str = "default") -> AsyncExecutor[SameResult]:
        """Run the function in the task that calls ``run``: a coroutine function
        is awaited, a plain function called. Starts no thread.

        Args:
            name: the executor's name, in log messages and ``stats()``.

        Returns:
            An ``AsyncExecutor[SameResult]``.
        """
        return _Inline(None, name)

    @staticmethod
    def thread_pool(
        max_workers: int, name: str = "default"
    ) -> AsyncExecutor[SameResult]:
        """Run plain functions in worker threads (``anyio.to_thread.run_sync``),
        at most ``max_workers`` at once.

        Args:
            max_workers: an ``int`` >= 1.
            name: the executor's name, in log messages and ``stats()``.

        Returns:
            An ``AsyncExecutor[SameResult]``.

        Raises:
            TypeError: ``max_workers`` is not an ``int``. ValueError: below 1.
        """
        if not isinstance(max_workers, int) or isinstance(max_workers, bool):
            raise TypeError(
                f"max_workers must be an int, got {type(max_workers).__name__}"
            )
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        return _ThreadPool(name, max_workers)
