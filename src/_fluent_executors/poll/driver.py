"""What the poll drivers, the thread (``thread.PollThread``) and the async one
(``fluent_executors.aio``), keep alike: a poll executor's settings (its functions,
name and logger) and counts, the core made of its settings with the lock that
guards it, and what they do alike (:class:`DriverBase`)."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from ..counts import event_count
from .reports import warn_bad_delay

if TYPE_CHECKING:
    from ..counts import Counts
    from .core import PollCore
    from .descriptor import PollDescriptor
    from .settings import PollSettings

__all__ = ["DriverBase"]


class DriverBase:
    """The base of a poll driver.

    Args:
        settings: the executor's checked settings: its poll and cancel functions,
            its name and logger, its ``poll_timeout`` and those of its core.
        counts: the executor's counts (``stats()`` and metrics); the driver
            counts the calls of the poll function itself.
    """

    def __init__(self, settings: PollSettings, counts: Counts) -> None:
        self.poll_fn = settings.poll_fn
        self.cancel_fn = settings.cancel_fn
        self.name = settings.name
        self._poll_timeout = settings.poll_timeout
        self._logger = settings.logger
        self._counts = counts
        # The calls of the poll function, those that raised, those that overran
        self._polls, self._poll_errors = event_count(), event_count()
        self._poll_timeouts = event_count()
        self.core: PollCore[PollDescriptor[Any]] = settings.core(self._descriptors)
        # Guards the core's bookkeeping. Re-entrant: a poll executor's finalizer
        # closes its poll thread (notify() takes this lock), and the garbage
        # collector may run it in any thread, one inside this lock among them.
        self._lock = threading.RLock()
        self._warned_bad_delay = False

    def _descriptors(self) -> list[PollDescriptor[Any]]:
        """The descriptors of the futures outstanding, from which the core makes
        its list anew (under the lock)."""
        raise NotImplementedError

    def polls_of(self, entry: PollDescriptor[Any]) -> int:
        """Calls of the poll function ``entry`` was passed to."""
        with self._lock:  # forget() may move the rounds into its own count
            return self.core.polls_of(entry)

    def poll_counts(self) -> dict[str, Any]:
        """The fields of :class:`~fluent_executors.PollStats` that count calls of
        the poll function: ``polls``, ``poll_errors``, ``poll_timeouts``."""
        return {
            "polls": self._polls.value,
            "poll_errors": self._poll_errors.value,
            "poll_timeouts": self._poll_timeouts.value,
        }

    def _poll_called(self, start: float, error: bool) -> None:
        """The poll function was called once, from ``start`` (``perf_counter()``,
        read only while metrics are on) until now, and raised if ``error``."""
        self._polls.add()
        if error:
            self._poll_errors.add()
        metrics = self._counts.metrics
        if metrics is not None:
            metrics.poll(time.perf_counter() - start, error)

    def _poll_overran(self) -> None:
        """A call of the poll function has run longer than its ``poll_timeout``."""
        self._poll_timeouts.add()
        metrics = self._counts.metrics
        if metrics is not None:
            metrics.poll_timeout()

    def _returned(self, batch: list[PollDescriptor[Any]], returned: object) -> None:
        """Tell the core what the poll function returned for ``batch``; warn once
        of a delay that is not a number."""
        core = self.core
        if not core.returned(batch, returned) and not self._warned_bad_delay:
            self._warned_bad_delay = True
            warn_bad_delay(self._logger, self.name, returned, core.default_interval)
