"""The ``Executors`` facade: one place to build every executor of the library.

Its methods are the classes' constructors: each signature is written once, on the
class (tests/test_signatures.py checks that the facade matches). A ``with_*`` method
only adds that the new wrapper takes its delegate's ``name`` when none is given.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

if TYPE_CHECKING:
    from ._fluent import FluentExecutor, SameResult
    from ._process_pool import ProcessPoolExecutor
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


class _OnFirstUse:
    """A method of the facade, made on first use from the class that it builds, and
    imported then: importing the facade imports no executor's module.

    Its first lookup puts the method in its place on the class that defines it
    (never on a subclass it was looked up through, which may override it):
    ``cls`` itself (calling it builds one), or with ``wrap``, ``wrapping(cls)`` (a
    ``with_*`` method, whose ``name`` defaults to the delegate's)."""

    def __init__(self, module: str, cls: str, *, wrap: bool = False) -> None:
        self._module = module
        self._cls = cls
        self._wrap = wrap
        self._name = ""
        self._owner: type | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name
        self._owner = owner

    def __get__(self, instance: object, owner: type) -> Callable[..., Any]:
        import importlib

        from ._wrapper import wrapping

        cls = getattr(importlib.import_module(self._module, __package__), self._cls)
        method = wrapping(cls, self._name) if self._wrap else _building(cls, self._name)
        setattr(self._owner or owner, self._name, staticmethod(method))
        return method


def _building(cls: type[Any], method: str) -> Callable[..., Any]:
    """The facade's method ``method`` that builds a ``cls``: its constructor, whose
    ``TypeError`` for a wrong keyword argument names ``Executors.<method>()``. Its
    signature is ``cls``'s (``__wrapped__``)."""
    from ._errors import called_as

    called = f"Executors.{method}"

    def build(*args: Any, **kwargs: Any) -> Any:
        return called_as(called, cls, *args, **kwargs)

    build.__name__ = method
    build.__qualname__ = called
    build.__wrapped__ = cls  # type: ignore[attr-defined]  # its signature
    kind = cls.__name__
    build.__doc__ = f"""Return a new :class:`~fluent_executors.{kind}`.

        ``Executors.{method}(...)`` is ``{kind}(...)``: the same arguments, in the
        same order (see :class:`~fluent_executors.{kind}`), except that a wrong
        keyword argument's ``TypeError`` names ``Executors.{method}()``.
        """
    return build


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
            from ._errors import called_as
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
            from ._errors import called_as
            from ._process_pool import ProcessPoolExecutor

            return called_as(
                "Executors.process_pool",
                ProcessPoolExecutor,
                *args,
                name=name,
                **kwargs,
            )

    if TYPE_CHECKING:
        # Type checkers see the constructors (their overloads give a wrapper of a
        # FluentExecutor[R] the result type R); at run time, wrapping(cls) calls
        # the constructor with the delegate's name as the default name.
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
    else:
        sync = _OnFirstUse(".sync", "SyncExecutor")
        dask = _OnFirstUse(".dask", "DaskExecutor")
        ray = _OnFirstUse(".ray", "RayExecutor")
        with_poll = _OnFirstUse(".poll", "PollExecutor", wrap=True)
        with_retry = _OnFirstUse(".retry", "RetryExecutor", wrap=True)
        with_timeout = _OnFirstUse(".timeout", "TimeoutExecutor", wrap=True)
        with_asyncio = _OnFirstUse(".asyncio", "AsyncioExecutor", wrap=True)
        with_map = _OnFirstUse(".map", "MapExecutor", wrap=True)
        with_flat_map = _OnFirstUse(".map", "FlatMapExecutor", wrap=True)
        with_throttle = _OnFirstUse(".throttle", "ThrottleExecutor", wrap=True)
        with_rate_limit = _OnFirstUse(".rate_limit", "RateLimitExecutor", wrap=True)
        with_cancel_on_shutdown = _OnFirstUse(
            ".cancel_on_shutdown", "CancelOnShutdownExecutor", wrap=True
        )

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
