"""The ``Executors`` facade: one place to build every executor of the library."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from ._fluent import FluentExecutor, SameResult
from ._wrapper import name_of
from .bind import BoundCallable, flat_bound
from .cancel_on_shutdown import CancelOnShutdownExecutor
from .dask import DaskExecutor
from .map import FlatMapExecutor, MapExecutor
from .poll import CancelFn, PollExecutor, PollFn
from .pools import ThreadPoolExecutor
from .rate_limit import RateLimitExecutor
from .ray import RayExecutor
from .retry import RetryExecutor, RetryPolicy
from .sync import SyncExecutor
from .throttle import ThrottleCount, ThrottleExecutor
from .timeout import TimeoutExecutor

if TYPE_CHECKING:
    import asyncio

    import distributed

    from ._process_pool import ProcessPoolExecutor
    from .asyncio import AsyncioExecutor

__all__ = ["Executors"]

T = TypeVar("T")
U = TypeVar("U")
R = TypeVar("R")  # the result type of a FluentExecutor[R] delegate
P = ParamSpec("P")


class Executors:
    """Builds executors: base executors, and wrappers around any executor.

    Every executor returned here has the chainable ``with_*`` methods of
    :class:`~fluent_executors.FluentExecutor`, so these two lines are the same::

        Executors.with_poll(Executors.thread_pool(max_workers=4), poll_tasks)
        Executors.thread_pool(max_workers=4).with_poll(poll_tasks)

    The ``with_*`` methods take any :class:`concurrent.futures.Executor` (a thread
    pool, a process pool, a Dask client's executor) as the delegate, and return a
    new executor; the delegate is left as it was. Shutting down the new executor, or
    leaving its ``with`` block, shuts down the delegate too. The new executor has the
    delegate's result type (see :class:`~fluent_executors.SameResult`), except that
    :meth:`with_map` and :meth:`with_flat_map` give it their functions' one.
    """

    if TYPE_CHECKING:
        # Type checkers see the classes' own signatures; at run time the arguments
        # pass through to them as given (positional stay positional).
        thread_pool = staticmethod(ThreadPoolExecutor)
        process_pool = staticmethod(ProcessPoolExecutor)
    else:

        @staticmethod
        def thread_pool(
            *args: Any, name: str = "default", **kwargs: Any
        ) -> ThreadPoolExecutor:
            """Return a new :class:`~fluent_executors.ThreadPoolExecutor`.

            Arguments other than ``name`` are those of
            :class:`concurrent.futures.ThreadPoolExecutor`, and reach it unchanged, as
            given (see :class:`~fluent_executors.ThreadPoolExecutor`).

            Raises:
                TypeError: ``name`` is not a ``str``.
                ValueError: ``max_workers`` is not positive.
            """
            return ThreadPoolExecutor(*args, name=name, **kwargs)

        @staticmethod
        def process_pool(
            *args: Any, name: str = "default", **kwargs: Any
        ) -> ProcessPoolExecutor:
            """Return a new :class:`~fluent_executors.ProcessPoolExecutor`.

            Arguments other than ``name`` are those of
            :class:`concurrent.futures.ProcessPoolExecutor`, and reach it unchanged, as
            given (see :class:`~fluent_executors.ProcessPoolExecutor`).

            Raises:
                TypeError: ``name`` is not a ``str``.
                ValueError: ``max_workers`` is not positive.
            """
            from ._process_pool import ProcessPoolExecutor

            return ProcessPoolExecutor(*args, name=name, **kwargs)

    @staticmethod
    def sync(
        logger: logging.Logger | None = None, name: str = "default"
    ) -> SyncExecutor:
        """Return a new :class:`~fluent_executors.SyncExecutor`, which runs each
        callable in the thread that submits it.

        Args:
            logger: accepted for compatibility with more-executors.
            name: the executor's name, passed down the chains built on it.

        Raises:
            TypeError: ``name`` is not a ``str``.
        """
        return SyncExecutor(logger, name)

    @staticmethod
    def dask(
        address: str | None = None,
        logger: logging.Logger | None = None,
        name: str = "default",
        *,
        client: distributed.Client | None = None,
        cluster_options: Mapping[str, Any] | None = None,
        **submit_options: Any,
    ) -> DaskExecutor:
        """Return a new :class:`~fluent_executors.DaskExecutor`, which runs
        callables on a Dask cluster (install the ``dask`` extra).

        With neither ``address`` nor ``client`` it starts an embedded
        ``LocalCluster`` of worker processes, closed by its ``shutdown()``.

        Args:
            address: the address of a running Dask scheduler
                (``"tcp://host:8786"``); its connection is closed on shutdown, the
                cluster is left running.
            logger: where to log; default the ``fluent_executors.dask`` logger.
            name: the executor's name, passed down the chains built on it.
            client: a ``distributed.Client`` to use; never closed.
            cluster_options: keyword arguments of the embedded ``LocalCluster``.
            submit_options: options of ``Client.submit`` for every task
                (``workers``, ``resources``, ``retries``, ``priority``,
                ``allow_other_workers``, ``fifo_timeout``).

        Raises:
            ImportError: Dask's ``distributed`` package is not installed.
            TypeError: an argument has the wrong type, ``address`` and ``client``
                are both given, or a submit option is not one of those above.
            ValueError: ``address`` is empty; ``client`` is asynchronous or
                closed.
        """
        return DaskExecutor(
            address,
            logger,
            name,
            client=client,
            cluster_options=cluster_options,
            **submit_options,
        )

    @staticmethod
    def ray(
        logger: logging.Logger | None = None,
        name: str = "default",
        *,
        remote_options: Mapping[str, Any] | None = None,
        **init_kwargs: Any,
    ) -> RayExecutor:
        """Return a new :class:`~fluent_executors.RayExecutor`, which runs callables
        as Ray tasks (install the ``ray`` extra).

        If Ray is not initialized in this process, it calls
        ``ray.init(**init_kwargs)``, and the executor's ``shutdown()`` shuts Ray
        down; otherwise it uses the running Ray and leaves it running.

        Args:
            logger: where to log; default the ``fluent_executors.ray`` logger.
            name: the executor's name, passed down the chains built on it.
            remote_options: options of the Ray tasks (``num_cpus``,
                ``resources``, ``max_retries``, ...).
            init_kwargs: arguments of ``ray.init()``.

        Raises:
            ImportError: Ray is not installed.
            TypeError: ``name`` is not a ``str``; ``remote_options`` is not a
                mapping.
            ValueError: ``init_kwargs`` are given but Ray is already initialized.
        """
        return RayExecutor(logger, name, remote_options=remote_options, **init_kwargs)

    # Each wrapper's with_* has two overloads: a FluentExecutor[R] delegate gives a
    # wrapper of result type R, any other executor one of SameResult. The checkers
    # report that the first overlaps the second with another return type (a
    # FluentExecutor is an Executor): the first that matches applies, as intended.
    @overload
    @staticmethod
    def with_poll(  # type: ignore[overload-overlap]
        executor: FluentExecutor[R],
        poll_fn: PollFn,
        cancel_fn: CancelFn | None = None,
        default_interval: float = 5.0,
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        poll_retry_policy: RetryPolicy | None = None,
        max_batch: int | None = None,
        poll_timeout: float | None = None,
    ) -> PollExecutor[R]: ...

    @overload
    @staticmethod
    def with_poll(
        executor: Executor,
        poll_fn: PollFn,
        cancel_fn: CancelFn | None = None,
        default_interval: float = 5.0,
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        poll_retry_policy: RetryPolicy | None = None,
        max_batch: int | None = None,
        poll_timeout: float | None = None,
    ) -> PollExecutor[SameResult]: ...

    @staticmethod
    def with_poll(
        executor: FluentExecutor[R] | Executor,
        poll_fn: PollFn,
        cancel_fn: CancelFn | None = None,
        default_interval: float = 5.0,
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        poll_retry_policy: RetryPolicy | None = None,
        max_batch: int | None = None,
        poll_timeout: float | None = None,
    ) -> PollExecutor[R] | PollExecutor[SameResult]:
        """Wrap ``executor`` in a :class:`~fluent_executors.PollExecutor`.

        The new executor's futures are resolved by ``poll_fn`` once their callable
        has returned on ``executor``.

        Args:
            executor: the delegate, any :class:`concurrent.futures.Executor`.
            poll_fn: the poll function; see :class:`~fluent_executors.PollExecutor`.
            cancel_fn: the cancel function, or ``None``.
            default_interval: seconds between polls unless the poll function says
                otherwise.
            logger: where to log; default the ``fluent_executors.poll`` logger.
            name: the new executor's name; default ``executor``'s ``name``, if it
                has one, else ``"default"``.
            poll_retry_policy: keyword-only; see
                :class:`~fluent_executors.PollExecutor`.
            max_batch: keyword-only; see :class:`~fluent_executors.PollExecutor`.
            poll_timeout: keyword-only; see :class:`~fluent_executors.PollExecutor`.

        Returns:
            A ``PollExecutor[R]`` if ``executor`` is a
            :class:`~fluent_executors.FluentExecutor` of result type ``R`` (the
            result type passes down the chain), else a
            ``PollExecutor[SameResult]``.

        Raises:
            TypeError: ``executor`` has no ``submit`` method; ``poll_fn`` or
                ``cancel_fn`` is not callable; ``default_interval`` is not a number;
                ``name`` is not a ``str``; or a keyword-only argument is of the
                wrong type (see :class:`~fluent_executors.PollExecutor`).
            ValueError: ``default_interval`` or ``poll_timeout`` is negative or
                NaN; ``max_batch`` is below 1.
        """
        return PollExecutor(
            executor,
            poll_fn,
            cancel_fn,
            default_interval,
            logger,
            name_of(executor, name),
            poll_retry_policy=poll_retry_policy,
            max_batch=max_batch,
            poll_timeout=poll_timeout,
        )

    @overload
    @staticmethod
    def with_retry(  # pyright: ignore[reportOverlappingOverload]
        executor: FluentExecutor[R],
        retry_policy: RetryPolicy | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> RetryExecutor[R]: ...

    @overload
    @staticmethod
    def with_retry(
        executor: Executor,
        retry_policy: RetryPolicy | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> RetryExecutor[SameResult]: ...

    @staticmethod
    def with_retry(
        executor: FluentExecutor[R] | Executor,
        retry_policy: RetryPolicy | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> RetryExecutor[R] | RetryExecutor[SameResult]:
        """Wrap ``executor`` in a :class:`~fluent_executors.RetryExecutor`.

        The new executor resubmits a callable to ``executor`` when it fails, as the
        retry policy decides. It takes ``executor``'s ``name`` unless ``name`` is
        given.

        Args:
            executor: the delegate, any :class:`concurrent.futures.Executor`.
            retry_policy: the :class:`~fluent_executors.RetryPolicy`; default an
                :class:`~fluent_executors.ExceptionRetryPolicy` built from
                ``kwargs``.
            logger: where to log; default the ``fluent_executors.retry`` logger.
            name: the new executor's name; default ``executor``'s.
            kwargs: the arguments of
                :class:`~fluent_executors.ExceptionRetryPolicy` (``max_attempts``,
                ``sleep``, ...), when ``retry_policy`` is ``None``.

        Returns:
            A ``RetryExecutor[R]`` if ``executor`` is a
            :class:`~fluent_executors.FluentExecutor` of result type ``R`` (the
            result type passes down the chain), else a
            ``RetryExecutor[SameResult]``.

        Raises:
            TypeError: ``executor`` has no ``submit`` method; ``retry_policy`` is
                not a ``RetryPolicy``; ``kwargs`` are given with ``retry_policy``,
                or one of them is unknown or has the wrong type; ``name`` is not a
                ``str``.
            ValueError: a policy argument is out of range.
        """
        return RetryExecutor(
            executor, retry_policy, logger, name=name_of(executor, name), **kwargs
        )

    @overload
    @staticmethod
    def with_timeout(  # type: ignore[overload-overlap]
        executor: FluentExecutor[R],
        timeout: float,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> TimeoutExecutor[R]: ...

    @overload
    @staticmethod
    def with_timeout(
        executor: Executor,
        timeout: float,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> TimeoutExecutor[SameResult]: ...

    @staticmethod
    def with_timeout(
        executor: FluentExecutor[R] | Executor,
        timeout: float,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> TimeoutExecutor[R] | TimeoutExecutor[SameResult]:
        """Wrap ``executor`` in a :class:`~fluent_executors.TimeoutExecutor`.

        The new executor cancels a future that is not done ``timeout`` seconds
        after its submit, if ``executor`` lets its future be cancelled. It takes
        ``executor``'s ``name`` unless ``name`` is given.

        Args:
            executor: the delegate, any :class:`concurrent.futures.Executor`.
            timeout: seconds after which a future not done is cancelled;
                ``math.inf`` never cancels.
            logger: where to log; default the ``fluent_executors.timeout`` logger.
            name: the new executor's name; default ``executor``'s.

        Returns:
            A ``TimeoutExecutor[R]`` if ``executor`` is a
            :class:`~fluent_executors.FluentExecutor` of result type ``R`` (the
            result type passes down the chain), else a
            ``TimeoutExecutor[SameResult]``.

        Raises:
            TypeError: ``executor`` has no ``submit`` method; ``timeout`` is not a
                real number; ``name`` is not a ``str``.
            ValueError: ``timeout`` is negative or NaN.
        """
        return TimeoutExecutor(executor, timeout, logger, name=name_of(executor, name))

    @overload
    @staticmethod
    def with_asyncio(  # type: ignore[overload-overlap]
        executor: FluentExecutor[R],
        loop: asyncio.AbstractEventLoop | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> AsyncioExecutor[R]: ...

    @overload
    @staticmethod
    def with_asyncio(
        executor: Executor,
        loop: asyncio.AbstractEventLoop | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> AsyncioExecutor[SameResult]: ...

    @staticmethod
    def with_asyncio(
        executor: FluentExecutor[R] | Executor,
        loop: asyncio.AbstractEventLoop | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> AsyncioExecutor[R] | AsyncioExecutor[SameResult]:
        """Wrap ``executor`` in a :class:`~fluent_executors.AsyncioExecutor`.

        The new executor's ``submit`` returns :class:`asyncio.Future` objects, to be
        awaited in coroutines. It takes ``executor``'s ``name`` unless ``name`` is
        given. Put it at the outer end of a chain.

        Args:
            executor: the delegate, any :class:`concurrent.futures.Executor`.
            loop: the event loop of the futures; ``None``: the loop running in the
                thread that calls ``submit``.
            logger: a logger for the executor's messages.
            name: the new executor's name; default ``executor``'s.

        Returns:
            An ``AsyncioExecutor[R]`` if ``executor`` is a
            :class:`~fluent_executors.FluentExecutor` of result type ``R`` (the
            result type passes down the chain), else a
            ``AsyncioExecutor[SameResult]``.

        Raises:
            TypeError: ``executor`` has no ``submit`` method; ``loop`` is neither an
                event loop nor ``None``; ``name`` is not a ``str``.
        """
        from .asyncio import AsyncioExecutor

        return AsyncioExecutor(executor, loop, logger, name_of(executor, name))

    @staticmethod
    def with_map(
        executor: Executor,
        fn: Callable[[Any], U],
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        error_fn: Callable[[Exception], U] | None = None,
    ) -> MapExecutor[U]:
        """Wrap ``executor`` in a :class:`~fluent_executors.MapExecutor`.

        The new executor's futures resolve with ``fn(result)`` of ``executor``'s
        results, and, if ``error_fn`` is given, with ``error_fn(exception)`` of its
        exceptions. It takes ``executor``'s ``name`` unless ``name`` is given.

        Args:
            executor: the delegate, any :class:`concurrent.futures.Executor`.
            fn: transforms each result; called in the thread that completes it.
            error_fn: transforms each exception into a result, or raises.
            logger: where to log; default the ``fluent_executors.map`` logger.
            name: the new executor's name; default ``executor``'s.

        Returns:
            A ``MapExecutor[U]``, for ``fn`` and ``error_fn`` returning ``U``,
            whatever ``executor``'s result type.

        Raises:
            TypeError: ``executor`` has no ``submit`` method; ``fn`` or
                ``error_fn`` is not callable; ``name`` is not a ``str``.
        """
        return MapExecutor(
            executor, fn, logger, name_of(executor, name), error_fn=error_fn
        )

    @staticmethod
    def with_flat_map(
        executor: Executor,
        fn: Callable[[Any], Future[U]],
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        error_fn: Callable[[Exception], Future[U]] | None = None,
    ) -> FlatMapExecutor[U]:
        """Wrap ``executor`` in a :class:`~fluent_executors.FlatMapExecutor`.

        ``fn`` is called with each of ``executor``'s results and returns a future
        (typically submitted to another executor); the new executor's future takes
        on its outcome. It takes ``executor``'s ``name`` unless ``name`` is given.

        Args:
            executor: the delegate, any :class:`concurrent.futures.Executor`.
            fn: returns the future to follow for each result.
            error_fn: returns the future to follow for each exception.
            logger: where to log; default the ``fluent_executors.map`` logger.
            name: the new executor's name; default ``executor``'s.

        Returns:
            A ``FlatMapExecutor[U]``, for ``fn`` and ``error_fn`` returning a
            ``Future[U]``, whatever ``executor``'s result type.

        Raises:
            TypeError: ``executor`` has no ``submit`` method; ``fn`` or
                ``error_fn`` is not callable; ``name`` is not a ``str``.
        """
        return FlatMapExecutor(
            executor, fn, logger, name_of(executor, name), error_fn=error_fn
        )

    @overload
    @staticmethod
    def with_throttle(  # type: ignore[overload-overlap]
        executor: FluentExecutor[R],
        count: ThrottleCount,
        logger: logging.Logger | None = None,
        name: str | None = None,
        block: bool = False,
    ) -> ThrottleExecutor[R]: ...

    @overload
    @staticmethod
    def with_throttle(
        executor: Executor,
        count: ThrottleCount,
        logger: logging.Logger | None = None,
        name: str | None = None,
        block: bool = False,
    ) -> ThrottleExecutor[SameResult]: ...

    @staticmethod
    def with_throttle(
        executor: FluentExecutor[R] | Executor,
        count: ThrottleCount,
        logger: logging.Logger | None = None,
        name: str | None = None,
        block: bool = False,
    ) -> ThrottleExecutor[R] | ThrottleExecutor[SameResult]:
        """Wrap ``executor`` in a :class:`~fluent_executors.ThrottleExecutor`.

        At most ``count`` futures of ``executor`` are under way at once; further
        callables wait in a queue, in submit order. It takes ``executor``'s
        ``name`` unless ``name`` is given.

        Args:
            executor: the delegate, any :class:`concurrent.futures.Executor`.
            count: an ``int`` >= 0 (0 pauses), or a callable returning one (or
                ``None`` for no limit), read before each callable is passed on.
            block: if ``True``, ``submit`` waits until its callable has been
                passed on, instead of queueing it.
            logger: where to log; default the ``fluent_executors.throttle`` logger.
            name: the new executor's name; default ``executor``'s.

        Returns:
            A ``ThrottleExecutor[R]`` if ``executor`` is a
            :class:`~fluent_executors.FluentExecutor` of result type ``R`` (the
            result type passes down the chain), else a
            ``ThrottleExecutor[SameResult]``.

        Raises:
            TypeError: ``executor`` has no ``submit`` method; ``count`` is neither
                an ``int`` nor callable; ``block`` is not a ``bool``; ``name`` is
                not a ``str``.
            ValueError: ``count`` is a negative ``int``.
            Exception: what a ``count`` callable raises when first called here.
        """
        return ThrottleExecutor(
            executor, count, logger, name_of(executor, name), block=block
        )

    @overload
    @staticmethod
    def with_rate_limit(  # type: ignore[overload-overlap]
        executor: FluentExecutor[R],
        max_calls: int,
        period: float = 1.0,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> RateLimitExecutor[R]: ...

    @overload
    @staticmethod
    def with_rate_limit(
        executor: Executor,
        max_calls: int,
        period: float = 1.0,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> RateLimitExecutor[SameResult]: ...

    @staticmethod
    def with_rate_limit(
        executor: FluentExecutor[R] | Executor,
        max_calls: int,
        period: float = 1.0,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> RateLimitExecutor[R] | RateLimitExecutor[SameResult]:
        """Wrap ``executor`` in a :class:`~fluent_executors.RateLimitExecutor`.

        At most ``max_calls`` callables reach ``executor`` in any window of
        ``period`` seconds; further ones wait in a queue, in submit order,
        without holding a thread. It takes ``executor``'s ``name`` unless ``name``
        is given.

        Args:
            executor: the delegate, any :class:`concurrent.futures.Executor`.
            max_calls: the most callables passed on per window; at least 1.
            period: the length of the window, in seconds.
            logger: where to log; default the ``fluent_executors.rate_limit``
                logger.
            name: the new executor's name; default ``executor``'s.

        Returns:
            A ``RateLimitExecutor[R]`` if ``executor`` is a
            :class:`~fluent_executors.FluentExecutor` of result type ``R`` (the
            result type passes down the chain), else a
            ``RateLimitExecutor[SameResult]``.

        Raises:
            TypeError: ``executor`` has no ``submit`` method; ``max_calls`` is not
                an ``int``; ``period`` is not a real number; ``name`` is not a
                ``str``.
            ValueError: ``max_calls`` is less than 1; ``period`` is not positive
                and finite.
        """
        return RateLimitExecutor(
            executor, max_calls, period, logger, name_of(executor, name)
        )

    @overload
    @staticmethod
    def with_cancel_on_shutdown(  # type: ignore[overload-overlap]
        executor: FluentExecutor[R],
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> CancelOnShutdownExecutor[R]: ...

    @overload
    @staticmethod
    def with_cancel_on_shutdown(
        executor: Executor,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> CancelOnShutdownExecutor[SameResult]: ...

    @staticmethod
    def with_cancel_on_shutdown(
        executor: FluentExecutor[R] | Executor,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> CancelOnShutdownExecutor[R] | CancelOnShutdownExecutor[SameResult]:
        """Wrap ``executor`` in a :class:`~fluent_executors.CancelOnShutdownExecutor`.

        The new executor's ``shutdown()`` cancels every future it returned that is
        not yet done, then shuts down ``executor``. It takes ``executor``'s
        ``name`` unless ``name`` is given.

        Args:
            executor: the delegate, any :class:`concurrent.futures.Executor`.
            logger: accepted for a uniform signature.
            name: the new executor's name; default ``executor``'s.

        Returns:
            A ``CancelOnShutdownExecutor[R]`` if ``executor`` is a
            :class:`~fluent_executors.FluentExecutor` of result type ``R`` (the
            result type passes down the chain), else a
            ``CancelOnShutdownExecutor[SameResult]``.

        Raises:
            TypeError: ``executor`` has no ``submit`` method; ``name`` is not a
                ``str``.
        """
        return CancelOnShutdownExecutor(executor, logger, name_of(executor, name))

    @overload
    @staticmethod
    def bind(
        executor: FluentExecutor[SameResult], fn: Callable[P, T]
    ) -> BoundCallable[P, T]: ...

    @overload
    @staticmethod
    def bind(
        executor: FluentExecutor[R], fn: Callable[P, object]
    ) -> BoundCallable[P, R]: ...

    @overload
    @staticmethod
    def bind(executor: Executor, fn: Callable[P, T]) -> BoundCallable[P, T]: ...

    @staticmethod
    def bind(executor: Executor, fn: Callable[P, Any]) -> BoundCallable[P, Any]:
        """Bind ``fn`` to ``executor``: return a callable that submits it.

        ``Executors.bind(executor, fn)(*args, **kwargs)`` is
        ``executor.submit(fn, *args, **kwargs)``. The callable has ``with_*``
        methods, which wrap its executor: ``.with_map(g)`` transforms its results.
        For a ``fn`` that returns a future, use :meth:`flat_bind`.

        Args:
            executor: any :class:`concurrent.futures.Executor`.
            fn: the function to submit.

        Returns:
            A :class:`~fluent_executors.BoundCallable` with ``fn``'s parameters
            ``P``, returning ``Future[T]`` for a ``fn`` returning ``T``: a
            ``BoundCallable[P, T]``; a ``BoundCallable[P, R]`` if ``executor`` is
            a :class:`~fluent_executors.FluentExecutor` whose result type ``R``
            is not :class:`~fluent_executors.SameResult`.

        Raises:
            TypeError: ``executor`` has no ``submit`` method; ``fn`` is not
                callable.
        """
        return BoundCallable(executor, fn)

    @overload
    @staticmethod
    def flat_bind(
        executor: FluentExecutor[SameResult], fn: Callable[P, Future[T]]
    ) -> BoundCallable[P, T]: ...

    @overload
    @staticmethod
    def flat_bind(
        executor: FluentExecutor[Future[T]], fn: Callable[P, object]
    ) -> BoundCallable[P, T]: ...

    @overload
    @staticmethod
    def flat_bind(
        executor: Executor, fn: Callable[P, Future[T]]
    ) -> BoundCallable[P, T]: ...

    @staticmethod
    def flat_bind(executor: Executor, fn: Callable[P, Any]) -> BoundCallable[P, Any]:
        """Bind ``fn``, which returns a future, to ``executor``.

        Like :meth:`bind`, but the futures the callable returns take on the
        outcome of the future that ``fn`` returns, instead of resolving with it:
        ``Future[T]`` rather than ``Future[Future[T]]``.

        Args:
            executor: any :class:`concurrent.futures.Executor`.
            fn: the function to submit; it returns a future.

        Returns:
            A :class:`~fluent_executors.BoundCallable` with ``fn``'s parameters
            ``P``, returning ``Future[T]`` for a ``fn`` returning ``Future[T]``:
            a ``BoundCallable[P, T]``. If ``executor`` is a
            :class:`~fluent_executors.FluentExecutor` whose result type is not
            :class:`~fluent_executors.SameResult`, that result type must be a
            ``Future[T]`` (what ``fn`` returns does not matter then).

        Raises:
            TypeError: ``executor`` has no ``submit`` method; ``fn`` is not
                callable.
        """
        return flat_bound(executor, fn)
