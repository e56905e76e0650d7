"""RateLimitExecutor: at most ``max_calls`` submissions to the delegate per period."""

from __future__ import annotations

import logging
import math
from collections import deque
from concurrent.futures import Executor, Future
from typing import Any, overload

from . import _clock, _scheduler
from ._fluent import FluentExecutor, R, SameResult
from ._queueing import QueueingExecutor
from ._wrapper import check_non_negative

__all__ = ["RateLimitExecutor"]


class _Call:
    """One call of the delegate's ``submit`` within the current window."""

    __slots__ = ("time",)

    def __init__(self) -> None:
        # When submit() returned (_clock.monotonic()); infinite while it runs, so that
        # a call in progress counts for the whole of the next period.
        self.time = math.inf


class RateLimitExecutor(QueueingExecutor[float, _Call, R]):
    """An executor that passes at most ``max_calls`` callables to its delegate in
    any window of ``period`` seconds.

    For clients of rate-limited services (HTTP APIs that allow so many requests per
    second or per minute): a callable submitted while the limit is reached waits in
    a queue, served in submit order, until the oldest call of the window is
    ``period`` seconds old. Waiting callables hold no thread: the one shared
    scheduler thread of the library (``fluent-executors-scheduler``) has them passed
    on when their turn comes, by one of its worker threads
    (``fluent-executors-scheduler-worker``), and ends when nothing is waiting. A
    delegate whose ``submit`` blocks thus holds up no other timer.

    The limit is a sliding window on the times at which the delegate's ``submit``
    returned: any ``period`` seconds see at most ``max_calls`` calls begin. It
    limits how often work *starts*, not how much runs at once; chain a
    :class:`~fluent_executors.ThrottleExecutor` for that.

    Cancelling a queued future removes it from the queue at once (in O(1)) and
    returns ``True``; cancelling one passed on cancels the delegate's future. If the
    delegate's ``submit`` raises when a callable is passed on, or returns something
    that is not a :class:`~concurrent.futures.Future` (``TypeError``), that
    callable's future fails with the error, a warning is logged, and the call
    leaves the window (it was refused: the next one may go).

    Args:
        delegate: the executor that runs the submitted callables.
        max_calls: the most callables passed on in any window of ``period``
            seconds; at least 1.
        period: the length of the window, in seconds; positive and finite.
        logger: where to log; default
            ``logging.getLogger("fluent_executors.rate_limit")``.
        name: the executor's name, used in log messages.

    Raises:
        TypeError: ``delegate`` has no ``submit`` method; ``max_calls`` is not an
            ``int``; ``period`` is not a real number; ``name`` is not a ``str``.
        ValueError: ``max_calls`` is less than 1; ``period`` is not positive, or is
            infinite or NaN.

    Type parameters:
        R: the delegate's result type (see :ref:`guide-result-types`).
    """

    @overload
    def __init__(
        self,
        delegate: FluentExecutor[R],
        max_calls: int,
        period: float = 1.0,
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None: ...

    @overload
    def __init__(
        self: RateLimitExecutor[SameResult],
        delegate: Executor,
        max_calls: int,
        period: float = 1.0,
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None: ...

    def __init__(
        self,
        delegate: Executor,
        max_calls: int,
        period: float = 1.0,
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None:
        super().__init__(delegate, block=False, logger=logger, name=name)
        if not isinstance(max_calls, int) or isinstance(max_calls, bool):
            raise TypeError(f"max_calls must be an int, got {type(max_calls).__name__}")
        if max_calls < 1:
            raise ValueError(f"max_calls must be at least 1, got {max_calls}")
        seconds = check_non_negative("period", period, finite=True)
        if seconds == 0:
            raise ValueError(f"period must be > 0 seconds, got {period!r}")
        self._max_calls = max_calls
        self._period = seconds
        self._calls: deque[_Call] = deque()  # the calls of the window, oldest first
        self._timer: _scheduler.TimerHandle | None = None
        self._open_metrics("rate_limit")

    def _wrapper_fields(self) -> dict[str, object]:
        return {"max_calls": self.max_calls, "period": self.period}

    @property
    def max_calls(self) -> int:
        """The most callables passed on in any window of :attr:`period` (``int``)."""
        return self._max_calls

    @property
    def period(self) -> float:
        """The length of the window, in seconds (``float``)."""
        return self._period

    def _prepare(self) -> float:
        return _clock.monotonic()

    def _admit(self, prepared: float) -> _Call | None:
        calls = self._calls
        while calls and calls[0].time + self._period <= prepared:
            calls.popleft()
        if len(calls) < self._max_calls:
            call = _Call()
            calls.append(call)
            return call
        # Wake up when the oldest call leaves the window. While it is in progress
        # its time is unknown; the thread making it pumps again once it is known.
        # A timer that is due already is running, or about to; it may find the
        # window still full (after another thread took the place), so a new one
        # is needed then, and an extra wake-up is harmless.
        due = calls[0].time + self._period
        timer = self._timer
        if due < math.inf and (timer is None or timer.when <= prepared):
            self._timer = _scheduler.call_at(due, self._pump, may_block=True)
        return None

    def _dispatched(self, token: _Call, upstream: Future[Any] | None) -> None:
        if upstream is None:  # the delegate refused it: the call leaves the window
            with self._lock:
                self._calls.remove(token)
            return
        token.time = _clock.monotonic()

    def _after_unqueue(self) -> tuple[bool, bool] | None:
        # Nothing left to wait for: let the scheduler thread end if it can.
        if not self._queue and self._timer is not None:
            self._timer.cancel()
            self._timer = None
        return super()._after_unqueue()
