"""The ``Executors`` facade: one place to build every executor of the library.

Each method is a few lines that build its class, with the class's parameters in
the class's order (tests/test_signatures.py compares them), importing the class's
module when called, so that ``import fluent_executors`` imports no executor's
module. A ``with_*`` method only adds that the new wrapper takes its delegate's
``name`` when none is given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from _fluent_executors.fluent import name_of

if TYPE_CHECKING:
    import asyncio
    import logging
    import multiprocessing.context
    import os

    import distributed

    from _fluent_executors.durable import Store
    from _fluent_executors.fluent import Delegate, FluentExecutor, R, SameResult
    from _fluent_executors.interpreter_pool import InterpreterPoolExecutor
    from _fluent_executors.process_pool import ProcessPoolExecutor

    from .asyncio import AsyncioExecutor
    from .bind import BoundCallable
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

__all__ = ["Executors"]

T = TypeVar("T")
U = TypeVar("U")
# The result type of a FluentExecutor delegate: FluentExecutor's R, but without
# its default, which a type variable must not have before P in a signature.
DelegateResult = TypeVar("DelegateResult")
P = ParamSpec("P")


class Executors:
    """Builds executors: base executors, and wrappers around any executor.

    Every executor returned here has the chainable ``with_*`` methods of
    :class:`~fluent_executors.FluentExecutor`, so these two lines are the same::

        Executors.with_poll(Executors.thread_pool(max_workers=4), poll_tasks)
        Executors.thread_pool(max_workers=4).with_poll(poll_tasks)

    ``Executors.x(...)`` builds the class ``XExecutor`` with the same arguments in
    the same order (see each class for what they mean, what it raises and when).
    The ``with_*`` methods take any :class:`concurrent.futures.Executor` (a thread
    pool, a process pool, a Dask client's executor) as the delegate, and return a
    new executor; the delegate is left as it was. Shutting down the new executor, or
    leaving its ``with`` block, shuts down the delegate too. The new executor's
    ``name``, unless given, is the delegate's (see :ref:`guide-names`). It has the
    delegate's result type ``R`` if the delegate is a ``FluentExecutor[R]``, else
    :class:`~fluent_executors.SameResult` (see :ref:`guide-result-types`), except
    that :meth:`with_map` and :meth:`with_flat_map` give it their functions' one.
    A ``with_*`` method raises ``TypeError`` for a ``delegate`` without a
    ``submit`` method, and as its class does for its other arguments.
    """

    # -- base executors ---------------------------------------------------------

    @staticmethod
    def thread_pool(
        max_workers: int | None = None,
        thread_name_prefix: str = "",
        initializer: Callable[..., object] | None = None,
        initargs: tuple[Any, ...] = (),
        *,
        name: str = "default",
    ) -> ThreadPoolExecutor:
        """Return a new :class:`~fluent_executors.ThreadPoolExecutor`.

        The arguments are those of :class:`concurrent.futures.ThreadPoolExecutor`,
        and ``name``; a ``thread_name_prefix`` not given (or empty) is
        ``fluent-executors-<name>``.

        Raises:
            TypeError: ``name`` is not a ``str``; ``max_workers`` is not an ``int``
                (nor ``None``).
            ValueError: ``max_workers`` is less than 1.
        """
        from .pools import ThreadPoolExecutor

        prefix = thread_name_prefix or f"fluent-executors-{name}"
        return ThreadPoolExecutor(max_workers, prefix, initializer, initargs, name=name)

    @staticmethod
    def process_pool(
        max_workers: int | None = None,
        mp_context: multiprocessing.context.BaseContext | None = None,
        initializer: Callable[..., object] | None = None,
        initargs: tuple[Any, ...] = (),
        *,
        max_tasks_per_child: int | None = None,
        name: str = "default",
    ) -> ProcessPoolExecutor:
        """Return a new :class:`~fluent_executors.ProcessPoolExecutor`.

        The arguments are those of :class:`concurrent.futures.ProcessPoolExecutor`
        (``max_tasks_per_child`` from Python 3.11 on), and ``name``.

        Raises:
            TypeError: ``name`` is not a ``str``; ``max_workers`` is not an ``int``
                (nor ``None``); ``max_tasks_per_child`` given on Python 3.10.
            ValueError: ``max_workers`` is less than 1.
        """
        from _fluent_executors.process_pool import ProcessPoolExecutor

        options: dict[str, Any] = {}
        if max_tasks_per_child is not None:  # Python 3.11 and later take it
            options["max_tasks_per_child"] = max_tasks_per_child
        return ProcessPoolExecutor(
            max_workers, mp_context, initializer, initargs, name=name, **options
        )

    @staticmethod
    def interpreter_pool(
        max_workers: int | None = None,
        thread_name_prefix: str = "",
        initializer: Callable[..., object] | None = None,
        initargs: tuple[Any, ...] = (),
        *,
        name: str = "default",
    ) -> InterpreterPoolExecutor:
        """Return a new :class:`~fluent_executors.InterpreterPoolExecutor`
        (Python 3.14 and later).

        The arguments are those of
        :class:`concurrent.futures.InterpreterPoolExecutor`, and ``name``; a
        ``thread_name_prefix`` not given (or empty) is ``fluent-executors-<name>``.

        Raises:
            NotImplementedError: before Python 3.14.
            TypeError: ``name`` is not a ``str``; ``max_workers`` is not an ``int``
                (nor ``None``).
            ValueError: ``max_workers`` is less than 1.

        .. versionadded:: 0.2.0
        """
        from _fluent_executors.interpreter_pool import InterpreterPoolExecutor

        return InterpreterPoolExecutor(
            max_workers, thread_name_prefix, initializer, initargs, name=name
        )

    @staticmethod
    def sync(
        logger: logging.Logger | None = None, name: str = "default"
    ) -> SyncExecutor:
        """Return a new :class:`~fluent_executors.SyncExecutor`, which runs each
        callable in ``submit`` itself."""
        from .sync import SyncExecutor

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
        callables on a Dask cluster (extra ``dask``)."""
        from .dask import DaskExecutor

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
        as Ray tasks (extra ``ray``)."""
        from .ray import RayExecutor

        return RayExecutor(logger, name, remote_options=remote_options, **init_kwargs)

    # -- wrappers: each keeps its delegate's result type R (see Delegate), except
    # with_map and with_flat_map, whose functions set it

    @staticmethod
    def with_poll(
        delegate: Delegate[R],
        poll_fn: PollFn,
        cancel_fn: CancelFn | None = None,
        default_interval: float = 5.0,
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        poll_retry_policy: RetryPolicy | None = None,
        max_batch: int | None = None,
        poll_timeout: float | None = None,
        store: Store | str | os.PathLike[str] | None = None,
        lease: float = 60.0,
    ) -> PollExecutor[R]:
        """Wrap ``delegate`` in a :class:`~fluent_executors.PollExecutor`, whose
        futures ``poll_fn`` resolves."""
        from .poll import PollExecutor

        return PollExecutor(
            delegate,
            poll_fn,
            cancel_fn,
            default_interval,
            logger,
            name_of(delegate, name),
            poll_retry_policy=poll_retry_policy,
            max_batch=max_batch,
            poll_timeout=poll_timeout,
            store=store,
            lease=lease,
        )

    @staticmethod
    def with_retry(
        delegate: Delegate[R],
        retry_policy: RetryPolicy | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> RetryExecutor[R]:
        """Wrap ``delegate`` in a :class:`~fluent_executors.RetryExecutor`, which
        retries failed callables as ``retry_policy`` (or an
        :class:`~fluent_executors.ExceptionRetryPolicy` of ``kwargs``) decides."""
        from .retry import RetryExecutor

        return RetryExecutor(
            delegate, retry_policy, logger, name_of(delegate, name), **kwargs
        )

    @staticmethod
    def with_timeout(
        delegate: Delegate[R],
        timeout: float,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> TimeoutExecutor[R]:
        """Wrap ``delegate`` in a :class:`~fluent_executors.TimeoutExecutor`, which
        cancels futures not done within ``timeout`` seconds."""
        from .timeout import TimeoutExecutor

        return TimeoutExecutor(delegate, timeout, logger, name_of(delegate, name))

    @overload
    @staticmethod
    def with_map(
        delegate: Executor,
        fn: None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        error_fn: Callable[[Exception], Any] | None = None,
    ) -> MapExecutor[Any]: ...

    @overload
    @staticmethod
    def with_map(
        delegate: Executor,
        fn: Callable[[Any], U],
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        error_fn: Callable[[Exception], U] | None = None,
    ) -> MapExecutor[U]: ...

    @staticmethod
    def with_map(
        delegate: Executor,
        fn: Callable[[Any], U] | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        error_fn: Callable[[Exception], U] | None = None,
    ) -> MapExecutor[Any]:
        """Wrap ``delegate`` in a :class:`~fluent_executors.MapExecutor`, which
        transforms the results with ``fn``: a ``MapExecutor[U]`` for an ``fn``
        returning ``U``."""
        from .map import MapExecutor

        return MapExecutor(
            delegate, fn, logger, name_of(delegate, name), error_fn=error_fn
        )

    @staticmethod
    def with_flat_map(
        delegate: Executor,
        fn: Callable[[Any], Future[U]],
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        error_fn: Callable[[Exception], Future[U]] | None = None,
    ) -> FlatMapExecutor[U]:
        """Wrap ``delegate`` in a :class:`~fluent_executors.FlatMapExecutor`, which
        follows the future that ``fn`` returns for each result: a
        ``FlatMapExecutor[U]`` for an ``fn`` returning ``Future[U]``."""
        from .map import FlatMapExecutor

        return FlatMapExecutor(
            delegate, fn, logger, name_of(delegate, name), error_fn=error_fn
        )

    @staticmethod
    def with_throttle(
        delegate: Delegate[R],
        count: ThrottleCount,
        logger: logging.Logger | None = None,
        name: str | None = None,
        block: bool = False,
    ) -> ThrottleExecutor[R]:
        """Wrap ``delegate`` in a :class:`~fluent_executors.ThrottleExecutor`, which
        runs at most ``count`` callables at once."""
        from .throttle import ThrottleExecutor

        return ThrottleExecutor(delegate, count, logger, name_of(delegate, name), block)

    @staticmethod
    def with_rate_limit(
        delegate: Delegate[R],
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
    ) -> RateLimitExecutor[R]:
        """Wrap ``delegate`` in a :class:`~fluent_executors.RateLimitExecutor`,
        which starts at most ``max_calls`` callables per ``period`` seconds."""
        from .rate_limit import RateLimitExecutor

        return RateLimitExecutor(
            delegate,
            max_calls,
            period,
            logger,
            name_of(delegate, name),
            adaptive=adaptive,
            too_many=too_many,
            decrease_factor=decrease_factor,
            increase=increase,
            max_pause=max_pause,
        )

    @staticmethod
    def with_cancel_on_shutdown(
        delegate: Delegate[R],
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> CancelOnShutdownExecutor[R]:
        """Wrap ``delegate`` in a
        :class:`~fluent_executors.CancelOnShutdownExecutor`, which cancels its
        pending futures when it shuts down."""
        from .cancel_on_shutdown import CancelOnShutdownExecutor

        return CancelOnShutdownExecutor(delegate, logger, name_of(delegate, name))

    @staticmethod
    def with_asyncio(
        delegate: Delegate[R],
        loop: asyncio.AbstractEventLoop | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> AsyncioExecutor[R]:
        """Wrap ``delegate`` in an :class:`~fluent_executors.AsyncioExecutor`, whose
        futures are :class:`asyncio.Future` objects."""
        from .asyncio import AsyncioExecutor

        return AsyncioExecutor(delegate, loop, logger, name_of(delegate, name))

    # -- bound callables ----------------------------------------------------------

    @overload
    @staticmethod
    def bind(
        executor: FluentExecutor[SameResult], fn: Callable[P, T]
    ) -> BoundCallable[P, T]: ...

    @overload
    @staticmethod
    def bind(
        executor: FluentExecutor[DelegateResult], fn: Callable[P, object]
    ) -> BoundCallable[P, DelegateResult]: ...

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
        from .bind import BoundCallable

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
        from .bind import flat_bound

        return flat_bound(executor, fn)
