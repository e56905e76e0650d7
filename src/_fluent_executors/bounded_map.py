"""``Executor.map`` as Python 3.14 defines it, ``buffersize`` included, on every
Python the library supports: the ``map`` of every executor of the library.

Contract: :func:`bounded_map` is called by an executor's ``map`` in the caller's
thread, and returns an iterator that the caller consumes in any one thread at a
time. It submits the first ``buffersize`` calls (all of them if ``None``) before
it returns, then one more each time the consumer takes a result, so that at most
``buffersize`` submitted calls have results not yet taken. The results come in
the order of the arguments; each wait is bounded by what is left of ``timeout``
(seconds, from the call of ``map``). A result taken, or the iterator closed or
collected, cancels the futures not yet taken. The iterator holds its executor
through a weak reference only, as the standard library's does: an executor
collected meanwhile submits nothing more. (A wrapper's futures refer to their
executor, so a wrapper is not collected while calls of the map are in flight.)
"""

from __future__ import annotations

import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from itertools import islice
from typing import Any, TypeVar

__all__ = ["bounded_map", "check_buffersize"]

T = TypeVar("T")
E = TypeVar("E")


def check_buffersize(buffersize: object) -> None:
    """Check ``map``'s ``buffersize`` as Python 3.14's ``Executor.map`` does.

    Raises:
        TypeError: ``buffersize`` is neither an ``int`` nor ``None``.
        ValueError: ``buffersize`` is less than 1.
    """
    if buffersize is None:
        return
    if not isinstance(buffersize, int):
        raise TypeError(
            f"buffersize must be an integer or None, got {type(buffersize).__name__}"
        )
    if buffersize < 1:
        raise ValueError(f"buffersize must be None or > 0, got {buffersize}")


def bounded_map(
    executor: E,
    submit: Callable[[E, tuple[Any, ...]], Future[T]],
    iterables: tuple[Iterable[Any], ...],
    timeout: float | None,
    buffersize: int | None,
) -> Iterator[T]:
    """Submit ``submit(executor, args)`` for each tuple of ``zip(*iterables)``,
    at most ``buffersize`` ahead of the consumer, and return the iterator of their
    results (see the module's docstring).

    Raises:
        TypeError, ValueError: a bad ``buffersize`` (:func:`check_buffersize`).
        Exception: whatever the first ``submit`` calls raise.
    """
    check_buffersize(buffersize)
    end = None if timeout is None else time.monotonic() + timeout
    arguments = zip(*iterables, strict=False)  # as map(): the shortest ends it
    futures: deque[Future[T]] = deque(
        submit(executor, args) for args in islice(arguments, buffersize)
    )
    if buffersize is None:  # every call submitted: nothing to hold the executor for
        return _results(futures, None, submit, arguments, end)
    return _results(futures, weakref.ref(executor), submit, arguments, end)


def _results(
    futures: deque[Future[T]],
    executor: weakref.ref[Any] | None,
    submit: Callable[[Any, tuple[Any, ...]], Future[T]],
    arguments: Iterator[tuple[Any, ...]],
    end: float | None,
) -> Iterator[T]:
    """The results of ``futures`` in order, submitting one more call of
    ``arguments`` before each wait while ``executor`` (a weak reference; ``None``:
    none to submit) is alive."""
    try:
        while futures:
            if executor is not None:
                owner = executor()
                args = next(arguments, None) if owner is not None else None
                if args is not None:
                    futures.append(submit(owner, args))
                del owner
            future = futures.popleft()
            try:
                result = future.result(None if end is None else end - time.monotonic())
            finally:
                future.cancel()  # if it is not done: the timeout is up
                del future  # held by no one while its result is out
            yield result
    finally:
        for future in futures:
            future.cancel()
