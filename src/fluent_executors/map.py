"""MapExecutor and FlatMapExecutor: transform each future's outcome on its way out."""

from __future__ import annotations

import logging
import threading
from abc import ABCMeta, abstractmethod
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ClassVar, Generic, ParamSpec, TypeVar, cast, overload

from _fluent_executors.logging import trace
from _fluent_executors.proxy import ProxyFuture, outcome
from _fluent_executors.stdlib_compat import FINISHED
from _fluent_executors.wrapper import WrapperExecutor, check_callable

__all__ = ["FlatMapExecutor", "MapExecutor"]

Mapped = TypeVar("Mapped")  # what the mapping functions return
U = TypeVar("U")  # the result type of the executor's futures
P = ParamSpec("P")


def _identity(value: Any) -> Any:
    return value


class _MappingExecutor(WrapperExecutor[U], Generic[Mapped, U]):
    """What MapExecutor and FlatMapExecutor share: the functions, and submit().

    Type parameters:
        Mapped: what ``fn`` and ``error_fn`` return.
        U: the result type of the futures that ``submit`` returns.
    """

    _kind = "map"  # the kind of its stats and the label of its metrics
    # The class of the futures that submit() returns, which follow the delegate's.
    _future_type: ClassVar[type[_MappingFuture[Any, Any]]]

    def __init__(
        self,
        delegate: Executor,
        fn: Callable[[Any], Mapped],
        error_fn: Callable[[Exception], Mapped] | None,
        logger: logging.Logger | None,
        name: str,
    ) -> None:
        super().__init__(delegate, logger=logger, name=name)
        check_callable("fn", fn)
        if error_fn is not None:
            check_callable("error_fn", error_fn)
        self._fn = fn
        self._error_fn = error_fn
        self._open_metrics(self._kind)

    def _wrapper_fields(self) -> dict[str, object]:
        fields: dict[str, object] = {"fn": self._fn}
        if self._error_fn is not None:
            fields["error_fn"] = self._error_fn
        return fields

    def _submit(
        self, fn: Callable[..., object], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ProxyFuture[U]:
        self._check_open()
        if self._delegate_takes_for is None:  # not the library's pool: follow the
            return self._mapped(self._submit_to_delegate(fn, args, kwargs))  # future
        # The pool runs the call for this future, with no future of its own (see
        # _fluent_executors.handoff), under this future's lock.
        future: _MappingFuture[Mapped, U] = self._future_type(self, None)
        counts = self._counts
        counts.adopt(future)  # before any worker can resolve it
        try:
            self._submit_to_delegate_for(future, fn, args, kwargs)
        except BaseException:
            counts.unadopt(future)  # refused: submit returns no future
            raise
        return future

    def _resumed(self, future: ProxyFuture[Any]) -> ProxyFuture[Any]:
        return self._mapped(future)

    def _mapped(self, upstream: Future[Any]) -> ProxyFuture[U]:
        """A future of this executor of the mapped outcome of ``upstream``, the
        delegate's."""
        future: _MappingFuture[Mapped, U] = self._future_type(
            self, self._lock_to_share(upstream)
        )
        self._counts.adopt(future)
        future._follow(upstream)
        return future


class _MappingFuture(ProxyFuture[U], Generic[Mapped, U], metaclass=ABCMeta):
    """Maps the outcome of the delegate's future, then resolves with what
    :meth:`_on_mapped` makes of the mapped value."""

    def __init__(
        self, executor: _MappingExecutor[Mapped, U], lock: threading.RLock | None
    ) -> None:
        super().__init__(lock)
        self._executor = executor

    def _on_upstream_done(self, upstream: Future[Any]) -> None:
        executor = self._executor
        cancelled, error, result = outcome(upstream)
        function: Callable[[Any], Mapped]
        argument: Any
        if cancelled or error is not None:
            if executor._error_fn is None or not isinstance(error, Exception):
                self._try_copy(upstream)
                return
            function, argument = executor._error_fn, error
        else:
            function, argument = executor._fn, result
        try:
            mapped = function(argument)
        except BaseException as raised:
            # The future carries the error to whoever waits on it, as it would an
            # error of the submitted callable; the log is for diagnosis only.
            trace(
                executor._logger,
                "mapping function of %s %r raised; failing its future",
                type(executor).__name__,
                executor.name,
                exc_info=True,
            )
            self._try_set_exception(raised)
            return
        self._on_mapped(mapped)

    @abstractmethod
    def _on_mapped(self, mapped: Mapped) -> None:
        """Resolve with (what follows from) ``mapped``, the mapping's value."""


class _MapFuture(_MappingFuture[U, U]):
    def _on_mapped(self, mapped: U) -> None:
        self._try_resolve(FINISHED, mapped, None, "add_result")  # _try_set_result


class _FlatMapFuture(_MappingFuture["Future[U]", U]):
    def __init__(
        self, executor: _MappingExecutor[Future[U], U], lock: threading.RLock | None
    ) -> None:
        super().__init__(executor, lock)
        self._mapped: Future[U] | None = None  # the future that fn returned

    def _on_upstream_done(self, upstream: Future[Any]) -> None:
        if upstream is self._mapped:  # the second step: take on its outcome as is
            self._try_copy(upstream)
        else:
            super()._on_upstream_done(upstream)

    def _on_mapped(self, mapped: Future[U]) -> None:
        if not isinstance(mapped, Future):
            self._try_set_exception(
                TypeError(
                    "the functions of a FlatMapExecutor must return a Future, "
                    f"got {type(mapped).__name__}"
                )
            )
            return
        # From now on, cancelling this future cancels the mapped one.
        self._mapped = mapped
        self._follow(mapped)
        if self.cancelled():  # cancelled by a racing cancel() or shutdown
            mapped.cancel()


class MapExecutor(_MappingExecutor[U, U]):
    """An executor that transforms the outcome of each future of its delegate.

    When the delegate's future succeeds, ``fn`` is called with its result and the
    executor's future resolves with what ``fn`` returns. When it fails, the executor's
    future fails with the same exception, unless ``error_fn`` is given: then
    ``error_fn`` is called with the exception and the future resolves with what it
    returns, so it can recover from errors or replace them by raising. Exceptions
    that are not :class:`Exception` (``KeyboardInterrupt``) pass through unchanged.

    If ``fn`` or ``error_fn`` raises, the future fails with that exception (logged at
    ``DEBUG`` level with its traceback; the future is where it is reported).
    Cancelling a future cancels the delegate's; a cancelled delegate future cancels
    the executor's.

    The functions run synchronously, in whichever thread completes the delegate's
    future (a worker of a thread pool, the poll thread of a poll executor, or the
    thread that calls ``submit`` when the delegate's future is already done). They
    should be quick and must not wait for other futures of the same executor.

    Type parameters:
        U: the result type of the futures: what ``fn`` and ``error_fn`` return.

    Args:
        delegate: the executor that runs the submitted callables.
        fn: called with each successful result; its return value is the
            future's result. Default: the result unchanged.
        logger: where to log; default ``logging.getLogger("fluent_executors.map")``.
        name: the executor's name, used in log messages.
        error_fn: called with each :class:`Exception` of the delegate's futures;
            its return value is the future's result. Default: the future fails
            with the exception.

    Raises:
        TypeError: ``delegate`` has no ``submit`` method; ``fn`` or ``error_fn`` is
            not callable; ``name`` is not a ``str``.
    """

    _future_type = _MapFuture

    # Without fn, the results pass through unchanged: their type is unknown here.
    @overload
    def __init__(
        self: MapExecutor[Any],
        delegate: Executor,
        fn: None = None,
        logger: logging.Logger | None = None,
        name: str = "default",
        *,
        error_fn: Callable[[Exception], Any] | None = None,
    ) -> None: ...

    @overload
    def __init__(
        self,
        delegate: Executor,
        fn: Callable[[Any], U],
        logger: logging.Logger | None = None,
        name: str = "default",
        *,
        error_fn: Callable[[Exception], U] | None = None,
    ) -> None: ...

    def __init__(
        self,
        delegate: Executor,
        fn: Callable[[Any], U] | None = None,
        logger: logging.Logger | None = None,
        name: str = "default",
        *,
        error_fn: Callable[[Exception], U] | None = None,
    ) -> None:
        super().__init__(
            delegate,
            cast("Callable[[Any], U]", _identity) if fn is None else fn,
            error_fn,
            logger,
            name,
        )


class FlatMapExecutor(_MappingExecutor["Future[U]", U]):
    """An executor that chains a second asynchronous step after each future of its
    delegate.

    When the delegate's future succeeds, ``fn`` is called with its result and must
    return a :class:`~concurrent.futures.Future`; the executor's future then takes on
    that future's outcome. ``error_fn``, if given, does the same for the delegate's
    :class:`Exception` s. Typically ``fn`` submits the next step to another executor::

        upload = Executors.thread_pool().with_flat_map(
            lambda path: uploads.submit(upload_file, path)
        )

    If ``fn`` or ``error_fn`` raises, the future fails with that exception (logged at
    ``DEBUG`` level with its traceback); if it returns something other than a future,
    the future fails with :class:`TypeError`. Cancelling the executor's future
    cancels the delegate's future while that runs, then the future ``fn`` returned.

    The functions run synchronously, in whichever thread completes the delegate's
    future; they should be quick.

    Type parameters:
        U: the result type of the futures that ``fn`` and ``error_fn`` return.

    Args:
        delegate: the executor that runs the submitted callables.
        fn: called with each successful result; returns the future to follow.
        logger: where to log; default ``logging.getLogger("fluent_executors.map")``.
        name: the executor's name, used in log messages.
        error_fn: called with each :class:`Exception` of the delegate's futures;
            returns the future to follow. Default: the future fails with the
            exception.

    Raises:
        TypeError: ``delegate`` has no ``submit`` method; ``fn`` or ``error_fn`` is
            not callable; ``name`` is not a ``str``.
    """

    _kind = "flat_map"
    _future_type = _FlatMapFuture

    def __init__(
        self,
        delegate: Executor,
        fn: Callable[[Any], Future[U]],
        logger: logging.Logger | None = None,
        name: str = "default",
        *,
        error_fn: Callable[[Exception], Future[U]] | None = None,
    ) -> None:
        super().__init__(delegate, fn, error_fn, logger, name)
