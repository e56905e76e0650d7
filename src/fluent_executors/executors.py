"""The ``Executors`` facade: one place to build every executor of the library.

Its methods are the classes' constructors, made from the table of executors
(:mod:`_fluent_executors.registry`): each signature is written once, on the class
(tests/test_signatures.py checks that the facade matches). A ``with_*`` method only
adds that the new wrapper takes its delegate's ``name`` when none is given.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from _fluent_executors.registry import EXECUTORS, install, method_for

if TYPE_CHECKING:
    from _fluent_executors.fluent import FluentExecutor, SameResult
    from _fluent_executors.interpreter_pool import InterpreterPoolExecutor
    from _fluent_executors.process_pool import ProcessPoolExecutor

    from .asyncio import AsyncioExecutor
    from .bind import BoundCallable
    from .cancel_on_shutdown import CancelOnShutdownExecutor
    from .dask import DaskExecutor
    from .map import FlatMapExecutor, MapExecutor
    from .poll import PollExecutor
    from .pools import ThreadPoolExecutor
    from .rate_limit import RateLimitExecutor
    from .ray import RayExecutor
    from .retry import RetryExecutor
    from .sync import SyncExecutor
    from .throttle import ThrottleExecutor
    from .timeout import TimeoutExecutor

__all__ = ["Executors"]

T = TypeVar("T")
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
        interpreter_pool = staticmethod(InterpreterPoolExecutor)
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
            from _fluent_executors.errors import called_as

            from .pools import ThreadPoolExecutor

            return called_as(
                "Executors.thread_pool", ThreadPoolExecutor, *args, name=name, **kwargs
            )

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
            from _fluent_executors.errors import called_as
            from _fluent_executors.process_pool import ProcessPoolExecutor

            return called_as(
                "Executors.process_pool",
                ProcessPoolExecutor,
                *args,
                name=name,
                **kwargs,
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
            (Python 3.14 and later): the arguments of
            :class:`concurrent.futures.InterpreterPoolExecutor`, and ``name``.

            Raises:
                NotImplementedError: before Python 3.14.
                TypeError: ``name`` is not a ``str``; ``max_workers`` is not an
                    ``int`` (nor ``None``).
                ValueError: ``max_workers`` is not positive.

            .. versionadded:: 0.2.0
            """
            from _fluent_executors.interpreter_pool import InterpreterPoolExecutor

            return InterpreterPoolExecutor(
                max_workers, thread_name_prefix, initializer, initargs, name=name
            )

    if TYPE_CHECKING:
        # Type checkers see the constructors (their overloads give a wrapper of a
        # FluentExecutor[R] the result type R). At run time these methods are made
        # from the registry (below the class): each calls the constructor, with the
        # delegate's name as a wrapper's default name, importing its module on the
        # first call.
        sync = staticmethod(SyncExecutor)
        dask = staticmethod(DaskExecutor)
        ray = staticmethod(RayExecutor)
        with_poll = PollExecutor
        with_retry = RetryExecutor
        with_timeout = TimeoutExecutor
        with_asyncio = AsyncioExecutor
        with_map = MapExecutor
        with_flat_map = FlatMapExecutor
        with_throttle = ThrottleExecutor
        with_rate_limit = RateLimitExecutor
        with_cancel_on_shutdown = CancelOnShutdownExecutor

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


# The methods of the registry's executors, but those written above (the pools).
install(Executors, EXECUTORS, lambda row: staticmethod(method_for(row, "Executors")))
