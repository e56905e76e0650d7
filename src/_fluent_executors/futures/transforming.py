"""The combinators that transform one future: f_return, f_return_error,
f_return_cancelled, f_map, f_flat_map and f_proxy."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from concurrent.futures import Future
from types import TracebackType
from typing import Any, TypeVar, overload

from ..proxy import ProxyFuture
from ..wrapper import check_callable, check_non_negative
from .checks import (
    _check_future,
    _succeeded,
)

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")


@overload
def f_return() -> ProxyFuture[None]: ...


@overload
def f_return(value: T) -> ProxyFuture[T]: ...


def f_return(value: Any = None) -> ProxyFuture[Any]:
    """Return a future already resolved with ``value``.

    Signature: ``A -> Future<A>``

    Args:
        value: the result of the future (type ``A``); default ``None``.

    Returns:
        A done ``ProxyFuture[A]``.

    >>> from fluent_executors import f_return
    >>> f_return(42).result()
    42
    """
    future: ProxyFuture[Any] = ProxyFuture()
    future._try_set_result(value)
    return future


def f_return_error(
    exception: BaseException, traceback: TracebackType | None = None
) -> ProxyFuture[Any]:
    """Return a future already failed with ``exception``.

    Signature: ``BaseException -> Future<A>``

    Args:
        exception: the exception that the future's ``result()`` raises.
        traceback: a traceback to attach to ``exception`` (kept for compatibility
            with more-executors; exceptions carry their own traceback).

    Returns:
        A done ``ProxyFuture``, usable as a future of any type.

    Raises:
        TypeError: ``exception`` is not an exception instance, or ``traceback`` is
            neither a traceback nor ``None``.

    >>> from fluent_executors import f_return_error
    >>> f_return_error(ValueError("no such task")).exception()
    ValueError('no such task')
    """
    if not isinstance(exception, BaseException):
        raise TypeError(
            f"exception must be an exception instance, got {type(exception).__name__}"
        )
    if traceback is not None and not isinstance(traceback, TracebackType):
        raise TypeError(
            f"traceback must be a traceback or None, got {type(traceback).__name__}"
        )
    future: ProxyFuture[Any] = ProxyFuture()
    future._try_set_exception(exception, traceback)
    return future


def f_return_cancelled() -> ProxyFuture[Any]:
    """Return a future that is already cancelled.

    Signature: ``() -> Future<A>``

    Returns:
        A cancelled ``ProxyFuture``, usable as a future of any type.

    >>> from fluent_executors import f_return_cancelled
    >>> f_return_cancelled().cancelled()
    True
    """
    future: ProxyFuture[Any] = ProxyFuture()
    future._try_cancel()
    return future


def _identity(value: T) -> T:
    return value


class _MappedFuture(ProxyFuture[B]):
    """Follows a future and resolves with a function of its outcome."""

    def __init__(
        self,
        fn: Callable[[Any], B],
        error_fn: Callable[[Exception], B] | None,
    ) -> None:
        super().__init__()
        self._fn = fn
        self._error_fn = error_fn

    def _on_upstream_done(self, upstream: Future[Any]) -> None:
        if upstream.cancelled():
            self._try_cancel()
            return
        error = upstream.exception()
        if error is None:
            function, argument = self._fn, upstream.result()
        elif self._error_fn is not None and isinstance(error, Exception):
            function, argument = self._error_fn, error
        else:
            self._try_set_exception(error)
            return
        try:
            value = function(argument)
        except BaseException as raised:  # a user function must not kill this thread
            self._try_set_exception(raised)
        else:
            self._try_set_result(value)


@overload
def f_map(
    future: Future[A], fn: None = None, error_fn: None = None
) -> ProxyFuture[A]: ...


@overload
def f_map(
    future: Future[A],
    fn: Callable[[A], B],
    error_fn: Callable[[Exception], B] | None = None,
) -> ProxyFuture[B]: ...


@overload
def f_map(
    future: Future[A], fn: None = None, *, error_fn: Callable[[Exception], B]
) -> ProxyFuture[A | B]: ...


def f_map(
    future: Future[Any],
    fn: Callable[[Any], Any] | None = None,
    error_fn: Callable[[Exception], Any] | None = None,
) -> ProxyFuture[Any]:
    """Return a future of ``fn`` applied to the result of ``future``.

    Signature: ``Future<A>, (A -> B), (Exception -> B) -> Future<B>``

    When ``future`` succeeds, the returned future resolves with
    ``fn(future.result())`` (with the result itself if ``fn`` is ``None``). When it
    fails with an :class:`Exception`, the returned future resolves with
    ``error_fn(exception)`` if ``error_fn`` is given, else fails with the same
    exception; a ``BaseException`` that is not an ``Exception`` is never given to
    ``error_fn``. If ``fn`` or ``error_fn`` raises, the returned future fails with
    that exception. When ``future`` is cancelled, so is the returned future.

    The functions run once, in the thread that resolves ``future``, or in the calling
    thread if ``future`` is already done.

    Cancelling the returned future cancels ``future``; it succeeds if that does.

    Args:
        future: the input, a ``Future[A]``.
        fn: ``Callable[[A], B]``, applied to the input's result; ``None`` passes the
            result on unchanged.
        error_fn: ``Callable[[Exception], B]``, applied to the input's exception;
            ``None`` passes the exception on.

    Returns:
        A ``ProxyFuture[B]``.

    Raises:
        TypeError: ``future`` is not a future; ``fn`` or ``error_fn`` is neither
            callable nor ``None``.

    >>> from fluent_executors import f_map, f_return, f_return_error
    >>> f_map(f_return(20), lambda x: x + 1).result()
    21
    >>> f_map(f_return_error(KeyError("x")), error_fn=lambda e: "missing").result()
    'missing'
    """
    _check_future("future", future)
    if fn is not None:
        check_callable("fn", fn)
    if error_fn is not None:
        check_callable("error_fn", error_fn)
    output: _MappedFuture[Any] = _MappedFuture(
        _identity if fn is None else fn, error_fn
    )
    output._follow(future)
    return output


class _FlattenFuture(ProxyFuture[T]):
    """Follows a future of a future, then the inner future."""

    def __init__(self, outer: Future[Future[T]]) -> None:
        super().__init__()
        self._outer: Future[Future[T]] | None = outer
        self._follow(outer)

    def _on_upstream_done(self, upstream: Future[Any]) -> None:
        if upstream is not self._outer or not _succeeded(upstream):
            self._try_copy(upstream)
            return
        self._outer = None  # followed no more: the output must not keep it alive
        inner = upstream.result()
        if isinstance(inner, Future):
            self._follow(inner)  # cancel() now cancels the inner future
        else:
            self._try_set_exception(
                TypeError(
                    "fn and error_fn of f_flat_map must return a "
                    f"concurrent.futures.Future, got {type(inner).__name__}"
                )
            )


@overload
def f_flat_map(
    future: Future[A], fn: None = None, error_fn: None = None
) -> ProxyFuture[A]: ...


@overload
def f_flat_map(
    future: Future[A],
    fn: Callable[[A], Future[B]],
    error_fn: Callable[[Exception], Future[B]] | None = None,
) -> ProxyFuture[B]: ...


@overload
def f_flat_map(
    future: Future[A], fn: None = None, *, error_fn: Callable[[Exception], Future[B]]
) -> ProxyFuture[A | B]: ...


def f_flat_map(
    future: Future[Any],
    fn: Callable[[Any], Future[Any]] | None = None,
    error_fn: Callable[[Exception], Future[Any]] | None = None,
) -> ProxyFuture[Any]:
    """Like :func:`f_map`, with functions that return futures; returns their outcome.

    Signature: ``Future<A>, (A -> Future<B>), (Exception -> Future<B>) -> Future<B>``

    The returned future takes on the outcome of the future that ``fn`` (or
    ``error_fn``) returns, rather than resolving with that future itself. It fails
    with ``TypeError`` if the function returns something else than a future, and
    with the exception the function raises if it raises. ``fn=None`` passes a
    result on unchanged, ``error_fn=None`` an exception.

    Cancelling the returned future cancels ``future`` while the functions have not
    run, then the future they returned; it succeeds if that does.

    Args:
        future: the input, a ``Future[A]``.
        fn: ``Callable[[A], Future[B]]``, applied to the input's result.
        error_fn: ``Callable[[Exception], Future[B]]``, applied to the input's
            exception.

    Returns:
        A ``ProxyFuture[B]``.

    Raises:
        TypeError: ``future`` is not a future; ``fn`` or ``error_fn`` is neither
            callable nor ``None``.

    >>> from fluent_executors import f_flat_map, f_return
    >>> f_flat_map(f_return(2), lambda x: f_return(x * 10)).result()
    20
    """
    outer = f_map(future, f_return if fn is None else fn, error_fn)
    return _FlattenFuture(outer)


class _ForwardingFuture(ProxyFuture[T]):
    """Follows a future, and forwards attribute access, calls and operators to its
    result."""

    def __init__(self, timeout: float | None) -> None:
        super().__init__()
        self._proxy_timeout = timeout

    def _proxied(self) -> T:
        return self.result(self._proxy_timeout)

    def __getattr__(self, name: str) -> Any:
        # Only reached for names the future itself lacks. Private and special names
        # are never forwarded: the machinery that probes for them (copy, pickle,
        # asyncio) must not block on the result.
        if name.startswith("_"):
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}"
            )
        return getattr(self._proxied(), name)

    def __bool__(self) -> bool:
        # Truthy like any object, never blocking: only __len__ is forwarded, and
        # bool() would fall back to it.
        return True


def _forward(operation: Callable[..., Any], reflected: bool = False) -> Any:
    """A method of :class:`_ForwardingFuture` that applies ``operation`` to the
    result (as its second operand if ``reflected``)."""
    if reflected:
        return lambda self, other: operation(other, self._proxied())
    return lambda self, *args, **kwargs: operation(self._proxied(), *args, **kwargs)


_BINARY_OPERATORS: dict[str, Callable[..., Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "matmul": operator.matmul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "divmod": divmod,
    "pow": pow,
    "lshift": operator.lshift,
    "rshift": operator.rshift,
    "and": operator.and_,
    "xor": operator.xor,
    "or": operator.or_,
}


_OTHER_OPERATIONS: dict[str, Callable[..., Any]] = {
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "neg": operator.neg,
    "pos": operator.pos,
    "abs": operator.abs,
    "invert": operator.invert,
    "int": int,
    "float": float,
    "index": operator.index,
    "round": round,
    "trunc": math.trunc,
    "floor": math.floor,
    "ceil": math.ceil,
    "len": len,
    "iter": iter,
    "contains": operator.contains,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "call": lambda target, *args, **kwargs: target(*args, **kwargs),
}


def _install_forwarders() -> None:
    for name, operation in _BINARY_OPERATORS.items():
        setattr(_ForwardingFuture, f"__{name}__", _forward(operation))
        setattr(_ForwardingFuture, f"__r{name}__", _forward(operation, reflected=True))
    for name, operation in _OTHER_OPERATIONS.items():
        setattr(_ForwardingFuture, f"__{name}__", _forward(operation))


_install_forwarders()


def f_proxy(future: Future[T], *, timeout: float | None = None) -> ProxyFuture[T]:
    """Return a future that also stands for its result: attribute access, calls and
    operators on it go to the result, waiting for it if needed.

    Signature: ``Future<A> -> Future<A>``

    The returned future resolves like ``future`` and keeps the whole future API
    (``result()``, ``done()``, ``cancel()``, ...). In addition:

    - reading an attribute that a future does not have, and whose name does not
      start with an underscore, reads it on the result;
    - calling it calls the result;
    - these operations apply to the result: ``len``, ``iter``, ``in``, ``[]``
      (get, set, delete), ``int``, ``float``, ``operator.index``, ``round``,
      ``math.trunc``, ``math.floor``, ``math.ceil``, unary ``-``,
      ``+``, ``~``, ``abs``, the comparisons ``<``, ``<=``, ``>``, ``>=``, and the
      arithmetic and bitwise binary operators, on either side.

    ``==``, ``!=``, ``hash``, ``str`` and ``repr`` stay those of the future, so that
    it can still be kept in sets and dictionaries and logged without blocking, and
    the proxy is truthy like any object (``if proxy:`` never waits; test
    ``proxy.result()`` for the result's truth), as in more-executors.

    Each forwarded operation waits for the result (up to ``timeout`` seconds) and
    raises what ``result()`` raises: the input's exception,
    :class:`~concurrent.futures.CancelledError`, or
    :class:`~concurrent.futures.TimeoutError`.

    Cancelling the returned future cancels ``future``; it succeeds if that does.

    Args:
        future: the input, a ``Future[A]``.
        timeout: the most seconds a forwarded operation waits for the result;
            ``None`` waits as long as needed.

    Returns:
        A ``ProxyFuture[A]``.

    Raises:
        TypeError: ``future`` is not a future, or ``timeout`` is not a number.
        ValueError: ``timeout`` is negative or NaN.

    >>> from fluent_executors import f_proxy, f_return
    >>> words = f_proxy(f_return(["fluent", "executors"]))
    >>> len(words), words[1], words.index("fluent")
    (2, 'executors', 0)
    """
    _check_future("future", future)
    output: _ForwardingFuture[T] = _ForwardingFuture(
        None if timeout is None else check_non_negative("timeout", timeout)
    )
    output._follow(future)
    return output
