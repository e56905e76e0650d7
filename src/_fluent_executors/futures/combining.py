"""The combinators that combine many futures: f_zip, f_sequence, f_traverse, f_or,
f_and and f_apply."""

from __future__ import annotations

import collections
from abc import ABCMeta, abstractmethod
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from functools import cache, partial
from typing import Any, TypeVar, overload

from ..callbacks import run_flat
from ..proxy import ProxyFuture
from ..wrapper import check_callable
from .checks import (
    _cancel_pending,
    _check_future,
    _check_iterable,
    _checked_futures,
    _succeeded,
)
from .transforming import f_map, f_return_error

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")
D = TypeVar("D")
E = TypeVar("E")
V = TypeVar("V")  # what f_apply's function returns


class _FanInFuture(ProxyFuture[T], metaclass=ABCMeta):
    """Resolved from many input futures; may cancel the inputs it no longer needs.

    Subclasses decide, input by input, whether the output is resolved early
    (:meth:`_settle`), whether the other inputs are then cancelled
    (:meth:`_cancels_rest`), and how the output is resolved once every input is
    done (:meth:`_complete`). Each input costs O(1), and no input's callback waits
    for another's, so any number of inputs is handled without recursion.
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
            if self._cancels_rest(future):
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
    def _cancels_rest(self, future: Future[Any]) -> bool:
        """Whether the inputs still pending are cancelled once the done input
        ``future`` has resolved the output."""

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
    """Resolves with all the inputs' results, or like the first input to fail or be
    cancelled.

    An input that fails leaves the others alone, as in more-executors: they may
    have other callers, who still want their results. An input that is cancelled
    cancels the others if ``cancel_rest`` (f_zip, f_sequence), as in more-executors,
    and leaves them alone if not (f_apply).
    """

    def __init__(
        self,
        inputs: list[Future[Any]],
        collect: Callable[[list[Any]], T],
        *,
        cancel_rest: bool = True,
    ) -> None:
        super().__init__(inputs)
        self._results: list[Any] = [None] * len(inputs)
        self._collect = collect
        self._cancel_rest = cancel_rest
        if not inputs:
            self._try_set_result(collect(self._results))

    def _settle(self, index: int, future: Future[Any]) -> bool:
        if not _succeeded(future):
            self._try_copy(future)
            return True
        self._results[index] = future.result()
        return False

    def _cancels_rest(self, future: Future[Any]) -> bool:
        return self._cancel_rest and future.cancelled()

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

    def _cancels_rest(self, future: Future[Any]) -> bool:
        return True  # decided: the other results are no longer needed

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
    and leaves the other inputs alone: another caller may still want their results
    (as in more-executors). It is cancelled as soon as one input is cancelled, and
    then cancels the inputs still pending (as in more-executors). With no input it
    is done at once, with ``()``. For fewer than 20 inputs the tuple is a named tuple
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
    fails as soon as one input fails, leaving the other inputs alone, and is
    cancelled as soon as one input is cancelled, cancelling the inputs still pending
    (both as in more-executors). An empty iterable gives a future done at once, with
    ``[]``.

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
    fails with that exception (``TypeError`` for a non-future); the futures already
    returned by ``fn`` are left alone, as in more-executors. ``fn`` is called in the
    calling thread, before this function returns.

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

    Cancelling the returned future cancels the inputs still pending, as for
    :func:`f_or`.

    Args:
        f: the first input, a ``Future[A]``.
        fs: the other inputs, futures of results of type ``A`` too.

    Returns:
        A ``ProxyFuture[A]``: the last result, or the first falsy one.

    Raises:
        TypeError: ``f`` or one of ``fs`` is not a future.

    >>> from fluent_executors import f_and, f_return
    >>> f_and(f_return(1), f_return(0)).result()
    0
    """
    _check_future("f", f)
    return _BoolFuture([f, *_checked_futures("fs", fs)], decisive=False)._start()


def f_apply(
    future_fn: Future[Callable[..., V]],
    *futures: Future[Any],
    **kw_futures: Future[Any],
) -> ProxyFuture[V]:
    """Return a future of a function's result, where the function and its arguments
    are the results of futures.

    Signature: ``Future<(A, B, ... -> V)>, Future<A>, Future<B>, ... -> Future<V>``

    Once every input has succeeded, the returned future resolves with
    ``fn(*args, **kwargs)``, where ``fn`` is the result of ``future_fn``, ``args``
    the results of ``futures`` and ``kwargs`` those of ``kw_futures``. It fails or is
    cancelled as soon as an input does, and leaves the other inputs alone (as in
    more-executors); it fails with the exception the function raises, if it raises.
    The function runs in the thread that resolves the last input.

    Cancelling the returned future cancels every input still pending; it succeeds if
    at least one of them could be cancelled.

    Args:
        future_fn: a ``Future[Callable[..., V]]``.
        futures: futures of the positional arguments.
        kw_futures: futures of the keyword arguments.

    Returns:
        A ``ProxyFuture[V]``.

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

    def call(values: tuple[Any, ...]) -> V:
        fn, *arguments = values
        result: V = fn(
            *arguments[:count], **dict(zip(names, arguments[count:], strict=True))
        )
        return result

    inputs = [future_fn, *positional, *kw_futures.values()]
    zipped = _GatherFuture(inputs, _zip_tuple, cancel_rest=False)._start()
    return f_map(zipped, call)
