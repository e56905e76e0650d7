"""Functions that compose futures: map them, zip them, combine them with or/and.

They accept any :class:`concurrent.futures.Future` (those of the standard executors,
of this library, of other libraries that subclass it) and return a new
:class:`~fluent_executors.ProxyFuture`, which is a standard future that can also be
awaited. None of them blocks: the returned future is resolved from a done callback
of the inputs, in the thread that resolves the last input it needs (or at once, in
the calling thread, when the inputs are already done). A function given to them (a
map function, an error function) runs in that thread too; if it raises, the returned
future fails with that exception.

The signatures in the docstrings use the notation ``Future<A>`` for a future whose
result is of type ``A``.
"""

from __future__ import annotations

import collections
import logging
import math
import operator
from abc import ABCMeta, abstractmethod
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from functools import cache, partial
from types import TracebackType
from typing import Any, TypeVar, overload

from ._errors import TimeoutCancelledError
from ._proxy import ProxyFuture, run_flat
from ._scheduler import call_later
from ._wrapper import check_callable, check_non_negative

__all__ = [
    "f_and",
    "f_apply",
    "f_flat_map",
    "f_map",
    "f_nocancel",
    "f_or",
    "f_proxy",
    "f_return",
    "f_return_cancelled",
    "f_return_error",
    "f_sequence",
    "f_timeout",
    "f_traverse",
    "f_zip",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")
D = TypeVar("D")
E = TypeVar("E")
R = TypeVar("R")


# -- checking arguments ----------------------------------------------------------------


def _check_future(argument: str, value: object) -> Future[Any]:
    """Return ``value`` if it is a future; else raise ``TypeError`` naming
    ``argument``."""
    if not isinstance(value, Future):
        raise TypeError(
            f"{argument} must be a concurrent.futures.Future, "
            f"got {type(value).__name__}"
        )
    return value


def _checked_futures(argument: str, values: Iterable[object]) -> list[Future[Any]]:
    """Return ``values`` as a list, or raise ``TypeError`` naming the first bad one."""
    return [
        _check_future(f"{argument}[{index}]", value)
        for index, value in enumerate(values)
    ]


def _check_iterable(argument: str, value: object) -> None:
    if not isinstance(value, Iterable):
        raise TypeError(f"{argument} must be iterable, got {type(value).__name__}")


# -- creating futures from values ------------------------------------------------------


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


# -- transforming one future -----------------------------------------------------------


def _identity(value: T) -> T:
    return value


class _MapFuture(ProxyFuture[B]):
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
    output: _MapFuture[Any] = _MapFuture(_identity if fn is None else fn, error_fn)
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


def _succeeded(future: Future[Any]) -> bool:
    """Whether the done ``future`` holds a result (is neither cancelled nor failed)."""
    return not future.cancelled() and future.exception() is None


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


# -- combining many futures ------------------------------------------------------------


def _cancel_pending(futures: list[Future[Any]]) -> bool:
    """Cancel every future of ``futures`` not yet done; ``True`` if any of them was
    cancelled."""
    cancelled = False
    for future in futures:
        if not future.done() and future.cancel():
            cancelled = True
    return cancelled


class _FanInFuture(ProxyFuture[T], metaclass=ABCMeta):
    """Resolved from many input futures; cancels the inputs it no longer needs.

    Subclasses decide, input by input, whether the output is resolved early
    (:meth:`_settle`), and how it is resolved once every input is done
    (:meth:`_complete`). Each input costs O(1), and no input's callback waits for
    another's, so any number of inputs is handled without recursion.
    """

    def __init__(self, inputs: list[Future[Any]]) -> None:
        super().__init__()
        self._inputs = inputs
        self._pending = len(inputs)  # guarded by the future's own _lock

    def _start(self) -> ProxyFuture[T]:
        """Watch every input; return ``self``."""
        for index, future in enumerate(self._inputs):
            future.add_done_callback(
                partial(run_flat, partial(self._on_input_done, index))
            )
        return self

    def _on_input_done(self, index: int, future: Future[Any]) -> None:
        if self.done():
            return
        inputs = self._inputs  # resolving forgets them
        if self._settle(index, future):
            _cancel_pending(inputs)
            return
        with self._lock:
            self._pending -= 1
            last = self._pending == 0
        if last:
            self._complete(future)

    @abstractmethod
    def _settle(self, index: int, future: Future[Any]) -> bool:
        """Take the outcome of the done input ``future``, the ``index``-th input;
        return ``True`` if that resolved the output."""

    @abstractmethod
    def _complete(self, last: Future[Any]) -> None:
        """Resolve the output once every input is done; ``last`` is the last one."""

    def _cancel_hook(self) -> bool:
        return _cancel_pending(self._inputs)

    def _is_running(self) -> bool:
        return any(future.running() for future in self._inputs)

    def _on_resolved(self) -> None:
        # A long-lived output must not keep every input, and its result, alive.
        self._inputs = []


class _GatherFuture(_FanInFuture[T]):
    """Resolves with all the inputs' results, or like the first input to fail."""

    def __init__(
        self, inputs: list[Future[Any]], collect: Callable[[list[Any]], T]
    ) -> None:
        super().__init__(inputs)
        self._results: list[Any] = [None] * len(inputs)
        self._collect = collect
        if not inputs:
            self._try_set_result(collect(self._results))

    def _settle(self, index: int, future: Future[Any]) -> bool:
        if not _succeeded(future):
            self._try_copy(future)
            return True
        self._results[index] = future.result()
        return False

    def _complete(self, last: Future[Any]) -> None:
        self._try_set_result(self._collect(self._results))

    def _on_resolved(self) -> None:
        super()._on_resolved()
        # A new list: an input's callback may still be writing into the old one.
        self._results = [None] * len(self._results)


class _BoolFuture(_FanInFuture[T]):
    """Resolves like the first input whose outcome decides an ``or`` or an ``and``,
    else like the last input to complete.

    For ``or`` (``decisive=True``) a truthy result decides; for ``and``
    (``decisive=False``) a falsy result, an exception or a cancellation does.
    """

    def __init__(self, inputs: list[Future[Any]], decisive: bool) -> None:
        super().__init__(inputs)
        self._decisive = decisive

    def _settle(self, index: int, future: Future[Any]) -> bool:
        if not _succeeded(future):
            decides = not self._decisive
        else:
            try:
                decides = bool(future.result()) is self._decisive
            except BaseException as error:  # the result's __bool__ raised
                self._try_set_exception(error)
                return True
        if decides:
            self._try_copy(future)
        return decides

    def _complete(self, last: Future[Any]) -> None:
        self._try_copy(last)


@overload
def f_zip() -> ProxyFuture[tuple[()]]: ...


@overload
def f_zip(f1: Future[A], /) -> ProxyFuture[tuple[A]]: ...


@overload
def f_zip(f1: Future[A], f2: Future[B], /) -> ProxyFuture[tuple[A, B]]: ...


@overload
def f_zip(
    f1: Future[A], f2: Future[B], f3: Future[C], /
) -> ProxyFuture[tuple[A, B, C]]: ...


@overload
def f_zip(
    f1: Future[A], f2: Future[B], f3: Future[C], f4: Future[D], /
) -> ProxyFuture[tuple[A, B, C, D]]: ...


@overload
def f_zip(
    f1: Future[A], f2: Future[B], f3: Future[C], f4: Future[D], f5: Future[E], /
) -> ProxyFuture[tuple[A, B, C, D, E]]: ...


@overload
def f_zip(*fs: Future[Any]) -> ProxyFuture[tuple[Any, ...]]: ...


def f_zip(*fs: Future[Any]) -> ProxyFuture[tuple[Any, ...]]:
    """Return a future of a tuple of the results of ``fs``, in the order given.

    Signature: ``Future<A>, Future<B>, ... -> Future<(A, B, ...)>``

    The returned future fails as soon as one input fails (with the same exception),
    and is cancelled as soon as one input is cancelled; it then cancels the inputs
    still pending, whose results are no longer needed. With no input it is done at
    once, with ``()``. For fewer than 20 inputs the tuple is a named tuple
    ``ZipTuple<N>`` with fields ``f0``, ``f1``, ... (as in more-executors, so that
    a log line names where it came from); from 20 inputs it is a plain ``tuple``.
    Once resolved, the returned future holds no reference to the inputs.

    Cancelling the returned future cancels every input still pending; it succeeds if
    at least one of them could be cancelled.

    Args:
        fs: the inputs, any number of futures.

    Returns:
        A ``ProxyFuture[tuple[A, B, ...]]`` (typed element by element for up to five
        inputs).

    Raises:
        TypeError: one of ``fs`` is not a future.

    >>> from fluent_executors import f_return, f_zip
    >>> f_zip(f_return(1), f_return("a")).result()
    ZipTuple2(f0=1, f1='a')
    """
    return _GatherFuture(_checked_futures("fs", fs), _zip_tuple)._start()


# f_zip's results are named tuples for fewer than this many inputs, as in
# more-executors, so that a log line names where a tuple came from.
_ZIP_TUPLE_LIMIT = 20


@cache
def _zip_tuple_type(size: int) -> Callable[[list[Any]], tuple[Any, ...]]:
    """The ``_make`` of the named tuple ``ZipTuple<size>``, fields ``f0``, ``f1``..."""
    fields = [f"f{index}" for index in range(size)]
    # A name made at run time, which mypy cannot follow (it wants a literal).
    named: Any = collections.namedtuple(  # type: ignore[misc]
        f"ZipTuple{size}", fields, module=__name__
    )
    make: Callable[[list[Any]], tuple[Any, ...]] = named._make
    return make


def _zip_tuple(results: list[Any]) -> tuple[Any, ...]:
    if len(results) < _ZIP_TUPLE_LIMIT:
        return _zip_tuple_type(len(results))(results)
    return tuple(results)


def f_sequence(futures: Iterable[Future[T]]) -> ProxyFuture[list[T]]:
    """Return a future of the list of the results of ``futures``, in their order.

    Signature: ``Iterable<Future<A>> -> Future<list<A>>``

    Like :func:`f_zip`, but over an iterable and holding a list. The returned future
    fails or is cancelled as soon as one input is, and then cancels the inputs still
    pending. An empty iterable gives a future done at once, with ``[]``.

    Cancelling the returned future cancels every input still pending; it succeeds if
    at least one of them could be cancelled.

    Args:
        futures: the inputs, an iterable of ``Future[A]``; read once, at once.

    Returns:
        A ``ProxyFuture[list[A]]``.

    Raises:
        TypeError: ``futures`` is not iterable, or holds something else than futures.

    >>> from fluent_executors import f_return, f_sequence
    >>> f_sequence([f_return(1), f_return(2)]).result()
    [1, 2]
    """
    _check_iterable("futures", futures)
    return _GatherFuture(_checked_futures("futures", futures), list)._start()


def f_traverse(
    fn: Callable[[A], Future[B]], items: Iterable[A]
) -> ProxyFuture[list[B]]:
    """Call ``fn`` on each item and return a future of the list of their results.

    Signature: ``(A -> Future<B>), Iterable<A> -> Future<list<B>>``

    The same as ``f_sequence([fn(item) for item in items])``, except that errors go
    to the returned future: if ``fn`` raises an :class:`Exception` or returns
    something else than a future, or iterating ``items`` raises, the returned future
    fails with that exception (``TypeError`` for a non-future) and the futures
    already returned by ``fn`` are cancelled. ``fn`` is called in the calling thread,
    before this function returns.

    Cancelling the returned future cancels every future from ``fn`` still pending; it
    succeeds if at least one of them could be cancelled.

    Args:
        fn: ``Callable[[A], Future[B]]``.
        items: an iterable of ``A``.

    Returns:
        A ``ProxyFuture[list[B]]``.

    Raises:
        TypeError: ``fn`` is not callable, or ``items`` is not iterable.

    >>> from fluent_executors import f_return, f_traverse
    >>> f_traverse(lambda x: f_return(x * 2), [1, 2, 3]).result()
    [2, 4, 6]
    """
    check_callable("fn", fn)
    _check_iterable("items", items)
    futures: list[Future[B]] = []
    try:
        for item in items:
            future = fn(item)
            _check_future("the value returned by fn", future)
            futures.append(future)
    except Exception as error:
        for future in futures:
            future.cancel()
        return f_return_error(error)
    return f_sequence(futures)


def f_or(f: Future[T], *fs: Future[T]) -> ProxyFuture[T]:
    """Return a future of the first truthy result among the inputs, like ``or``.

    Signature: ``Future<A>, Future<A>, ... -> Future<A>``

    The returned future resolves with the first truthy result *to arrive*, and then
    cancels the inputs still pending, whose results are no longer needed (wrap an
    input in :func:`f_nocancel` to keep it running). If no input has a truthy
    result, it resolves like the input that completed last: with its falsy result,
    its exception, or cancelled. So a failed or cancelled input does not decide the
    outcome while another may still be truthy. If a result's ``__bool__`` raises,
    the returned future fails with that exception.

    Unlike Python's ``or``, which returns the first truthy operand in writing
    order, the inputs run concurrently and the earliest to complete wins.

    Cancelling the returned future cancels every input still pending; it succeeds if
    at least one of them could be cancelled.

    Args:
        f: the first input, a ``Future[A]``.
        fs: more inputs, futures.

    Returns:
        A ``ProxyFuture[A]``.

    Raises:
        TypeError: ``f`` or one of ``fs`` is not a future.

    >>> from fluent_executors import f_or, f_return
    >>> f_or(f_return(0), f_return(""), f_return(7)).result()
    7
    """
    _check_future("f", f)
    return _BoolFuture([f, *_checked_futures("fs", fs)], decisive=True)._start()


def f_and(f: Future[T], *fs: Future[T]) -> ProxyFuture[T]:
    """Return a future of the last result if every input is truthy, like ``and``.

    Signature: ``Future<A>, Future<A>, ... -> Future<A>``

    The returned future resolves like the first input *to arrive* with a falsy
    result, an exception, or a cancellation, and then cancels the inputs still
    pending, whose results are no longer needed (wrap an input in
    :func:`f_nocancel` to keep it running). If every input has a truthy result, it
    resolves with the result of the input that completed last. If a result's
    ``__bool__`` raises, the returned future fails with that exception.

    Cancelling the returned future cancels every input still pending; it succeeds if
    at least one of them could be cancelled.

    Args:
        f: the first input, a ``Future[A]``.
        fs: more inputs, futures.

    Returns:
        A ``ProxyFuture[A]``.

    Raises:
        TypeError: ``f`` or one of ``fs`` is not a future.

    >>> from fluent_executors import f_and, f_return
    >>> f_and(f_return(1), f_return(0)).result()
    0
    """
    _check_future("f", f)
    return _BoolFuture([f, *_checked_futures("fs", fs)], decisive=False)._start()


def f_apply(
    future_fn: Future[Callable[..., R]],
    *futures: Future[Any],
    **kw_futures: Future[Any],
) -> ProxyFuture[R]:
    """Return a future of a function's result, where the function and its arguments
    are the results of futures.

    Signature: ``Future<(A, B, ... -> R)>, Future<A>, Future<B>, ... -> Future<R>``

    Once every input has succeeded, the returned future resolves with
    ``fn(*args, **kwargs)``, where ``fn`` is the result of ``future_fn``, ``args``
    the results of ``futures`` and ``kwargs`` those of ``kw_futures``. It fails or is
    cancelled like :func:`f_zip` when an input does (the inputs still pending are
    then cancelled), and fails with the exception the function raises, if it raises.
    The function runs in the thread that resolves the last input.

    Cancelling the returned future cancels every input still pending; it succeeds if
    at least one of them could be cancelled.

    Args:
        future_fn: a ``Future[Callable[..., R]]``.
        futures: futures of the positional arguments.
        kw_futures: futures of the keyword arguments.

    Returns:
        A ``ProxyFuture[R]``.

    Raises:
        TypeError: ``future_fn`` or one of the other arguments is not a future.

    >>> from fluent_executors import f_apply, f_return
    >>> f_apply(f_return(divmod), f_return(7), f_return(2)).result()
    (3, 1)
    """
    _check_future("future_fn", future_fn)
    positional = _checked_futures("futures", futures)
    for name, value in kw_futures.items():
        _check_future(name, value)
    names = list(kw_futures)

    count = len(positional)

    def call(values: tuple[Any, ...]) -> R:
        fn, *arguments = values
        result: R = fn(
            *arguments[:count], **dict(zip(names, arguments[count:], strict=True))
        )
        return result

    return f_map(f_zip(future_fn, *positional, *kw_futures.values()), call)


# -- changing how a future behaves -----------------------------------------------------


class _NoCancelFuture(ProxyFuture[T]):
    """Follows a future; refuses every cancel."""

    def cancel(self) -> bool:
        """Refuse to cancel: always return ``False``."""
        return False


def f_nocancel(future: Future[T]) -> ProxyFuture[T]:
    """Return a future that resolves like ``future`` but cannot be cancelled.

    Signature: ``Future<A> -> Future<A>``

    The returned future's ``cancel()`` always returns ``False`` and never cancels
    ``future``. It is still cancelled if ``future`` is cancelled by other means. Use
    it to protect an input from the cancellations of :func:`f_or`, :func:`f_and`,
    :func:`f_zip` and the other combinators.

    Args:
        future: the input, a ``Future[A]``.

    Returns:
        A ``ProxyFuture[A]``.

    Raises:
        TypeError: ``future`` is not a future.

    >>> from concurrent.futures import Future
    >>> from fluent_executors import f_nocancel
    >>> pending = Future()
    >>> f_nocancel(pending).cancel(), pending.cancelled()
    (False, False)
    """
    _check_future("future", future)
    output: _NoCancelFuture[T] = _NoCancelFuture()
    output._follow(future)
    return output


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


def f_timeout(future: Future[T], timeout: float) -> ProxyFuture[T]:
    """Return a future that resolves like ``future``, and tries to cancel it once
    ``timeout`` seconds have passed.

    Signature: ``Future<A>, float -> Future<A>``

    If the returned future is not done ``timeout`` seconds after this call, its
    ``cancel()`` is called once, which cancels ``future``. Whether that succeeds
    depends on ``future``: a future of a standard executor that is already running
    refuses, and then the returned future goes on following ``future`` to its end.
    The attempt is made from a worker thread of the library's shared scheduler,
    ``fluent-executors-scheduler-worker``, so a slow cancel (a poll executor's cancel
    function, for example) holds up no other timeout.

    Cancelling the returned future cancels ``future``; it succeeds if that does.

    Args:
        future: the input, a ``Future[A]``.
        timeout: seconds, >= 0; ``math.inf`` never cancels.

    Returns:
        A ``ProxyFuture[A]``.

    Raises:
        TypeError: ``future`` is not a future, or ``timeout`` is not a number.
        ValueError: ``timeout`` is negative or NaN.

    >>> from concurrent.futures import Future, wait
    >>> from fluent_executors import f_timeout
    >>> never_done = Future()
    >>> timed = f_timeout(never_done, 0.01)
    >>> _ = wait([timed], timeout=5.0)
    >>> timed.cancelled(), never_done.cancelled()
    (True, True)
    """
    _check_future("future", future)
    seconds = check_non_negative("timeout", timeout)
    output: ProxyFuture[T] = ProxyFuture()
    output._follow(future)
    if seconds < math.inf and not output.done():
        timer = call_later(seconds, partial(_time_out, output, seconds), may_block=True)
        output.add_done_callback(lambda _: timer.cancel())
    return output


def _time_out(future: ProxyFuture[Any], seconds: float) -> None:
    """Cancel ``future``, whose ``seconds`` have passed, as timed out; log it."""
    if future.done():
        return
    cancelled = future._cancel_with(TimeoutCancelledError(seconds, "f_timeout"))
    logger.info(
        "f_timeout: future not done after %s s; %s",
        seconds,
        "cancelled" if cancelled else "cancel refused, left to finish",
    )
