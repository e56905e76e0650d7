"""What every wrapper executor shares: its delegate, name, logger and shutdown state."""

from __future__ import annotations

import logging
import math
import numbers
import sys
import threading
from abc import ABCMeta, abstractmethod
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, Executor, Future
from contextvars import copy_context
from types import FunctionType
from typing import Any, ParamSpec, TypeVar, cast, overload

from . import scheduler
from .counts import open_counts
from .fluent import Delegate, FluentExecutor, R, SameResult
from .logging import ContainedLogger, Once
from .proxy import ProxyFuture
from .stdlib_compat import interpreter_exiting
from .tracing import InContext, submit_captured, tracer

T = TypeVar("T")
F = TypeVar("F")
P = ParamSpec("P")


# What a work item or a retry future keeps as the keyword arguments of a callable
# that has none, rather than the empty dict that submit got: from Python 3.14 on,
# an empty dict is tracked by the garbage collector, one more object per future in
# flight. Never changed: the callable is called with **NO_KWARGS, a copy.
NO_KWARGS: dict[str, Any] = {}


def check_delegate(delegate: object) -> Executor:
    """Return ``delegate``, an executor; raise ``TypeError`` unless it looks like
    one (a ``Delegate[R]`` of the type checkers is any object with an executor's
    methods)."""
    if not callable(getattr(delegate, "submit", None)):
        raise TypeError(
            "delegate must be an executor with a submit() method, "
            f"got {type(delegate).__name__}"
        )
    return cast("Executor", delegate)


def check_name(name: object) -> None:
    """Raise ``TypeError`` unless ``name`` is a string."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")


def check_callable(argument: str, value: object) -> None:
    """Raise ``TypeError`` naming ``argument`` unless ``value`` is callable."""
    if not callable(value):
        raise TypeError(f"{argument} must be callable, got {type(value).__name__}")


_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE, the flag of an ``async def``'s code


def check_submittable(fn: object) -> None:
    """Raise ``TypeError`` unless ``fn`` can be submitted to an executor: a callable
    that is not a coroutine function (its call would make a coroutine that no event
    loop ever runs). An :class:`~_fluent_executors.tracing.InContext` passes: an
    outer layer has checked its callable."""
    if isinstance(fn, InContext):
        return
    if type(fn) is FunctionType:  # the common case, without inspect's unwrapping
        coroutine = bool(fn.__code__.co_flags & _CO_COROUTINE)
    else:
        check_callable("fn", fn)
        import inspect  # here: importing the library should not import inspect

        coroutine = inspect.iscoroutinefunction(fn)
    if coroutine:
        raise TypeError(
            f"fn must not be a coroutine function, got {fn!r}: a coroutine needs an "
            "event loop. Submit a function that runs it, for example "
            "functools.partial(asyncio.run, fn(...)), or await it in a coroutine."
        )


_LOGGER_METHODS = ("debug", "info", "warning", "error", "exception")


def check_logger(logger: object) -> None:
    """Raise ``TypeError`` unless ``logger`` is ``None`` or has callable ``debug``,
    ``info``, ``warning``, ``error`` and ``exception`` methods (a
    :class:`logging.Logger`, a :class:`logging.LoggerAdapter`, a structlog logger)."""
    if logger is None:
        return
    missing = [m for m in _LOGGER_METHODS if not callable(getattr(logger, m, None))]
    if missing:
        raise TypeError(
            "logger must be a logging.Logger or an object with the same methods "
            f"({', '.join(_LOGGER_METHODS)}), got {type(logger).__name__} without "
            f"{', '.join(missing)}"
        )


def check_non_negative(argument: str, value: object, *, finite: bool = False) -> float:
    """Return ``value`` as a float, or raise naming ``argument`` if it is not a
    number >= 0 (a number of seconds, an exponent).

    Args:
        argument: the name of the argument, for the error message.
        value: the value to check.
        finite: whether to refuse ``math.inf`` too.

    Raises:
        TypeError: ``value`` is not a real number, or is a ``bool``.
        ValueError: ``value`` is negative or NaN, or infinite when ``finite``.
    """
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{argument} must be a real number, got {type(value).__name__}")
    try:
        number = float(value)
    except (OverflowError, ValueError):  # an int beyond a float, a signaling NaN
        raise ValueError(
            f"{argument} must be a number a float can hold, got {_short(value)}"
        ) from None
    if not number >= 0:  # also catches NaN
        raise ValueError(f"{argument} must be >= 0, got {value!r}")
    if finite and number == math.inf:
        raise ValueError(f"{argument} must be finite, got {value!r}")
    return number


def check_count(argument: str, value: object) -> int:
    """Return ``value``, or raise naming ``argument`` if it is not an ``int`` >= 1
    (a number of calls, workers, descriptors).

    Args:
        argument: the name of the argument, for the error message.
        value: the value to check.

    Raises:
        TypeError: ``value`` is not an ``int``, or is a ``bool``.
        ValueError: ``value`` is below 1.
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{argument} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{argument} must be at least 1, got {value}")
    return value


def check_rate(max_calls: object, period: object) -> float:
    """Check a rate limit's ``max_calls`` and ``period`` (threaded or async), each
    error naming its argument.

    Returns:
        ``period``, in seconds, as a float.

    Raises:
        TypeError: ``max_calls`` is not an ``int``; ``period`` is not a real number.
        ValueError: ``max_calls`` is below 1; ``period`` is not finite and > 0.
    """
    check_count("max_calls", max_calls)
    seconds = check_non_negative("period", period, finite=True)
    if seconds == 0:
        raise ValueError(f"period must be > 0 seconds, got {period!r}")
    return seconds


def seconds_returned(value: object) -> float | None:
    """What a user's function returned for a number of seconds (a poll function's
    delay, say), as a float in ``[0, inf]``: a negative number counts as 0 and a
    number beyond a float (an ``int`` such as ``10**400``) as ``math.inf``. ``None``
    if it is no real number, or NaN: the caller logs that and falls back."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return None
    try:
        try:
            number = float(value)
        except OverflowError:  # an int, or a Fraction, beyond a float
            return math.inf if cast("float", value) > 0 else 0.0
    except Exception:  # a signaling NaN (Decimal), a Real type of the user's
        return None
    if math.isnan(number):
        return None
    return max(number, 0.0)


def _short(value: object) -> str:
    """``repr(value)``, cut short if long (an int of hundreds of digits)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def shutdown_delegate(delegate: Executor, wait: bool, cancel_futures: bool) -> None:
    """Shut down ``delegate`` with the same arguments, as far as it accepts them;
    with ``wait``, then end and join the scheduler's threads if nothing else uses
    them (:func:`~_fluent_executors.scheduler.retire`), so that a wrapper's
    ``shutdown(wait=True)`` leaves no thread behind, as the standard pools'.

    Some executors (Dask's ``ClientExecutor``, executors written before Python 3.9)
    have no ``cancel_futures`` parameter; they are shut down with ``wait`` alone.
    """
    if cancel_futures and _accepts_cancel_futures(delegate):
        delegate.shutdown(wait=wait, cancel_futures=True)
    else:
        delegate.shutdown(wait=wait)
    if wait:
        scheduler.retire()


def _accepts_cancel_futures(delegate: Executor) -> bool:
    import inspect  # at shutdown only

    try:
        parameters = inspect.signature(delegate.shutdown).parameters.values()
    except (TypeError, ValueError):  # no signature to read: assume the standard one
        return True
    return any(
        p.name == "cancel_futures" or p.kind is inspect.Parameter.VAR_KEYWORD
        for p in parameters
    )


Taker = Callable[[InContext, tuple[Any, ...], dict[str, Any]], Future[Any]]
# The library's thread pool's _take_captured_for: the call, for the future given.
TakerFor = Callable[
    [ProxyFuture[Any], InContext, tuple[Any, ...], dict[str, Any]], None
]


def _taker_of(delegate: Executor) -> Taker | None:
    """What ``delegate.submit`` does with a callable that an outer layer captured
    (an :class:`~_fluent_executors.tracing.InContext`) and the arguments as a tuple
    and a dict, for a delegate of the library whose class keeps the library's
    ``submit``: its ``_take_captured``, which a wrapper calls directly rather than
    pack the arguments anew for ``submit`` to unpack. ``None`` for any other
    delegate (a class that overrides ``submit``, a ``MagicMock``, a proxy object),
    whose ``submit`` is called."""
    cls = type(delegate)
    submit = getattr(cls, "_taken_by", None)
    if submit is None or getattr(cls, "submit", None) is not submit:
        return None
    if isinstance(delegate, WrapperExecutor):  # its _take_captured: _submit
        return delegate._submit
    take: Taker = delegate._take_captured  # type: ignore[attr-defined]
    return take


class DelegatingExecutor(FluentExecutor[R]):
    """Base of the wrapper executors: holds the delegate and the shutdown state.

    ``shutdown()`` is idempotent, refuses new submits with ``RuntimeError`` and shuts
    down the delegate with the same arguments. Subclasses define ``submit``; those
    whose futures are the library's derive from :class:`WrapperExecutor`.

    Type parameters:
        R: the result type of the futures (see :class:`FluentExecutor`).
    """

    def __init__(
        self, delegate: Delegate[Any], *, logger: logging.Logger | None, name: str
    ) -> None:
        executor = check_delegate(delegate)
        check_name(name)
        check_logger(logger)
        self._delegate = executor
        self._delegate_takes = _taker_of(executor)
        # Where the delegate is the library's thread pool, called directly: what
        # runs a call for a future of this executor without a pool future.
        self._delegate_takes_for: TakerFor | None = (
            None
            if self._delegate_takes is None or isinstance(executor, WrapperExecutor)
            else getattr(executor, "_take_captured_for", None)
        )
        self._name = name
        # The module of the concrete class: fluent_executors.poll, .retry, ...
        self._logger = ContainedLogger(
            logger or logging.getLogger(type(self).__module__)
        )
        self._shutdown_lock = threading.Lock()
        self._is_shutdown = False
        self._exit_logged = Once()  # the one line of _log_failure at exit
        self._broken_logged = Once()  # the one record of a broken delegate

    def _log_failure(
        self,
        level: int,
        message: str,
        *args: object,
        error: BaseException | None = None,
    ) -> None:
        """Log ``message % args`` at ``level`` with the traceback of ``error``, or
        of the exception being handled (a future is failed next, which a logger
        that raises cannot stop: see
        :class:`~_fluent_executors.logging.ContainedLogger`).

        Once the interpreter is exiting, the pools refuse new work, and every
        pending retry or queued callable would fail with a traceback: then one
        line is logged per executor, without it, and nothing more. Likewise once
        the failure is a :class:`~concurrent.futures.BrokenExecutor` (a process
        pool whose workers died or were stopped, which never works again): the
        first is logged, with its traceback, and no other of this executor.
        """
        if interpreter_exiting():
            if self._exit_logged.first():
                self._logger.log(
                    level,
                    f"{message} (the interpreter is exiting: not logged again "
                    "for this executor)",
                    *args,
                )
            return
        failure = error if error is not None else sys.exc_info()[1]
        if not isinstance(failure, BrokenExecutor):
            self._logger.log(level, message, *args, exc_info=error or True)
        elif self._broken_logged.first():
            self._logger.log(
                level,
                f"{message} (the delegate is broken: not logged again for this "
                "executor)",
                *args,
                exc_info=failure,
            )

    def _lock_to_share(self, upstream: Future[Any]) -> threading.RLock | None:
        """The lock for a new future of this executor that will follow
        ``upstream``, the delegate's future, and nothing else: ``upstream``'s own
        where the delegate is the library's and was called directly (see
        :func:`_taker_of`), so that it made ``upstream`` for this call and hands it
        to nobody else; ``None`` (a lock of its own) for any other delegate, which
        may return a future that its caller also holds.

        The two futures are resolved one after the other and cancelled down the
        chain, never one under the other's lock, so one lock (re-entrant) serves
        both: a map or timeout future, and the futures of the layers it follows
        down to the next one made before its upstream (a retry future's attempt),
        hold one lock, not one each. Fewer objects to make and for the garbage
        collector to track: at 100,000 futures in flight the collector takes a
        third of a chain's time. As only the outermost future of such a chain
        reaches the user, :func:`concurrent.futures.wait` and ``as_completed``,
        which take the lock of every future they are given in turn, are never
        given two futures of one lock and another thread's futures of the same
        locks in the other order.
        """
        if (
            self._delegate_takes is None
            or "submit" in self._delegate.__dict__  # a spy patched onto it
            or not isinstance(upstream, ProxyFuture)
        ):
            return None
        return upstream._lock

    def _submit_to_delegate(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Future[Any]:
        """Submit ``fn(*args, **kwargs)`` to the delegate (``args`` and ``kwargs``
        as ``_submit`` got them: unpacked once, here); return
        its future.

        Raises:
            TypeError: the delegate's ``submit`` returned something that is not a
                :class:`~concurrent.futures.Future` (a ``MagicMock`` whose
                ``submit`` was not given a return value, say).
            Exception: whatever the delegate's ``submit`` raises.
        """
        delegate = self._delegate
        takes = self._delegate_takes
        if (
            takes is not None
            and isinstance(fn, InContext)
            and "submit" not in delegate.__dict__  # no spy patched onto it
        ):
            return takes(fn, args, kwargs)
        future = delegate.submit(fn, *args, **kwargs)
        if not isinstance(future, Future):
            raise TypeError(
                "the delegate's submit() must return a concurrent.futures.Future, "
                f"got {type(future).__name__}"
            )
        return future

    def _submit_to_delegate_for(
        self,
        follower: ProxyFuture[Any],
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        """Submit ``fn(*args, **kwargs)`` to the delegate, and have ``follower``,
        a new future of this executor that follows nothing else, follow it.

        Where the delegate is the library's thread pool, called directly, the pool
        runs the call for ``follower`` with no future of its own (see
        :mod:`_fluent_executors.handoff`); any other delegate's future is
        followed.

        Raises:
            TypeError, Exception: as :meth:`_submit_to_delegate`.
        """
        takes_for = self._delegate_takes_for
        if (
            takes_for is not None
            and isinstance(fn, InContext)
            and "submit" not in self._delegate.__dict__  # no spy patched onto it
        ):
            takes_for(follower, fn, args, kwargs)
        else:
            follower._follow(self._submit_to_delegate(fn, args, kwargs))

    # Whether submit() makes a call span, with tracing on; a poll executor makes a
    # task span instead, whether it is the outermost layer or not.
    _call_span = True

    def _submit_in_context(
        self,
        submit: Callable[..., F],
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *more: Any,
    ) -> F:
        """``submit(call, args, kwargs, *more)``, ``call`` being ``fn`` in a copy of
        the submitter's context (``fn`` as it is if an outer layer made it so),
        under a call span if tracing is on (see :mod:`_fluent_executors.tracing`).
        """
        if isinstance(fn, InContext):
            return submit(fn, args, kwargs, *more)
        return submit_captured(
            submit,
            fn,
            self._counts.kind,
            self._name,
            args,
            kwargs,
            *more,
            call_span=self._call_span,
        )

    def _open_metrics(self, kind: str) -> None:
        """Start counting, for :meth:`stats` and the metrics labelled ``kind``
        (``poll``, ``retry``, ...); called once, at the end of the concrete class's
        ``__init__``."""
        self._counts = open_counts(self, kind, self._name)

    def _close_metrics(self) -> None:
        """Count the executor out of use in the metrics; called by every
        ``shutdown``."""
        if self._counts.metrics is not None:
            self._counts.metrics.close()

    def _repr_fields(self) -> dict[str, object]:
        return self._wrapper_fields()

    def _wrapper_fields(self) -> dict[str, object]:
        """This wrapper's own key parameters, for ``describe()``."""
        return {}

    def _wrapped(self) -> Executor:
        return self._delegate

    @property
    def delegate(self) -> Executor:
        """The executor this one submits to (:class:`~concurrent.futures.Executor`)."""
        return self._delegate

    def _check_open(self) -> None:
        """Raise ``RuntimeError`` if the executor has been shut down."""
        if self._is_shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Shut down this executor and its delegate.

        Args:
            wait: if ``True``, return only once the delegate's work is done.
            cancel_futures: if ``True``, cancel the futures that have not started.

        Calling it more than once is harmless.
        """
        with self._shutdown_lock:
            self._is_shutdown = True
        self._close_metrics()
        shutdown_delegate(self._delegate, wait, cancel_futures)


class WrapperExecutor(DelegatingExecutor[R], metaclass=ABCMeta):
    """Base of the wrapper executors whose futures are the library's
    (:class:`~fluent_executors.ProxyFuture`).

    ``submit()`` checks that ``fn`` is callable and leaves the rest to
    :meth:`_submit`, which each of them defines.

    Type parameters:
        R: the result type of the futures (see :class:`FluentExecutor`).
    """

    # Executor.submit promises a Future of the callable's result type, which an
    # executor of another result type R (around a map executor) does not keep.
    @overload  # type: ignore[override]
    def submit(
        self: WrapperExecutor[SameResult],
        fn: Callable[P, T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> ProxyFuture[T]: ...

    @overload
    def submit(
        self, fn: Callable[P, object], /, *args: P.args, **kwargs: P.kwargs
    ) -> ProxyFuture[R]: ...

    def submit(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> ProxyFuture[T] | ProxyFuture[R]:
        """Submit ``fn(*args, **kwargs)`` to the delegate, through this executor.

        What the executor does with it (retries it, cancels it when its time is up,
        polls for its outcome, queues it, ...) is described with its class. A
        throttle executor built with ``block=True`` waits here until the callable
        has been passed on to the delegate. Whichever thread runs it, ``fn`` runs
        in a copy of the submitter's ``contextvars`` context (see
        :ref:`guide-context`).

        Returns:
            A ``Future[T]`` for a ``fn`` returning ``T`` (a ``Future[R]`` if the
            executor's result type ``R`` is not
            :class:`~fluent_executors.SameResult`), resolved as the class describes.

        Raises:
            TypeError: ``fn`` is not callable, or is a coroutine function
                (``async def``: a coroutine needs an event loop).
            RuntimeError: the executor has been shut down.
            Exception: whatever the delegate's ``submit`` raises, for an executor
                that calls it from ``submit`` (a retry executor: for the first
                attempt). An executor that queues callables (throttle, rate limit)
                fails the future with it instead.

        .. versionchanged:: 0.2.0
           ``fn`` runs in a copy of the submitter's context.
        """
        if isinstance(fn, InContext):  # from an outer layer, which captured its context
            return self._submit(fn, args, kwargs)
        check_submittable(fn)
        if tracer() is None:  # no span to make: the common case, inline
            return self._submit(InContext(fn, copy_context(), None), args, kwargs)
        return self._submit_in_context(self._submit, fn, args, kwargs)

    # The submit whose work on a captured callable _submit does: see _taker_of.
    _taken_by = submit

    @abstractmethod
    def _submit(
        self, fn: InContext, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ProxyFuture[Any]:
        """Do the work of :meth:`submit` for a callable ``fn``, captured in its
        submitter's context (by :meth:`submit`, or by an outer layer). ``args``
        and ``kwargs`` are ``submit``'s own (no copies): pass them on as they
        are, or unpacked.
        """
