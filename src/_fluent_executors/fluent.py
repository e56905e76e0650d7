"""The chainable ``with_*`` methods that every executor of this library has, and
the result type that passes down a chain of them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Generic,
    ParamSpec,
    Protocol,
    TypeVar,
    cast,
    final,
    overload,
)

from .public import publish

if TYPE_CHECKING:
    import asyncio
    import logging
    import os

    from fluent_executors.asyncio import AsyncioExecutor
    from fluent_executors.bind import BoundCallable
    from fluent_executors.cancel_on_shutdown import CancelOnShutdownExecutor
    from fluent_executors.map import FlatMapExecutor, MapExecutor
    from fluent_executors.poll import CancelFn, PollExecutor, PollFn
    from fluent_executors.rate_limit import RateLimitExecutor
    from fluent_executors.retry import RetryExecutor, RetryPolicy
    from fluent_executors.throttle import ThrottleCount, ThrottleExecutor
    from fluent_executors.timeout import TimeoutExecutor

    from .counts import Counts
    from .durable import Store, StoredTask
    from .proxy import ProxyFuture
    from .stats import ExecutorStats


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
    R_co = DefaultedTypeVar("R_co", covariant=True, default=SameResult)
else:  # at run time a plain one: importing typing_extensions costs milliseconds
    R = TypeVar("R")
    R_co = TypeVar("R_co", covariant=True)
P = ParamSpec("P")


class Delegate(Protocol[R_co]):
    """What a wrapper executor takes as its delegate, for type checkers: any
    :class:`~concurrent.futures.Executor`, whose futures have the result type
    ``R_co``.

    A :class:`FluentExecutor` ``[R]`` is a ``Delegate[R]``; another executor (a
    standard pool) matches by its methods, with the default result type,
    :class:`SameResult`. So one signature, ``delegate: Delegate[R]``, gives a
    wrapper its delegate's result type. (A union, ``FluentExecutor[R] | Executor``,
    would not: mypy matches a ``FluentExecutor[float]`` to ``Executor`` and infers
    ``SameResult``.)
    """

    def submit(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> Future[T]: ...

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None: ...


# Type checkers see that a FluentExecutor[R] is a Delegate[R]. At run time the base
# is plain Generic: a Protocol base would give every executor class typing's
# Protocol metaclass, for nothing that runs.
if TYPE_CHECKING:
    _ResultBase = Delegate
else:
    _ResultBase = Generic


class FluentExecutor(Executor, _ResultBase[R]):
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
    # (counts.open_counts): the counts behind stats() and the metrics.
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

    # An executor whose futures have its own result type R (a map executor and
    # what wraps it) maps to R: a narrower promise than Executor.map's.
    @overload  # type: ignore[override]
    def map(
        self: FluentExecutor[SameResult],
        fn: Callable[..., T],
        *iterables: Iterable[Any],
        timeout: float | None = None,
        chunksize: int = 1,
        buffersize: int | None = None,
    ) -> Iterator[T]: ...

    @overload
    def map(
        self,
        fn: Callable[..., object],
        *iterables: Iterable[Any],
        timeout: float | None = None,
        chunksize: int = 1,
        buffersize: int | None = None,
    ) -> Iterator[R]: ...

    def map(
        self,
        fn: Callable[..., Any],
        *iterables: Iterable[Any],
        timeout: float | None = None,
        chunksize: int = 1,
        buffersize: int | None = None,
    ) -> Iterator[Any]:
        """Submit ``fn(*args)`` for each ``args`` of ``zip(*iterables)``; return
        an iterator of the results, in that order: :meth:`Executor.map
        <concurrent.futures.Executor.map>` as Python 3.14 defines it, on every
        Python.

        The calls are submitted through this executor (its whole chain); with a
        ``buffersize``, only that many ahead of the consumer: the first
        ``buffersize`` before ``map`` returns, then one more each time a result
        is taken, so that a long or endless iterable is read as the results are
        used. The iterator holds the executor by a weak reference only (but a
        wrapper's futures refer to it: a wrapper dropped with calls of the map in
        flight lives, and submits, on); closing it (or taking a result that
        raises) cancels the calls not yet taken.

        Args:
            fn: the callable, taking one argument from each iterable.
            iterables: the arguments.
            timeout: seconds from this call within which every result must come
                (``None``: no limit).
            chunksize: the calls a process pool sends to a worker process at once
                (:class:`~fluent_executors.ProcessPoolExecutor`); ignored by the
                other executors, as by the standard ones, a wrapper around a
                process pool included (it submits one call at a time).
            buffersize: the most calls submitted whose results have not been
                taken (``None``: every call is submitted at once).

        Returns:
            An ``Iterator[T]`` for a ``fn`` returning ``T``; an ``Iterator[R]`` if
            this executor's result type ``R`` is not
            :class:`~fluent_executors.SameResult`.

        Raises:
            TypeError: ``buffersize`` is neither an ``int`` nor ``None``.
            ValueError: ``buffersize`` is less than 1.
            RuntimeError: the executor has been shut down (from ``submit``).
            concurrent.futures.TimeoutError: (from the iterator; the builtin
                :class:`TimeoutError` from Python 3.11 on) a result did not come
                within ``timeout``.
            Exception: (from the iterator) what a call raised, when its result
                is taken.

        .. versionadded:: 0.2.0
           ``buffersize``, on every Python (the standard ``map`` has it from 3.14
           on).
        """
        # On first use: importing the package imports this module.
        from .bounded_map import bounded_map

        return bounded_map(self, self._map_submit(fn), iterables, timeout, buffersize)

    def _map_submit(
        self, fn: Callable[..., T]
    ) -> Callable[[Any, tuple[Any, ...]], Future[T]]:
        """What :meth:`map` submits for each tuple of arguments, given the executor
        (``map``'s iterator holds it by a weak reference): ``fn(*args)``, through
        ``submit``. An executor whose ``submit`` returns no standard future
        overrides it."""
        return _submit_one(fn)

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

    # -- resume(): durable polling through a chain ------------------------------------

    # Whether resume() may pass a resumed future out through this layer, when it
    # wraps the layer that polls with a store (not a poll layer: it would poll
    # the resumed task's result; not an asyncio layer: its futures are not ours).
    _passes_resumed: ClassVar[bool] = True

    def _polls_with_store(self) -> bool:
        """Whether this layer polls with a store (a poll executor given one)."""
        return False

    def _unresume(self, resumed: dict[Any, StoredTask]) -> None:
        """Undo the futures that :meth:`resume` of this layer (one that polls
        with a store) returned, which the caller does not get after all: each is
        cancelled, its record released for the next ``resume()``."""
        raise NotImplementedError

    def _resumed(self, future: ProxyFuture[Any]) -> ProxyFuture[Any]:
        """This layer's future of ``future``, a resumed future of the layer it
        wraps, as if its delegate had returned it (see :meth:`resume`); a layer
        with nothing to add passes it on as it is."""
        return future

    def resume(self, limit: int | None = None) -> dict[ProxyFuture[Any], StoredTask]:
        """Take over the remote tasks that the store of this chain's poll layer
        holds and no live process polls (see :meth:`PollExecutor.resume
        <fluent_executors.PollExecutor.resume>`), and return a future of this
        executor for each: nothing is submitted, nothing started again.

        The poll layer (the layer of the chain, this one or one it wraps, made
        by ``with_poll(..., store=...)``) resumes the tasks; each layer around it
        then makes its future of each as if the poll layer had returned it from
        a submit: a map layer maps its result, a timeout layer gives it the
        layer's timeout (counted from this call: how long the task ran before is
        not known), a cancel-on-shutdown layer cancels it at its shutdown. A
        retry layer passes it on as it is: a resumed task that fails is not
        tried again, there being no callable to run again (as with
        :meth:`PollExecutor.attach <fluent_executors.PollExecutor.attach>`); a
        throttle or rate-limit layer passes it on too, as it queues callables
        and a resumed task has none. If it fails half-way, the futures made so
        far are cancelled (here alone) and every record claimed is released, as
        :meth:`PollExecutor.resume <fluent_executors.PollExecutor.resume>` says.

        Args:
            limit: at most this many records (``int``, 1 or more); ``None``: all.

        Returns:
            ``dict[ProxyFuture[Any], StoredTask]``: each future of this executor,
            and the record it polls (its start result and key; a label only in
            records written through the store by other means), so that the
            program maps futures back to its inputs.

        Raises:
            RuntimeError: no layer of the chain polls with a store, or a layer
                has been shut down.
            TypeError: a layer around the poll layer cannot pass a resumed
                future on (another poll layer, an asyncio layer); checked before
                anything is claimed.
            ~fluent_executors.stores.StoreError: the store failed; nothing was
                claimed.
            TypeError, ValueError: ``limit`` is not an ``int`` >= 1 or ``None``.

        .. versionadded:: 0.2.0
        """
        layers = self._layers()
        polling = [
            depth
            for depth, layer in enumerate(layers)
            if isinstance(layer, FluentExecutor) and layer._polls_with_store()
        ]
        if not polling:
            raise RuntimeError(
                f"no layer of {self!r} polls with a store to resume from: "
                "with_poll(..., store=...)"
            )
        poll_layer = cast("FluentExecutor[Any]", layers[polling[0]])
        outer = cast("list[FluentExecutor[Any]]", layers[: polling[0]])
        for wrapper in outer:
            if not wrapper._passes_resumed:
                raise TypeError(
                    f"resume() cannot pass a resumed future through the "
                    f"{type(wrapper).__name__} {wrapper.name!r} of {self!r}"
                )
            if wrapper._shut_down():
                raise RuntimeError("cannot schedule new futures after shutdown")
        resumed: dict[ProxyFuture[Any], StoredTask] = {}
        inner = poll_layer.resume(limit)
        try:
            for future, task in inner.items():
                for wrapper in reversed(outer):
                    future = wrapper._resumed(future)
                resumed[future] = task
        except BaseException:  # the caller gets none of them
            poll_layer._unresume(inner)
            raise
        return resumed

    # -- the chain methods: each wraps this executor in its wrapper class --------
    # Each imports its wrapper's module when called, the one reach of this package
    # up into the public one (see the layer sketch in __init__.py), so that
    # importing this module imports no wrapper. Its parameters are its class's,
    # after the delegate, in the same order (tests/test_signatures.py compares
    # them), except that name defaults to this executor's.

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
        store: Store | str | os.PathLike[str] | None = None,
        lease: float = 60.0,
    ) -> PollExecutor[R]:
        """Wrap this executor in a :class:`~fluent_executors.PollExecutor`, whose
        futures ``poll_fn`` resolves.

        Same as ``Executors.with_poll(self, ...)``; see
        :meth:`Executors.with_poll <fluent_executors.Executors.with_poll>`.

        Returns:
            A ``PollExecutor[R]``: its futures have this executor's result type.
        """
        from fluent_executors.poll import PollExecutor

        return PollExecutor(
            self,
            poll_fn,
            cancel_fn,
            default_interval,
            logger,
            name_of(self, name),
            poll_retry_policy=poll_retry_policy,
            max_batch=max_batch,
            poll_timeout=poll_timeout,
            store=store,
            lease=lease,
        )

    def with_retry(
        self,
        retry_policy: RetryPolicy | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> RetryExecutor[R]:
        """Wrap this executor in a :class:`~fluent_executors.RetryExecutor`, which
        retries failed callables.

        Same as ``Executors.with_retry(self, ...)``; see
        :meth:`Executors.with_retry <fluent_executors.Executors.with_retry>`.

        Returns:
            A ``RetryExecutor[R]``: its futures have this executor's result type.
        """
        from fluent_executors.retry import RetryExecutor

        return RetryExecutor(self, retry_policy, logger, name_of(self, name), **kwargs)

    def with_timeout(
        self,
        timeout: float,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> TimeoutExecutor[R]:
        """Wrap this executor in a :class:`~fluent_executors.TimeoutExecutor`, which
        cancels futures not done within ``timeout`` seconds.

        Same as ``Executors.with_timeout(self, ...)``; see
        :meth:`Executors.with_timeout <fluent_executors.Executors.with_timeout>`.

        Returns:
            A ``TimeoutExecutor[R]``: its futures have this executor's result type.
        """
        from fluent_executors.timeout import TimeoutExecutor

        return TimeoutExecutor(self, timeout, logger, name_of(self, name))

    def with_map(
        self,
        fn: Callable[[Any], U] | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        error_fn: Callable[[Exception], U] | None = None,
    ) -> MapExecutor[U]:
        """Wrap this executor in a :class:`~fluent_executors.MapExecutor`, which
        transforms the results with ``fn``.

        Same as ``Executors.with_map(self, ...)``; see
        :meth:`Executors.with_map <fluent_executors.Executors.with_map>`.

        Returns:
            A ``MapExecutor[U]``, for functions whose results are ``U``.
        """
        from fluent_executors.map import MapExecutor

        return MapExecutor(self, fn, logger, name_of(self, name), error_fn=error_fn)

    def with_flat_map(
        self,
        fn: Callable[[Any], Future[U]],
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        error_fn: Callable[[Exception], Future[U]] | None = None,
    ) -> FlatMapExecutor[U]:
        """Wrap this executor in a :class:`~fluent_executors.FlatMapExecutor`, which
        chains the future that ``fn`` returns for each result.

        Same as ``Executors.with_flat_map(self, ...)``; see
        :meth:`Executors.with_flat_map <fluent_executors.Executors.with_flat_map>`.

        Returns:
            A ``FlatMapExecutor[U]``, for functions whose futures hold ``U``.
        """
        from fluent_executors.map import FlatMapExecutor

        return FlatMapExecutor(self, fn, logger, name_of(self, name), error_fn=error_fn)

    def with_throttle(
        self,
        count: ThrottleCount,
        logger: logging.Logger | None = None,
        name: str | None = None,
        block: bool = False,
    ) -> ThrottleExecutor[R]:
        """Wrap this executor in a :class:`~fluent_executors.ThrottleExecutor`, which
        runs at most ``count`` callables at once.

        Same as ``Executors.with_throttle(self, ...)``; see
        :meth:`Executors.with_throttle <fluent_executors.Executors.with_throttle>`.

        Returns:
            A ``ThrottleExecutor[R]``: its futures have this executor's result type.
        """
        from fluent_executors.throttle import ThrottleExecutor

        return ThrottleExecutor(self, count, logger, name_of(self, name), block)

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
    ) -> RateLimitExecutor[R]:
        """Wrap this executor in a :class:`~fluent_executors.RateLimitExecutor`,
        which starts at most ``max_calls`` callables per ``period`` seconds.

        Same as ``Executors.with_rate_limit(self, ...)``; see
        :meth:`Executors.with_rate_limit
        <fluent_executors.Executors.with_rate_limit>`.

        Returns:
            A ``RateLimitExecutor[R]``: its futures have this executor's result type.
        """
        from fluent_executors.rate_limit import RateLimitExecutor

        return RateLimitExecutor(
            self,
            max_calls,
            period,
            logger,
            name_of(self, name),
            adaptive=adaptive,
            too_many=too_many,
            decrease_factor=decrease_factor,
            increase=increase,
            max_pause=max_pause,
        )

    def with_cancel_on_shutdown(
        self,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> CancelOnShutdownExecutor[R]:
        """Wrap this executor in a
        :class:`~fluent_executors.CancelOnShutdownExecutor`, which cancels its
        pending futures when it shuts down.

        Same as ``Executors.with_cancel_on_shutdown(self, ...)``; see
        :meth:`Executors.with_cancel_on_shutdown
        <fluent_executors.Executors.with_cancel_on_shutdown>`.

        Returns:
            A ``CancelOnShutdownExecutor[R]``: its futures have this executor's
            result type.
        """
        from fluent_executors.cancel_on_shutdown import CancelOnShutdownExecutor

        return CancelOnShutdownExecutor(self, logger, name_of(self, name))

    def with_asyncio(
        self,
        loop: asyncio.AbstractEventLoop | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> AsyncioExecutor[R]:
        """Wrap this executor in an :class:`~fluent_executors.AsyncioExecutor`,
        whose futures are :class:`asyncio.Future` objects.

        Same as ``Executors.with_asyncio(self, ...)``; see
        :meth:`Executors.with_asyncio <fluent_executors.Executors.with_asyncio>`.

        Returns:
            An ``AsyncioExecutor[R]``: its futures have this executor's result type.
        """
        from fluent_executors.asyncio import AsyncioExecutor

        return AsyncioExecutor(self, loop, logger, name_of(self, name))

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
        from fluent_executors.bind import BoundCallable

        return BoundCallable(self, fn)

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
        from fluent_executors.bind import flat_bound

        return flat_bound(self, fn)


def _submit_one(
    fn: Callable[..., T],
) -> Callable[[Executor, tuple[Any, ...]], Future[T]]:
    """What ``map`` submits for each tuple of arguments: ``fn(*args)``."""

    def submit(executor: Executor, args: tuple[Any, ...]) -> Future[T]:
        return executor.submit(fn, *args)

    return submit


def name_of(executor: object, name: str | None = None) -> str:
    """``name`` if given, else the ``name`` of ``executor`` if it has a string one,
    else ``"default"``: the name of a wrapper built around ``executor``."""
    if name is not None:
        return name
    name = getattr(executor, "name", "default")
    return name if isinstance(name, str) else "default"


publish("fluent_executors", FluentExecutor, SameResult)
