"""The chainable ``with_*`` methods that every executor of this library has, and
the result type that passes down a chain of them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, final, overload

from ._public import publish
from ._registry import WRAPPERS, install, method_for, public

if TYPE_CHECKING:
    import asyncio

    from ._counts import Counts
    from ._stats import ExecutorStats
    from .asyncio import AsyncioExecutor
    from .bind import BoundCallable
    from .cancel_on_shutdown import CancelOnShutdownExecutor
    from .map import FlatMapExecutor, MapExecutor
    from .poll import CancelFn, PollExecutor, PollFn
    from .rate_limit import RateLimitExecutor
    from .retry import RetryExecutor, RetryPolicy
    from .throttle import ThrottleCount, ThrottleExecutor
    from .timeout import TimeoutExecutor


@final
class SameResult:
    """The result type of an executor whose futures hold what the submitted callable
    returns.

    The executors of this library are generic in the result type of their futures,
    ``FluentExecutor[R]``. Most of them resolve ``submit(fn, ...)`` with what ``fn``
    returns: a ``Future[T]`` for a ``fn`` returning ``T``, a type that differs from
    one call to the next and that no type argument can name. ``SameResult`` stands
    for it, and it is the default: ``RetryExecutor`` is ``RetryExecutor[SameResult]``.

    A map executor has a result type of its own instead: ``pool.with_map(parse)``,
    for a ``parse`` returning ``float``, is a ``MapExecutor[float]``, whose
    ``submit(fn, ...)`` returns a ``Future[float]`` whatever ``fn`` returns. The
    wrappers around it keep that type: ``pool.with_map(parse).with_retry()`` is a
    ``RetryExecutor[float]``, whose futures hold a ``float`` too.

    A marker for type checkers, never instantiated; nothing uses it at run time.
    """

    __slots__ = ()


T = TypeVar("T")
U = TypeVar("U")
# The result type of an executor's futures; see SameResult.
if TYPE_CHECKING:  # the default is for type checkers (PEP 696, typing_extensions)
    from typing_extensions import TypeVar as DefaultedTypeVar

    R = DefaultedTypeVar("R", default=SameResult)
else:  # at run time a plain one: importing typing_extensions costs milliseconds
    R = TypeVar("R")
P = ParamSpec("P")


class FluentExecutor(Executor, Generic[R]):
    """An :class:`~concurrent.futures.Executor` with chainable ``with_*`` methods.

    Every executor that :class:`~fluent_executors.Executors` returns is one, so a chain
    reads from the innermost executor outwards::

        Executors.thread_pool(max_workers=4).with_poll(poll_tasks)

    Each ``with_*`` method returns a *new* executor that wraps this one (its
    *delegate*) and leaves this one untouched; shutting down the new executor shuts
    down this one too. The new executor takes this one's :attr:`name`, and its
    result type ``R``, except for :meth:`with_map` and :meth:`with_flat_map`, whose
    functions decide the result type.

    Type parameters:
        R: the result type of the futures that ``submit`` returns.
            :class:`~fluent_executors.SameResult` (the default) for the submitted
            callable's own result type, as on any executor: the pools,
            :class:`~fluent_executors.SyncExecutor` and the wrappers around them. A
            map executor and the wrappers around it have the map's result type.
    """

    # Every executor of the library sets it at the end of its construction
    # (_counts.open_counts): the counts behind stats() and the metrics.
    _counts: Counts

    @property
    def name(self) -> str:
        """The executor's name (``str``), used in thread names and log messages."""
        return getattr(self, "_name", "default")

    def stats(self) -> ExecutorStats:
        """What this executor has done with the futures its ``submit`` returned, and
        is doing now: counts kept from its creation on, whether or not metrics are
        on (see :ref:`metrics-stats`).

        Returns:
            An immutable snapshot, an :class:`~fluent_executors.ExecutorStats`: a
            subclass of it with the counts of its kind for a poll, retry, timeout,
            throttle or rate limit executor (:class:`~fluent_executors.PollStats`,
            :class:`~fluent_executors.RetryStats`,
            :class:`~fluent_executors.TimeoutStats`,
            :class:`~fluent_executors.QueueStats`).

        .. versionadded:: 0.2.0
        """
        return self._counts.stats()

    def _repr_fields(self) -> dict[str, object]:
        """This executor's own key parameters, which :meth:`describe` shows after
        its name."""
        return {}

    def _wrapped(self) -> Executor | None:
        """The executor this one wraps (its delegate); ``None`` for a base
        executor (a pool, a remote engine)."""
        return None

    def _shut_down(self) -> bool:
        """Whether this executor has been shut down."""
        return bool(getattr(self, "_is_shutdown", False))

    def _layers(self) -> list[Executor]:
        """This executor and those it wraps, outermost first."""
        layers: list[Executor] = []
        executor: Executor | None = self
        while executor is not None:
            layers.append(executor)
            executor = (
                executor._wrapped() if isinstance(executor, FluentExecutor) else None
            )
        return layers

    def __repr__(self) -> str:
        """``<RetryExecutor name='jobs' <- TimeoutExecutor <- ThreadPoolExecutor>``:
        the kind of each layer of the chain, outermost first, short enough for a
        log line (see :ref:`reprs <guide-repr>`).

        The name is given once, for the outermost layer, and again for a layer whose
        name differs; ``(shut down)`` follows a layer that is shut down (and with
        it, every layer it wraps). :meth:`describe` shows every layer's parameters.
        """
        parts = []
        outer_shut_down = False
        for layer in self._layers():
            text = type(layer).__name__
            if isinstance(layer, FluentExecutor):
                if layer is self or layer.name != self.name:
                    text += f" name={layer.name!r}"
                shut_down = layer._shut_down()
                if shut_down and not outer_shut_down:
                    text += " (shut down)"
                outer_shut_down = shut_down
            parts.append(text)
        return f"<{' <- '.join(parts)}>"

    def describe(self) -> str:
        """The whole chain, one layer per line, outermost first: each layer's kind,
        name and key parameters, and ``(shut down)`` for each one shut down. The
        long form of ``repr()``, for a debugger or a bug report (see
        :ref:`reprs <guide-repr>`)::

            RetryExecutor name='jobs' retry_policy=ExceptionRetryPolicy(...)
              <- TimeoutExecutor name='jobs' timeout=600.0
              <- ThreadPoolExecutor name='jobs' max_workers=4

        Returns:
            The description (``str``); an executor of another library in the chain
            is shown by its own ``repr()``.

        .. versionadded:: 0.2.0
        """
        lines: list[str] = []
        for layer in self._layers():
            if isinstance(layer, FluentExecutor):
                fields = "".join(
                    f" {key}={value!r}" for key, value in layer._repr_fields().items()
                )
                state = " (shut down)" if layer._shut_down() else ""
                text = f"{type(layer).__name__} name={layer.name!r}{fields}{state}"
            else:
                text = repr(layer)
            lines.append(f"  <- {text}" if lines else text)
        return "\n".join(lines)

    if TYPE_CHECKING:
        # The chain methods, for type checkers: each returns its wrapper class of
        # this executor's result type R. At run time each is made from the registry
        # (below the class), with its class's signature; tests/test_registry.py
        # checks that these are the classes' parameters.

        def with_poll(
            self,
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

        def with_retry(
            self,
            retry_policy: RetryPolicy | None = None,
            logger: logging.Logger | None = None,
            name: str | None = None,
            **kwargs: Any,
        ) -> RetryExecutor[R]: ...

        def with_timeout(
            self,
            timeout: float,
            logger: logging.Logger | None = None,
            name: str | None = None,
        ) -> TimeoutExecutor[R]: ...

        def with_asyncio(
            self,
            loop: asyncio.AbstractEventLoop | None = None,
            logger: logging.Logger | None = None,
            name: str | None = None,
        ) -> AsyncioExecutor[R]: ...

        def with_map(
            self,
            fn: Callable[[Any], U],
            logger: logging.Logger | None = None,
            name: str | None = None,
            *,
            error_fn: Callable[[Exception], U] | None = None,
        ) -> MapExecutor[U]: ...

        def with_flat_map(
            self,
            fn: Callable[[Any], Future[U]],
            logger: logging.Logger | None = None,
            name: str | None = None,
            *,
            error_fn: Callable[[Exception], Future[U]] | None = None,
        ) -> FlatMapExecutor[U]: ...

        def with_throttle(
            self,
            count: ThrottleCount,
            logger: logging.Logger | None = None,
            name: str | None = None,
            block: bool = False,
        ) -> ThrottleExecutor[R]: ...

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
        ) -> RateLimitExecutor[R]: ...

        def with_cancel_on_shutdown(
            self, logger: logging.Logger | None = None, name: str | None = None
        ) -> CancelOnShutdownExecutor[R]: ...

    @overload
    def bind(
        self: FluentExecutor[SameResult], fn: Callable[P, T]
    ) -> BoundCallable[P, T]: ...

    @overload
    def bind(self, fn: Callable[P, object]) -> BoundCallable[P, R]: ...

    def bind(self, fn: Callable[P, Any]) -> BoundCallable[P, Any]:
        """Bind ``fn`` to this executor: return a callable that submits it.

        Same as ``Executors.bind(self, fn)``; see
        :meth:`Executors.bind <fluent_executors.Executors.bind>`.

        Returns:
            A ``BoundCallable[P, T]`` for a ``fn`` of parameters ``P`` returning
            ``T``; a ``BoundCallable[P, R]`` if this executor's result type ``R`` is
            not :class:`~fluent_executors.SameResult`.
        """
        bound: BoundCallable[P, Any] = public(".bind", "BoundCallable")(self, fn)
        return bound

    @overload
    def flat_bind(
        self: FluentExecutor[SameResult], fn: Callable[P, Future[T]]
    ) -> BoundCallable[P, T]: ...

    @overload
    def flat_bind(
        self: FluentExecutor[Future[T]], fn: Callable[P, object]
    ) -> BoundCallable[P, T]: ...

    def flat_bind(self, fn: Callable[P, Any]) -> BoundCallable[P, Any]:
        """Bind ``fn``, which returns a future, to this executor.

        Same as ``Executors.flat_bind(self, fn)``; see
        :meth:`Executors.flat_bind <fluent_executors.Executors.flat_bind>`.

        Returns:
            A ``BoundCallable[P, T]`` for a ``fn`` of parameters ``P`` returning a
            ``Future[T]``; if this executor's result type is not
            :class:`~fluent_executors.SameResult`, it must be a ``Future[T]``.
        """
        bound: BoundCallable[P, Any] = public(".bind", "flat_bound")(self, fn)
        return bound


# The chain methods at run time: one per wrapper of the registry, which imports the
# wrapper's module on its first call (nothing here imports upward).
install(FluentExecutor, WRAPPERS, lambda row: method_for(row, "FluentExecutor"))


publish("fluent_executors", FluentExecutor, SameResult)
