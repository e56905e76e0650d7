"""The async executor (:class:`AsyncExecutor`): ``run``, the ``async with``
block that runs the chain's poll loops, ``stats``, and the chain methods, each of
which returns a new executor holding the layer it makes (``layers``) around this
one."""

from __future__ import annotations

import functools
import logging
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar, overload

import anyio
import anyio.lowlevel
from anyio.lowlevel import EventLoopToken

from ..adaptive import AdaptiveRate, check_adaptive
from ..counts import new_counts
from ..durable import check_lease, check_store
from ..fluent import R, SameResult
from ..logging import ContainedLogger
from ..poll.descriptor import PollDescriptor
from ..poll.settings import PollSettings
from ..public import publish
from ..retry_policy import RetryPolicy, policy_of
from ..wrapper import check_callable, check_count, check_non_negative, check_rate
from .driver import AsyncPollDriver, PolledRun
from .layers import Layer, Map, Poll, RateLimit, Retry, Throttle, Timeout
from .mapping import AsyncMap

if sys.version_info < (3, 11):  # anyio's dependency, for Python 3.10
    from exceptiongroup import (  # type: ignore[import-not-found, unused-ignore]
        BaseExceptionGroup,
    )

if TYPE_CHECKING:
    import os
    from types import TracebackType

    from anyio.abc import TaskGroup
    from typing_extensions import ParamSpec, Self

    from ..durable import Store, StoredTask
    from ..poll.keeper import StoreKeeper
    from ..stats import ExecutorStats

    P = ParamSpec("P")

__all__ = ["AsyncExecutor", "AsyncPollFn"]

T = TypeVar("T")
U = TypeVar("U")

AsyncPollFn = Callable[[list[PollDescriptor[Any]]], Any]
"""A poll function of an async executor: a plain or coroutine function taking the
descriptors and returning (or resolving to) the seconds until the next poll, or
``None``."""


async def _poll_loop(scope: anyio.CancelScope, driver: AsyncPollDriver) -> None:
    """A task of a block: ``driver``'s poll loop, until ``scope`` is cancelled (as
    the block ends: the block's own task group is never cancelled by it, so a
    cancellation of the body is the body's)."""
    with scope:
        await driver.loop()


class Loop(NamedTuple):
    """An event loop, as the layers of a chain know the one they serve."""

    token: EventLoopToken  # anyio's, equal for one loop
    thread: int  # the ident of the thread it runs in


# The take-and-count bookkeeping of every chain (a layer may be in several chains):
# the check that a chain serves the caller's loop and the counts that hold it there
# change together, even when two threads' loops call at once. Never held across an
# await or user code.
_BOOKS = threading.Lock()


def current_loop() -> Loop:
    """The event loop of the calling task."""
    return Loop(anyio.lowlevel.current_token(), threading.get_ident())


class AsyncExecutor(Generic[R]):
    """An executor for async programs (asyncio or trio, through anyio): ``await
    executor.run(fn, *args, **kwargs)`` returns what the chain makes of ``fn``'s
    result, or raises. Made by :class:`AsyncExecutors`; each ``with_*`` method
    returns a new executor around this one, which is left as it is.

    ``async with executor:`` starts what the chain needs (the poll loop of each
    ``with_poll`` layer, a task of the executor's own task group on the caller's
    event loop): leaving the block refuses new runs with ``RuntimeError``, waits
    for the runs under way through any layer of the chain, then stops the poll
    loops; the block may then be entered again, on the same event loop (which
    keeps rate-limit windows and pauses) or another (which starts the chain
    afresh; see :ref:`aio-block`). A chain without ``with_poll`` runs without
    the block too.

    One executor serves one event loop at a time: while a block or a run holds
    its chain to a loop, a run from another thread's loop raises
    ``RuntimeError`` at once.

    Type parameters:
        R: the result type of ``run`` (``SameResult``: what ``fn`` returns).

    .. versionadded:: 0.2.0
    """

    def __init__(
        self, delegate: AsyncExecutor[Any] | None, name: str, layer: Layer
    ) -> None:
        self._delegate = delegate
        self.name = name
        self._layer = layer  # what this executor does with a run
        # The layers of the chain, outermost first; and its poll layers.
        self._layers: tuple[Layer, ...] = (layer,) + (
            delegate._layers if delegate is not None else ()
        )
        self._polls = tuple(x for x in self._layers if isinstance(x, Poll))
        self._closing = False  # its block is ending: no new run
        self._runs = 0  # runs under way through this executor's run()
        self._done = self._failed = self._cancelled = 0  # runs ended, of them
        # Of its runs, those a rate-limit layer has not passed on yet.
        self._queued = 0
        self._group: TaskGroup | None = None  # of its block, while it is open
        self._loops: list[anyio.CancelScope] = []  # of its block's poll loops

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
            RuntimeError: the chain has a poll layer and no block is open around
                it (not yet, or no more), or the block is ending; or a block or
                a run holds the chain to the event loop of another thread (the
                message says which).
            TimeoutError: a ``with_timeout`` layer's time ran out.
            BaseException: whatever ``fn``, or the poll function through its
                descriptor, raised.
        """
        check_callable("fn", fn)
        loop = current_loop()
        layers = self._layers
        with _BOOKS:
            self._take(loop)
            for layer in layers:
                layer.runs += 1
            self._runs += 1
        # [True] while a rate-limit layer (this executor's) holds the run back.
        queued = [True] if isinstance(self._layer, RateLimit) else None
        if queued:
            self._queued += 1
        try:
            return await self._run(fn, args, kwargs, queued)
        except anyio.get_cancelled_exc_class():
            self._cancelled += 1
            raise
        except BaseException:
            self._failed += 1
            raise
        finally:
            if queued and queued[0]:  # (cancelled, or failed, before its turn)
                self._queued -= 1
            idle: list[anyio.Event] = []
            with _BOOKS:
                self._done += 1
                self._runs -= 1
                for layer in layers:
                    layer.runs -= 1
                    if not layer.runs and layer.idle is not None:
                        idle.append(layer.idle)
                        layer.idle = None
            for event in idle:
                event.set()

    async def _run(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        queued: list[bool] | None = None,
    ) -> Any:
        """The work of :meth:`run`: this executor's layer's, around the layers
        inside it (at the bottom, around ``fn`` itself). ``queued``: of a run
        of this executor's own :meth:`run` that its layer holds back until it
        calls inside (a rate limit's), ``[True]`` until then."""
        inner = self._delegate
        if inner is None:
            return await self._layer.run(functools.partial(fn, *args, **kwargs))
        call = functools.partial(inner._run, fn, args, kwargs)
        if queued is not None:
            call = functools.partial(self._passed_on, queued, call)
        return await self._layer.run(call)

    async def _passed_on(self, queued: list[bool], call: Callable[[], Any]) -> Any:
        """``call``, the layers inside, once this executor's layer passes on a
        run of its own (it is queued no more)."""
        queued[0] = False
        self._queued -= 1
        return await call()

    def _take(self, loop: Loop) -> None:
        """Check that a run may begin on ``loop`` (raise ``RuntimeError`` if
        not), and make the layers that served another loop start afresh. Under
        ``_BOOKS``."""
        for layer in self._layers:
            if layer.loop != loop and layer.busy():
                raise self._foreign(layer.loop, loop)
        if self._closing:
            raise RuntimeError(
                f"cannot run on async executor {self.name!r}: its 'async with' "
                "block is ending"
            )
        for poll in self._polls:
            if not poll.blocks:
                raise RuntimeError(
                    f"async executor {self.name!r} polls: enter 'async with "
                    "executor:' before calling run() (its block has not begun, "
                    "or has ended)"
                )
            if poll.closing:
                raise RuntimeError(
                    f"cannot run on async executor {self.name!r}: the 'async "
                    "with' block of its poll layer is ending"
                )
        for layer in self._layers:
            if layer.loop != loop:
                layer.loop = loop
                layer.fresh()

    def _foreign(self, held: object, caller: Loop) -> RuntimeError:
        """The error of a run or block on ``caller`` while the chain is held by
        the loop ``held``."""
        assert isinstance(held, Loop)
        where = (
            "another thread"
            if held.thread != caller.thread
            else "another event loop of the same thread"
        )
        return RuntimeError(
            f"async executor {self.name!r} serves the event loop of thread "
            f"{held.thread} (a block or a run holds it there); called from "
            f"{where}: one executor serves one event loop at a time"
        )

    @overload
    def map(
        self: AsyncExecutor[SameResult],
        fn: Callable[..., Awaitable[T]],
        *iterables: Iterable[Any],
        buffersize: int | None = None,
    ) -> AsyncMap[T]: ...

    @overload
    def map(
        self: AsyncExecutor[SameResult],
        fn: Callable[..., T],
        *iterables: Iterable[Any],
        buffersize: int | None = None,
    ) -> AsyncMap[T]: ...

    @overload
    def map(
        self,
        fn: Callable[..., object],
        *iterables: Iterable[Any],
        buffersize: int | None = None,
    ) -> AsyncMap[R]: ...

    def map(
        self,
        fn: Callable[..., Any],
        *iterables: Iterable[Any],
        buffersize: int | None = None,
    ) -> AsyncMap[Any]:
        """Run ``fn`` on each set of arguments taken from ``iterables`` (as
        :func:`map` does), at most ``buffersize`` runs ahead of the consumer,
        the results in the order of the inputs::

            async with executor.map(fetch, urls, buffersize=10) as results:
                async for page in results:
                    ...

        Leaving the ``async with`` block cancels the runs left (breaking out of
        the loop early, or an exception). The async twin of ``Executor.map``
        with Python 3.14's ``buffersize``; a ``timeout`` is a cancel scope
        around the block (``anyio.fail_after``).

        Args:
            fn: a coroutine function or a plain function, as :meth:`run` takes.
            iterables: the arguments, one iterable per parameter of ``fn``,
                read lazily as the runs start.
            buffersize: keyword-only, an ``int`` >= 1: at most so many runs
                started and not yet taken by the consumer; ``None``: every
                input at once.

        Returns:
            An :class:`AsyncMap`: an async context manager whose value is an
            async iterator of the results, each of which raises instead the
            exception of its run.

        Raises:
            TypeError: ``fn`` is not callable, ``buffersize`` is not an ``int``.
            ValueError: ``buffersize`` is below 1.

        .. versionadded:: 0.2.0
        """
        check_callable("fn", fn)
        if buffersize is not None:
            check_count("buffersize", buffersize)
        return AsyncMap(self, fn, iterables, buffersize)

    # -- runs started before -------------------------------------------------------

    @overload
    def attach(self: AsyncExecutor[SameResult], result: object) -> PolledRun[Any]: ...

    @overload
    def attach(self, result: object) -> PolledRun[R]: ...

    def attach(self, result: object) -> PolledRun[Any]:
        """Poll ``result`` as if a start call of this executor's poll layer had
        just returned it: nothing is run (a process that kept its remote
        tasks' identifiers picks them up this way). Call it inside the
        block, on its event loop; with a store, its record is written as a
        run's. The layers outside the poll layer apply as :meth:`resume` says.

        Args:
            result: what the start call would have returned (the remote task's
                identifier).

        Returns:
            A :class:`PolledRun` (of type ``R``), polled already.

        Raises:
            RuntimeError: the chain has no poll layer, or several; its block is
                not open (or ending); or another event loop holds the chain.

        .. versionadded:: 0.2.0
        """
        poll, outer = self._poll_layer("attach")
        return poll.driver.attach(result, outer)

    @overload
    async def resume(
        self: AsyncExecutor[SameResult], limit: int | None = None
    ) -> dict[PolledRun[Any], StoredTask]: ...

    @overload
    async def resume(
        self, limit: int | None = None
    ) -> dict[PolledRun[R], StoredTask]: ...

    async def resume(
        self, limit: int | None = None
    ) -> dict[PolledRun[Any], StoredTask]:
        """Take over the remote tasks of the poll layer's store whose lease has
        run out (their process died), and return a run for each, polled as
        :meth:`attach` polls: nothing is started again. Await it inside the
        block, on its event loop.

        As ``PollExecutor.resume()`` does: the records are claimed in one call of
        the store (in a worker thread), and held by this layer from then on, its
        leases renewed with its own; those of the store's own owner are taken
        back at once, lease or not. A record that cannot be read, or an intent,
        gives a run failed with a :class:`~fluent_executors.stores.RecordError`.
        Each run's record is removed once it ends; the record of a run still
        polled when the block ends stays, for a later ``resume()``. Once the
        claim is made, the runs are polled even if the awaiting task is
        cancelled.

        The layers outside the poll layer act on the runs as in the threaded
        ``resume()``: a map maps, a timeout counts from this call, the others
        pass them on.

        Args:
            limit: the most records to take, an ``int`` >= 1; ``None``: every one.

        Returns:
            A ``dict`` of each :class:`PolledRun` (of type ``R``) to the
            :class:`~fluent_executors.stores.StoredTask` it polls: the program
            maps the runs back to its inputs.

        Raises:
            RuntimeError: the chain has no poll layer, or several, or its poll
                layer has no store; its block is not open (or ending); or
                another event loop holds the chain.
            ~fluent_executors.stores.StoreError: the store failed; nothing was
                claimed.
            TypeError, ValueError: ``limit`` is not an ``int`` >= 1 or ``None``.

        .. versionadded:: 0.2.0
        """
        if limit is not None:
            check_count("limit", limit)
        poll, outer = self._poll_layer("resume")
        return await poll.driver.resume(limit, outer)

    def _poll_layer(self, what: str) -> tuple[Poll, tuple[Layer, ...]]:
        """The chain's poll layer, if it is open on the caller's event loop,
        and the layers outside it (outermost first).

        Raises:
            RuntimeError: no poll layer, or several; its block is not open, or
                is ending; another event loop holds the chain.
        """
        if len(self._polls) != 1:
            raise RuntimeError(
                f"{what}() needs a chain with one with_poll layer; async executor "
                f"{self.name!r} has {len(self._polls)}"
            )
        with _BOOKS:
            self._take(current_loop())
        poll = self._polls[0]
        return poll, self._layers[: self._layers.index(poll)]

    # -- the block -------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        """Start the poll loops of the chain in a task group of this executor
        (each poll layer from a fresh state; every layer afresh if it served
        another event loop, else as the last block left it).

        With ``with_poll(store=...)``, a store given as a path is opened (in a
        worker thread) for the block, and closed as it ends.

        Raises:
            RuntimeError: the executor is in its block already; a poll layer of
                the chain is in another block; or a block or a run holds the
                chain to the event loop of another thread.
            ~fluent_executors.stores.StoreError: the SQLite file of a
                ``store=`` path cannot be opened.
            ValueError: the store object of a ``with_poll(store=)`` serves
                another poll executor (threaded or async) still.
        """
        if self._group is not None:
            raise RuntimeError(
                f"async executor {self.name!r} is in its 'async with' block "
                "already (an executor is in one block at a time)"
            )
        loop = current_loop()
        with _BOOKS:
            self._check_block(loop)
        keepers: list[StoreKeeper | None] = []  # of the stores' records
        try:
            for poll in self._polls:
                keepers.append(await poll.driver.open_keeper())
            with _BOOKS:
                self._check_block(loop)  # (again: another block may have begun)
                for layer in self._layers:
                    if layer.loop != loop:  # not busy (checked): another loop's
                        layer.loop = loop
                        layer.fresh()
                    layer.blocks += 1
                for poll, keeper in zip(self._polls, keepers, strict=True):
                    poll.fresh()  # a new poll loop for this block
                    poll.driver.keeper = keeper
        except BaseException:
            for keeper in keepers:
                if keeper is not None:
                    keeper.close()  # (a store it opened: an SQLite file, at once)
            raise
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        for poll in self._polls:
            scope = anyio.CancelScope()
            self._loops.append(scope)
            group.start_soon(
                _poll_loop, scope, poll.driver, name=f"poll loop {poll.driver.name}"
            )
        return self

    def _check_block(self, loop: Loop) -> None:
        """Check that a block may begin on ``loop`` (under ``_BOOKS``).

        Raises:
            RuntimeError: a poll layer is in another block, or a block or a run
                holds the chain to another event loop.
        """
        for layer in self._layers:
            if layer.loop != loop and layer.busy():
                raise self._foreign(layer.loop, loop)
        if any(poll.blocks for poll in self._polls):
            raise RuntimeError(
                f"a poll layer of async executor {self.name!r} was started by "
                "another block"
            )

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        """Refuse new runs; wait for the runs under way through the chain (unless
        the block is left by an exception); stop the poll loops (a run they
        still polled then fails with ``RuntimeError``). The body's exception
        leaves the block as it was raised; if a poll loop failed too, both leave
        it in a ``BaseExceptionGroup``."""
        group = self._group
        assert group is not None
        self._closing = True
        for poll in self._polls:
            poll.closing = True
        cancelled: BaseException | None = None
        try:
            if exc is None:
                await self._wait_for_runs()
        except BaseException as error:  # cancelled while waiting
            cancelled = exc = error
        for scope in self._loops:
            scope.cancel()
        failed: BaseException | None = None
        try:
            await group.__aexit__(None, None, None)
        except BaseException as error:  # a poll loop failed
            failed = error
        finally:
            self._end_block()
        if failed is None:
            if cancelled is not None:
                raise cancelled
            return None
        if exc is None or isinstance(exc, anyio.get_cancelled_exc_class()):
            raise failed  # (the body was cancelled by the group, or not at all)
        leaves = (
            list(failed.exceptions)
            if isinstance(failed, BaseExceptionGroup)
            else [failed]
        )
        raise BaseExceptionGroup(
            f"the body of the 'async with' block of async executor {self.name!r} "
            "and its poll loop failed",
            [exc, *leaves],
        )

    async def _wait_for_runs(self) -> None:
        """Wait until no run is under way through any layer of the chain."""
        for layer in self._layers:
            while layer.runs:
                if layer.idle is None:
                    layer.idle = anyio.Event()
                await layer.idle.wait()

    def _end_block(self) -> None:
        """The block has ended: fail what its poll loops still polled; the chain
        is free to serve another block, or loop."""
        for poll in self._polls:
            poll.stopped()
            poll.closing = False
        with _BOOKS:
            for layer in self._layers:
                layer.blocks -= 1
        self._loops.clear()
        self._group = None
        self._closing = False

    # -- stats -----------------------------------------------------------------------

    def stats(self) -> ExecutorStats:
        """A snapshot of the runs of this executor's :meth:`run`: an
        :class:`~fluent_executors.ExecutorStats` (a
        :class:`~fluent_executors.PollStats` of a poll layer, a
        :class:`~fluent_executors.RateLimitStats` of a rate limit).

        Returns:
            An :class:`~fluent_executors.ExecutorStats`.
        """
        layer = self._layer
        if isinstance(layer, Poll):
            return layer.driver.stats()
        from ..stats import ExecutorStats, RateLimitStats

        done, queued = self._done, self._queued
        fields: dict[str, Any] = {
            "kind": layer.kind,
            "name": self.name,
            "submitted": self._runs + done,
            "pending": queued,
            "running": self._runs - queued,
            "done": done,
            "failed": self._failed,
            "cancelled": self._cancelled,
        }
        if not isinstance(layer, RateLimit):
            return ExecutorStats(**fields)
        rate = layer.rate
        return RateLimitStats(
            **fields,
            queued=queued,
            rate=rate.rate,
            cuts=rate.cuts,
            paused=bool(layer.pausing),
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
        store: Store | str | os.PathLike[str] | None = None,
        lease: float = 60.0,
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
            store: keyword-only, where the start calls' results are kept, so
                that the remote tasks survive a crash of the process and other
                processes take them over (:meth:`resume`; see the "Durable
                polling" page): a :class:`~fluent_executors.stores.Store`, or
                the path (``str`` or path-like) of an SQLite file, opened as a
                :class:`~fluent_executors.SQLiteStore` whose queue is the
                layer's name at each block (in a worker thread) and closed as
                the block ends. A run is polled once its record is written (by
                the poll loop, in one call per round); its record is removed
                once the run ends. Every call of the store is made in a worker
                thread: the event loop is never held by it. Default: none.
            lease: keyword-only, seconds (a float > 0) that the layer holds a
                record of its store without renewing it; it renews its leases
                every third of that. Default 60.0.

        Returns:
            A new ``AsyncExecutor[R]``.

        Raises:
            TypeError, ValueError: as :class:`~fluent_executors.PollExecutor`.
            ~fluent_executors.stores.StoreError: not here: a ``store`` path
                that cannot be opened fails the ``async with`` block's entry.
        """
        lease = check_lease(lease)
        if store is not None:
            store = check_store(store)
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
        driver = AsyncPollDriver(
            settings, new_counts("poll", layer_name, None), store, lease
        )
        return AsyncExecutor(self, layer_name, Poll(driver))

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
        layer_name = name or self.name
        policy = policy_of(retry_policy, kwargs)
        return AsyncExecutor(self, layer_name, Retry(layer_name, policy, logger))

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
        return AsyncExecutor(self, name or self.name, Timeout(seconds))

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
        check_count("count", count)
        return AsyncExecutor(self, name or self.name, Throttle(count))

    def with_rate_limit(
        self,
        max_calls: int,
        period: float = 1.0,
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        adaptive: bool = False,
        too_many: Callable[[BaseException], object] | None = None,
        decrease_factor: float = 0.5,
        increase: float = 1.0,
        max_pause: float = 300.0,
    ) -> AsyncExecutor[R]:
        """At most ``max_calls`` runs start in any ``period`` seconds; the others
        wait (an anyio sleep) for the window to let them.

        With ``adaptive=True`` the limit follows what the service says, as
        :class:`~fluent_executors.RateLimitExecutor`'s does: a run that fails
        with an exception ``too_many`` classifies as "too many requests" cuts
        the rate to ``decrease_factor`` times itself (at most once per period),
        and its ``Retry-After`` hint pauses every start (at most ``max_pause``
        seconds); each run that succeeds raises the rate by ``increase / rate``,
        back up to ``max_calls``. The failed runs are not retried here: chain
        ``with_retry`` outside.

        Args:
            max_calls: an ``int`` >= 1.
            period: seconds, finite and > 0.
            logger: where to log a cut of the rate and a ``too_many`` that
                raises; default ``logging.getLogger("fluent_executors.aio")``.
            name: the layer's name; default this executor's.
            adaptive: keyword-only; adapt the rate to the "too many" failures.
            too_many: keyword-only, with ``adaptive``; ``too_many(exception) ->
                bool`` (default: a 429 or 503 status, or a ``Retry-After``
                hint).
            decrease_factor: keyword-only, with ``adaptive``; between 0 and 1
                excluded.
            increase: keyword-only, with ``adaptive``; calls per period that a
                period's worth of successes adds (``float`` >= 0).
            max_pause: keyword-only, with ``adaptive``; the longest pause, in
                seconds, that a hint makes.

        Returns:
            A new ``AsyncExecutor[R]``.

        Raises:
            TypeError, ValueError: as :class:`~fluent_executors.RateLimitExecutor`.
        """
        seconds = check_rate(max_calls, period)
        settings = check_adaptive(
            adaptive, too_many, decrease_factor, increase, max_pause
        )
        layer_name = name or self.name
        rate = AdaptiveRate(
            max_calls,
            seconds,
            settings,
            f"async rate limit executor {layer_name!r}",
            ContainedLogger(logger or logging.getLogger("fluent_executors.aio")),
        )
        return AsyncExecutor(self, layer_name, RateLimit(rate))

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
        return AsyncExecutor(self, name or self.name, Map(fn))

    def __repr__(self) -> str:
        return f"<{type(self._layer).__name__} async executor {self.name!r}>"


publish("fluent_executors.aio", AsyncExecutor)
