"""The adaptive rate of a rate limit (``adaptive=True``): additive increase,
multiplicative decrease, as TCP does. Shared by
:class:`~fluent_executors.RateLimitExecutor` and the async ``with_rate_limit``.

Contract: :class:`AdaptiveRate` keeps the state (the rate, the calls allowed per
window, the cuts, the pause) and reads no clock: it is told the time. Its owner
calls :meth:`AdaptiveRate.classify` (the user's ``too_many`` and the delay hint)
outside any lock, then :meth:`AdaptiveRate.succeeded` or :meth:`AdaptiveRate.cut`
under its own lock (the threaded side) or on its event loop (the async side).
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Callable
from typing import TYPE_CHECKING

from .hints import DelayHint, retry_after
from .logging import Once
from .wrapper import check_callable, check_non_negative

if TYPE_CHECKING:
    from .logging import ContainedLogger

__all__ = ["AdaptiveRate", "AdaptiveSettings", "check_adaptive", "too_many"]

# The statuses of an HTTP answer that say "too many requests": 429, and 503 (which
# services send with a Retry-After when overloaded).
_TOO_MANY_STATUSES = frozenset({429, 503})


def too_many(error: BaseException) -> bool:
    """The default ``too_many`` predicate: ``error`` carries an HTTP status 429 or
    503 (on its ``response``, as ``status_code`` or ``status``, or on itself, as
    ``status_code``, ``status`` or ``code``), or a ``Retry-After`` hint."""
    response = getattr(error, "response", None)
    for holder, names in (
        (response, ("status_code", "status")),
        (error, ("status_code", "status", "code")),
    ):
        if holder is None:
            continue
        for name in names:
            status = getattr(holder, name, None)
            if isinstance(status, int) and status in _TOO_MANY_STATUSES:
                return True
    try:
        return retry_after(error) is not None
    except (TypeError, ValueError):  # a hint, though not a readable one
        return True


class AdaptiveSettings:
    """The settings of an adaptive rate (checked: :func:`check_adaptive`)."""

    __slots__ = ("decrease_factor", "increase", "max_pause", "too_many")

    def __init__(
        self,
        too_many: Callable[[BaseException], object],
        decrease_factor: float,
        increase: float,
        max_pause: float,
    ) -> None:
        self.too_many = too_many
        self.decrease_factor = decrease_factor
        self.increase = increase
        self.max_pause = max_pause


def check_adaptive(
    adaptive: object,
    too_many_fn: object,
    decrease_factor: object,
    increase: object,
    max_pause: object,
) -> AdaptiveSettings | None:
    """The adaptive settings, checked (``None`` without ``adaptive``); raise naming
    the bad argument (the arguments of ``with_rate_limit``)."""
    if not isinstance(adaptive, bool):
        raise TypeError(f"adaptive must be a bool, got {type(adaptive).__name__}")
    if too_many_fn is not None:
        check_callable("too_many", too_many_fn)
    if not isinstance(decrease_factor, numbers.Real) or isinstance(
        decrease_factor, bool
    ):
        raise TypeError(
            "decrease_factor must be a real number, got "
            f"{type(decrease_factor).__name__}"
        )
    try:
        factor = float(decrease_factor)
    except (OverflowError, ValueError):  # an int beyond a float, a signaling NaN
        factor = math.nan
    if not 0 < factor < 1:  # also refuses NaN
        raise ValueError(
            f"decrease_factor must be between 0 and 1 excluded, got {decrease_factor!r}"
        )
    checked = AdaptiveSettings(
        too_many_fn or too_many,  # type: ignore[arg-type]
        factor,
        check_non_negative("increase", increase, finite=True),
        check_non_negative("max_pause", max_pause, finite=True),
    )
    return checked if adaptive else None


class AdaptiveRate:
    """The rate of one rate limit, adapted to the outcomes it is told of.

    Args:
        max_calls: the most calls per period, and the starting rate.
        period: the window, in seconds.
        settings: the adaptive settings (``None``: the rate stays
            ``max_calls``).
        owner: what it belongs to (``"rate limit executor 'api'"``), for the
            log messages.
        logger: where to log a cut, and a ``too_many`` that raises.
    """

    def __init__(
        self,
        max_calls: int,
        period: float,
        settings: AdaptiveSettings | None,
        owner: str,
        logger: ContainedLogger,
    ) -> None:
        self.max_calls = max_calls
        self.period = period
        self.settings = settings
        self._owner = owner
        self._logger = logger
        self._hint = DelayHint(retry_after, owner)
        self._too_many_failed = Once()  # warned about: later at DEBUG
        self.reset()

    def reset(self) -> None:
        """Start again at ``max_calls`` (the times kept are of another clock)."""
        self.rate = float(self.max_calls)  # calls allowed per period now
        self.limit = self.max_calls  # int(rate), at least 1
        self.cuts = 0
        self.last_cut = -math.inf  # when the rate was last cut
        self.paused_until = -math.inf  # no call before then

    def classify(self, error: BaseException) -> tuple[bool, float | None]:
        """Whether ``error`` says "too many requests" (``too_many``, contained:
        one that raises is read as ``False``), and the pause its hint asks for
        (seconds, at most ``max_pause``; ``None``: none). Calls user code: hold
        no lock."""
        settings = self.settings
        assert settings is not None
        try:
            too = bool(settings.too_many(error))
        except BaseException:  # a user's callable: contained
            level = logging.WARNING if self._too_many_failed.first() else logging.DEBUG
            self._logger.log(
                level,
                "too_many predicate %r of %s raised; read as False (warned once)",
                settings.too_many,
                self._owner,
                exc_info=True,
            )
            return False, None
        if not too:
            return False, None
        pause = self._hint(error)
        return True, None if pause is None else min(pause, settings.max_pause)

    def succeeded(self) -> bool:
        """A call succeeded: raise the rate by ``increase / rate``; return whether
        that raised the calls allowed per window."""
        settings = self.settings
        assert settings is not None
        rate = self.rate
        self.rate = min(rate + settings.increase / rate, self.max_calls)
        return self._set_limit()

    def cut(self, now: float, pause: float | None) -> bool:
        """A call failed with "too many" at ``now``: cut the rate (at most once per
        period: the failures of one burst count as one) and pause for ``pause``
        seconds (``None``: no pause). Return whether it cut: then the owner calls
        :meth:`report_cut` (outside its lock)."""
        settings = self.settings
        assert settings is not None
        cut = now >= self.last_cut + self.period
        if cut:
            self.last_cut = now
            self.cuts += 1
            self.rate = max(self.rate * settings.decrease_factor, 1.0)
            self._set_limit()
        if pause is not None:
            self.paused_until = max(self.paused_until, now + pause)
        return cut

    def report_cut(self, rate: float, pause: float | None) -> None:
        """Log a cut to ``rate``, with its ``pause``."""
        self._logger.info(
            "%s: too many requests; %.3g calls per %s s now%s",
            self._owner,
            rate,
            self.period,
            "" if pause is None else f", paused for {pause:.3g} s",
        )

    def _set_limit(self) -> bool:
        """Set the calls allowed per window from the rate; return whether that
        raised it."""
        limit = max(int(self.rate), 1)
        raised = limit > self.limit
        self.limit = limit
        return raised
