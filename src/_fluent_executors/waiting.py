"""``as_completed`` and ``wait``: the standard functions, with an inactivity timeout.

The standard :func:`concurrent.futures.as_completed` and :func:`concurrent.futures.wait`
take one ``timeout`` for the whole call. A batch of remote tasks that keeps finishing,
slowly, is healthy however long it takes; one where nothing has finished for ten
minutes is stuck. ``idle_timeout`` says that: seconds without any future finishing.

Both work with any :class:`~concurrent.futures.Future` (the standard library's, the
library's, another library's subclass): each future gets a done callback that
records it as it finishes. A callback cannot be removed, so a future that finishes
after the caller stopped waiting (a generator of :func:`as_completed` abandoned,
or a timeout) still runs it: it appends the future to a list that nobody reads
any more, which is freed with the futures. Times are on the library's clock
(``fluent_executors.testing.virtual_time`` applies).
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import (
    ALL_COMPLETED,
    FIRST_COMPLETED,
    FIRST_EXCEPTION,
    Future,
)
from concurrent.futures import TimeoutError as FuturesTimeoutError
from typing import Generic, TypeVar

from . import clock
from .public import publish
from .stdlib_compat import DoneAndNotDoneFutures
from .wrapper import check_non_negative

__all__ = ["as_completed", "wait"]

T = TypeVar("T")

_RETURN_WHEN = (FIRST_COMPLETED, FIRST_EXCEPTION, ALL_COMPLETED)


class _Finishing(Generic[T]):
    """The futures given to it, in the order they finish, and when the last did."""

    __slots__ = ("_cond", "_finished", "last")

    def __init__(self, futures: Iterable[Future[T]]) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._finished: deque[Future[T]] = deque()
        self.last = clock.monotonic()
        """The library's time at which the last future finished, or at which
        waiting started if none has."""
        for future in futures:
            future.add_done_callback(self._finish)

    def _finish(self, future: Future[T]) -> None:
        with self._cond:
            self._finished.append(future)
            self.last = clock.monotonic()
            self._cond.notify()

    def take(
        self, end: float, idle_timeout: float
    ) -> tuple[list[Future[T]], str | None]:
        """Wait until a future has finished; return those finished since the last
        call, or ``[]`` and why waiting stopped: ``end`` (the library's time) was
        reached, or ``idle_timeout`` seconds passed with none finishing."""
        with self._cond:
            while not self._finished:
                now = clock.monotonic()
                if now >= end:
                    return [], "timeout"
                idle_end = self.last + idle_timeout
                if now >= idle_end:
                    return [], "idle"
                clock.wait(self._cond, min(end, idle_end) - now)
            finished = list(self._finished)
            self._finished.clear()
            return finished, None


def _seconds(argument: str, value: float | None, *, negative: bool) -> float:
    """``value`` as a float, ``math.inf`` for ``None``; a ``timeout`` may be
    negative (already passed), as for the standard functions."""
    if value is None:
        return math.inf
    if negative and isinstance(value, (int, float)) and value < 0:
        return float(value)
    return check_non_negative(argument, value)


def _unfinished(pending: int, total: int, why: str, timeout: float | None) -> str:
    message = f"{pending} (of {total}) futures unfinished"
    if why == "idle":
        message += f" after {timeout} s with none finishing"
    return message


def as_completed(
    fs: Iterable[Future[T]],
    timeout: float | None = None,
    *,
    idle_timeout: float | None = None,
) -> Iterator[Future[T]]:
    """Yield the futures of ``fs`` as they finish (are resolved or cancelled): a
    drop-in for :func:`concurrent.futures.as_completed` that can also give up once
    none has finished for ``idle_timeout`` seconds.

    Futures already done are yielded first; a future given twice is yielded once.
    The times start at the first ``next()`` on the iterator, as for the standard
    function.

    Args:
        fs: the futures (any :class:`~concurrent.futures.Future`, of type
            ``Future[T]``).
        timeout: seconds for the whole iteration; ``None`` for no limit. A
            negative one has passed already.
        idle_timeout: seconds without any future finishing (counted from the
            start, then from the last one that finished); ``None`` for no limit.
            Keyword-only.

    Yields:
        Each ``Future[T]`` of ``fs``, once, as it finishes.

    Raises:
        TimeoutError: :class:`concurrent.futures.TimeoutError` (the builtin
            :class:`TimeoutError` from Python 3.11), from ``next()``, when
            ``timeout`` has passed or no future has finished for
            ``idle_timeout`` seconds; its message says how many futures were
            still pending, of how many.
        TypeError: ``timeout`` or ``idle_timeout`` is not a number (at the first
            ``next()``).
        ValueError: ``idle_timeout`` is negative or NaN, or ``timeout`` NaN.

    .. versionadded:: 0.2.0
    """
    futures = set(fs)
    total = len(futures)
    end = clock.monotonic() + _seconds("timeout", timeout, negative=True)
    idle = _seconds("idle_timeout", idle_timeout, negative=False)
    finishing: _Finishing[T] = _Finishing(futures)
    pending = total
    while pending:
        finished, why = finishing.take(end, idle)
        if why is not None:
            limit = idle_timeout if why == "idle" else timeout
            raise FuturesTimeoutError(_unfinished(pending, total, why, limit))
        pending -= len(finished)
        yield from finished


def wait(
    fs: Iterable[Future[T]],
    timeout: float | None = None,
    return_when: str = ALL_COMPLETED,
    *,
    idle_timeout: float | None = None,
) -> DoneAndNotDoneFutures[T]:
    """Wait for the futures of ``fs`` as :func:`concurrent.futures.wait` does, and
    also stop once none has finished for ``idle_timeout`` seconds.

    Args:
        fs: the futures (any :class:`~concurrent.futures.Future`, of type
            ``Future[T]``).
        timeout: seconds to wait at the most; ``None`` for no limit.
        return_when: when to return: :data:`~concurrent.futures.FIRST_COMPLETED`,
            :data:`~concurrent.futures.FIRST_EXCEPTION` or
            :data:`~concurrent.futures.ALL_COMPLETED` (the default).
        idle_timeout: seconds without any future finishing (counted from the
            call, then from the last one that finished); ``None`` for no limit.
            Keyword-only.

    Returns:
        A named tuple ``(done, not_done)`` of sets of ``Future[T]``, as the
        standard function's: on a timeout or an idle timeout, ``not_done`` holds
        the futures still pending; nothing is raised.

    Raises:
        TypeError: ``timeout`` or ``idle_timeout`` is not a number.
        ValueError: ``return_when`` is not one of the three constants,
            ``idle_timeout`` is negative or NaN, or ``timeout`` NaN.

    .. versionadded:: 0.2.0
    """
    if return_when not in _RETURN_WHEN:
        raise ValueError(
            f"return_when must be FIRST_COMPLETED, FIRST_EXCEPTION or "
            f"ALL_COMPLETED, got {return_when!r}"
        )
    futures = set(fs)
    end = clock.monotonic() + _seconds("timeout", timeout, negative=True)
    idle = _seconds("idle_timeout", idle_timeout, negative=False)
    done = {future for future in futures if future.done()}
    finishing: _Finishing[T] = _Finishing(futures - done)
    finished: list[Future[T]] = list(done)
    while len(done) < len(futures) and not _returns(finished, return_when):
        finished, why = finishing.take(end, idle)
        if why is not None:
            break
        done.update(finished)
    return DoneAndNotDoneFutures(done, futures - done)


def _returns(finished: list[Future[T]], return_when: str) -> bool:
    """Whether ``wait`` returns, with ``return_when``, once ``finished`` have
    (ALL_COMPLETED: the caller counts)."""
    if return_when == FIRST_COMPLETED:
        return bool(finished)
    if return_when == FIRST_EXCEPTION:
        return any(not f.cancelled() and f.exception() is not None for f in finished)
    return False


publish("fluent_executors", as_completed, wait)
