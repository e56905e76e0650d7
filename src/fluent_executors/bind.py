"""BoundCallable: a callable bound to an executor, customisable with ``with_*``."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    Generic,
    ParamSpec,
    TypeVar,
    overload,
)

from _fluent_executors.registry import WRAPPERS, Row, install, method_for, name_of
from _fluent_executors.wrapper import check_callable, check_delegate

from .map import FlatMapExecutor, MapExecutor

if TYPE_CHECKING:
    from .cancel_on_shutdown import CancelOnShutdownExecutor
    from .poll import PollExecutor
    from .rate_limit import RateLimitExecutor
    from .retry import RetryExecutor
    from .throttle import ThrottleExecutor
    from .timeout import TimeoutExecutor

__all__ = ["BoundCallable"]

T = TypeVar("T")
U = TypeVar("U")
P = ParamSpec("P")
Q = ParamSpec("Q")  # the parameters of a wrapper class after its delegate


class _Rewrapping(Generic[Q]):
    """A ``with_*`` method of :class:`BoundCallable` for a wrapper that keeps the
    result type: ``bound.with_x(*args)`` is
    ``BoundCallable(Executors.with_x(bound.executor, *args), bound's function)``,
    typed with the wrapper class's parameters ``Q``.

    On the class, it is the facade's function (for ``inspect.signature`` and the
    API reference, which show the wrapper's parameters after the executor).
    """

    _wrap: Callable[..., Executor]  # the facade's method, given BoundCallable's name
    _bound_signature: Any = None  # see _signature

    if TYPE_CHECKING:  # typed by the wrapper class; made from its registry row

        def __init__(
            self, wrapper: Callable[Concatenate[Executor, Q], Executor], method: str
        ) -> None: ...

    else:

        def __init__(self, row: Row) -> None:
            self._wrap = method_for(row, "BoundCallable")

    @overload
    def __get__(self, bound: None, owner: type[Any]) -> Callable[..., Executor]: ...

    @overload
    def __get__(
        self, bound: BoundCallable[P, T], owner: type[Any]
    ) -> Callable[Q, BoundCallable[P, T]]: ...

    def __get__(
        self, bound: BoundCallable[P, T] | None, owner: type[Any]
    ) -> Callable[..., Any]:
        if bound is None:
            return self._wrap
        wrap = self._wrap

        def with_x(*args: Q.args, **kwargs: Q.kwargs) -> BoundCallable[P, T]:
            return BoundCallable(wrap(bound.executor, *args, **kwargs), bound._fn)

        with_x.__signature__ = self._signature()  # type: ignore[attr-defined]
        return with_x

    def _signature(self) -> Any:
        """What ``inspect.signature()`` shows of the method of a bound callable:
        the wrapper's parameters after the executor (the bound one), returning a
        ``BoundCallable``; made on first use (``inspect`` is slow to import)."""
        signature = self._bound_signature
        if signature is None:
            import inspect

            signature = inspect.signature(self._wrap)
            signature = self._bound_signature = signature.replace(
                parameters=list(signature.parameters.values())[1:],
                return_annotation="BoundCallable[P, T]",
            )
        return signature


class BoundCallable(Generic[P, T]):
    """A callable that submits a function to an executor and returns the future.

    Calling it with arguments submits the bound function with those arguments to
    the bound executor: ``bound(*args, **kwargs)`` is
    ``executor.submit(fn, *args, **kwargs)``. It is what
    :meth:`Executors.bind <fluent_executors.Executors.bind>` and
    :meth:`Executors.flat_bind <fluent_executors.Executors.flat_bind>` return.

    Its ``with_*`` methods return a new bound callable whose executor is the bound
    executor wrapped as by the executor method of the same name, so that a function
    and the way it runs can be defined together::

        fetch = Executors.bind(pool, requests.get).with_map(lambda r: r.json())
        future = fetch("https://example.com/items")  # Future of the decoded JSON

    It carries the bound function's ``__name__``, ``__doc__`` and ``__wrapped__``.
    Users get one from :class:`~fluent_executors.Executors`, never construct it.

    Type parameters:
        P: the parameters of the bound function.
        T: the result type of the futures it returns.
    """

    def __init__(self, executor: Executor, fn: Callable[P, Any]) -> None:
        check_delegate(executor)
        check_callable("fn", fn)
        functools.update_wrapper(self, fn, updated=())
        self._executor = executor
        self._fn = fn

    @property
    def executor(self) -> Executor:
        """The executor that calls submit to
        (:class:`~concurrent.futures.Executor`); shut it down when done."""
        return self._executor

    def _name(self, name: str | None) -> str:
        """The name of a wrapper around the bound executor."""
        return name_of(self._executor, name)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Submit the bound function with these arguments to the bound executor.

        Returns:
            The executor's ``Future[T]``.

        Raises:
            RuntimeError: the executor has been shut down.
            Exception: whatever the executor's ``submit`` raises.
        """
        return self._executor.submit(self._fn, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<BoundCallable {self._fn!r} on {self._executor!r}>"

    # -- the with_* methods: each wraps the executor, keeps the function ------------

    def with_map(
        self,
        fn: Callable[[T], U],
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        error_fn: Callable[[Exception], U] | None = None,
    ) -> BoundCallable[P, U]:
        """Transform the results: see
        :meth:`Executors.with_map <fluent_executors.Executors.with_map>`.
        """
        wrapped = MapExecutor(
            self._executor, fn, logger, self._name(name), error_fn=error_fn
        )
        return BoundCallable(wrapped, self._fn)

    def with_flat_map(
        self,
        fn: Callable[[T], Future[U]],
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        error_fn: Callable[[Exception], Future[U]] | None = None,
    ) -> BoundCallable[P, U]:
        """Chain a second asynchronous step: see
        :meth:`Executors.with_flat_map <fluent_executors.Executors.with_flat_map>`.
        """
        wrapped = FlatMapExecutor(
            self._executor, fn, logger, self._name(name), error_fn=error_fn
        )
        return BoundCallable(wrapped, self._fn)

    # The wrappers that keep the result type: each is its class's constructor,
    # given the bound executor (see _Rewrapping), so its parameters are the class's.
    # For type checkers; at run time, made from the registry (below the class).
    if TYPE_CHECKING:
        with_throttle = _Rewrapping(ThrottleExecutor, "with_throttle")
        with_rate_limit = _Rewrapping(RateLimitExecutor, "with_rate_limit")
        with_cancel_on_shutdown = _Rewrapping(
            CancelOnShutdownExecutor, "with_cancel_on_shutdown"
        )
        with_poll = _Rewrapping(PollExecutor, "with_poll")
        # mypy cannot match RetryExecutor's **kwargs to a ParamSpec; pyright can.
        with_retry = _Rewrapping(RetryExecutor, "with_retry")  # type: ignore[arg-type]
        with_timeout = _Rewrapping(TimeoutExecutor, "with_timeout")


if not TYPE_CHECKING:  # the methods above, made from the registry
    install(
        BoundCallable,
        tuple(row for row in WRAPPERS if row.bound and row.keeps_result),
        _Rewrapping,
    )


def flat_bound(executor: Executor, fn: Callable[P, Any]) -> BoundCallable[P, Any]:
    """What ``flat_bind`` returns: ``fn`` bound to ``executor``, its calls' futures
    taking on the outcome of the future that ``fn`` returns."""
    return BoundCallable(executor, fn).with_flat_map(_same_future)


def _same_future(future: Future[T]) -> Future[T]:
    return future
