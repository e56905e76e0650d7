"""RateLimitExecutor: at most ``max_calls`` submissions to the delegate per period,
or, ``adaptive``, fewer while the service answers "too many"."""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from _fluent_executors import clock as _clock
from _fluent_executors import scheduler as _scheduler
from _fluent_executors.adaptive import AdaptiveRate, check_adaptive
from _fluent_executors.fluent import Delegate, R
from _fluent_executors.proxy import outcome
from _fluent_executors.queueing import QueueingExecutor
from _fluent_executors.wrapper import check_rate

if TYPE_CHECKING:
    from _fluent_executors.stats import RateLimitStats

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

    With ``adaptive=True`` the limit follows what the service says (additive
    increase, multiplicative decrease, as TCP does): a future that fails with an
    exception that ``too_many`` classifies as "too many requests" (by default an
    HTTP status 429 or 503, or a ``Retry-After`` hint: see
    :func:`~fluent_executors.retry_after`) cuts the current rate, the calls
    allowed per period, to ``decrease_factor`` times itself (at most once per
    period: the failures of one burst count as one), and, if the exception
    carries a ``Retry-After`` hint, nothing is passed on until the hint's delay
    (at most ``max_pause`` seconds) has passed. Each future that succeeds raises
    the rate by ``increase / rate``, so that a period's worth of successes adds
    ``increase`` calls per period, back up to ``max_calls``. At most
    ``int(rate)`` calls, and at least 1, begin in any window of ``period``
    seconds. :meth:`stats` shows the current rate and the number of cuts. The
    futures that failed are not retried here: chain a retry executor outside
    this one (``.with_rate_limit(...).with_retry(...)``), whose attempts then
    pass the limit too.

    Args:
        delegate: the executor that runs the submitted callables.
        max_calls: the most callables passed on in any window of ``period``
            seconds; at least 1.
        period: the length of the window, in seconds; positive and finite.
        logger: where to log; default
            ``logging.getLogger("fluent_executors.rate_limit")``.
        name: the executor's name, used in log messages.
        adaptive: keyword-only; adapt the rate to the "too many" failures (see
            above). Default ``False``: ``max_calls`` always.

            .. versionadded:: 0.2.0
        too_many: keyword-only, with ``adaptive``; ``too_many(exception) ->
            bool``, whether a failure means "too many requests". One that raises
            is logged (at ``WARNING`` the first time) and read as ``False``.
            Default: a 429 or 503 status, or a ``Retry-After`` hint.

            .. versionadded:: 0.2.0
        decrease_factor: keyword-only, with ``adaptive``; the factor, between 0
            and 1 (both excluded), that a cut multiplies the rate by. Default 0.5.

            .. versionadded:: 0.2.0
        increase: keyword-only, with ``adaptive``; the calls per period that a
            period's worth of successes adds to the rate (``float`` >= 0;
            0 never raises it again). Default 1.0.

            .. versionadded:: 0.2.0
        max_pause: keyword-only, with ``adaptive``; the longest pause, in
            seconds, that a ``Retry-After`` hint makes (``float`` >= 0). Default
            300.0.

            .. versionadded:: 0.2.0

    Raises:
        TypeError: ``delegate`` has no ``submit`` method; ``max_calls`` is not an
            ``int``; ``period``, ``decrease_factor``, ``increase`` or
            ``max_pause`` is not a real number; ``name`` is not a ``str``;
            ``adaptive`` is not a ``bool``; ``too_many`` is not callable.
        ValueError: ``max_calls`` is less than 1; ``period`` is not positive, or is
            infinite or NaN; ``decrease_factor`` is not between 0 and 1;
            ``increase`` or ``max_pause`` is negative, infinite or NaN.
    """

    def __init__(
        self,
        delegate: Delegate[R],
        max_calls: int,
        period: float = 1.0,
        logger: logging.Logger | None = None,
        name: str = "default",
        *,
        adaptive: bool = False,
        too_many: Callable[[BaseException], object] | None = None,
        decrease_factor: float = 0.5,
        increase: float = 1.0,
        max_pause: float = 300.0,
    ) -> None:
        super().__init__(delegate, block=False, logger=logger, name=name)
        seconds = check_rate(max_calls, period)
        self._max_calls = max_calls
        self._period = seconds
        self._calls: deque[_Call] = deque()  # the calls of the window, oldest first
        self._timer: _scheduler.TimerHandle | None = None
        self._rate = AdaptiveRate(
            max_calls,
            seconds,
            check_adaptive(adaptive, too_many, decrease_factor, increase, max_pause),
            f"rate limit executor {name!r}",
            self._logger,
        )
        self._open_metrics("rate_limit")

    def _wrapper_fields(self) -> dict[str, object]:
        fields: dict[str, object] = {"max_calls": self.max_calls, "period": self.period}
        if self._rate.settings is not None:
            fields["adaptive"] = True
        return fields

    def stats(self) -> RateLimitStats:
        """What this executor has done with the futures its ``submit`` returned, and
        is doing now (see :meth:`FluentExecutor.stats
        <fluent_executors.FluentExecutor.stats>`; *pending* are the callables in
        its queue, *running* those passed on to the delegate and not done), and
        its current rate.

        Returns:
            A :class:`~fluent_executors.RateLimitStats`.

        .. versionadded:: 0.2.0
        """
        # On first use: see _fluent_executors.stats.
        from _fluent_executors.stats import RateLimitStats

        fields, rate = self._counts.fields(), self._rate
        return RateLimitStats(
            **fields,
            queued=fields["pending"],
            rate=rate.rate,
            cuts=rate.cuts,
            paused=_clock.monotonic() < rate.paused_until,
        )

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
        limit, paused_until = self._rate.limit, self._rate.paused_until
        if prepared < paused_until:  # a Retry-After pause
            due = paused_until
        elif len(calls) < limit:
            call = _Call()
            calls.append(call)
            return call
        else:
            # Wake up when enough calls have left the window for one more (the
            # oldest, unless adaptive cut the limit). While that call is in
            # progress its time is unknown; the thread making it pumps again
            # once it is known.
            due = calls[len(calls) - limit].time + self._period
        # A timer that is due already is running, or about to; it may find the
        # window still full (after another thread took the place), so a new one
        # is needed then, and an extra wake-up is harmless.
        # A timer due later than this (set before an adaptive rate grew) is
        # replaced: the place frees up sooner.
        timer = self._timer
        if due < math.inf and (
            timer is None or timer.when <= prepared or timer.when > due
        ):
            if timer is not None and timer.when > due:
                timer.cancel()
            self._timer = _scheduler.call_at(due, self._pump, may_block=True)
        return None

    def _dispatched(self, token: _Call, upstream: Future[Any] | None) -> None:
        if upstream is None:  # the delegate refused it: the call leaves the window
            with self._lock:
                self._calls.remove(token)
            return
        token.time = _clock.monotonic()
        if self._rate.settings is not None:
            upstream.add_done_callback(self._on_outcome)

    def _on_outcome(self, upstream: Future[Any]) -> None:
        """Adapt the rate to the outcome of a call passed on (``adaptive``)."""
        cancelled, error, _ = outcome(upstream)
        if cancelled:
            return
        rate = self._rate
        if error is None:
            with self._lock:
                raised = rate.succeeded()
            if raised:
                self._pump()
            return
        too_many, pause = rate.classify(error)
        if not too_many:
            return
        with self._lock:
            cut = rate.cut(_clock.monotonic(), pause)
            now_rate = rate.rate
        if cut:  # logged once per period at most, as it is cut
            rate.report_cut(now_rate, pause)

    def _after_unqueue(self) -> tuple[bool, bool] | None:
        # Nothing left to wait for: let the scheduler thread end if it can.
        if not self._queue and self._timer is not None:
            self._timer.cancel()
            self._timer = None
        return super()._after_unqueue()
