"""The combinators about time and cancellation: f_timeout and f_nocancel."""

from __future__ import annotations

import logging
import math
from concurrent.futures import Future
from functools import partial
from typing import Any, TypeVar

from ..errors import TimeoutCancelledError
from ..logging import ContainedLogger, trace
from ..proxy import ProxyFuture
from ..scheduler import call_later
from ..wrapper import check_non_negative
from .checks import (
    _check_future,
)

# Timeouts are logged under the package's name, as they were before the split.
logger = ContainedLogger(logging.getLogger("fluent_executors.futures"))

T = TypeVar("T")
A = TypeVar("A")


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
    trace(
        logger,
        "f_timeout: future not done after %s s; %s",
        seconds,
        "cancelled" if cancelled else "cancel refused, left to finish",
    )
