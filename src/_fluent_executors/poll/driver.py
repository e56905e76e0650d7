"""What the poll drivers, the thread (``thread.PollThread``) and the async one
(``fluent_executors.aio``), keep alike: a poll executor's settings (its functions,
name and logger) and counts, the core made of its settings with the lock that
guards it, and what they do alike (:class:`DriverBase`)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

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
        counts: the executor's counts (``stats()`` and metrics).
    """

    def __init__(self, settings: PollSettings, counts: Counts) -> None:
        self.poll_fn = settings.poll_fn
        self.cancel_fn = settings.cancel_fn
        self.name = settings.name
        self._poll_timeout = settings.poll_timeout
        self._logger = settings.logger
        self._counts = counts
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

    def _check_delay(self, understood: bool, returned: object) -> None:
        """After ``core.returned(batch, returned)`` answered ``understood``: warn
        once of a delay that is not a number. (The driver calls ``core.returned``
        itself, from the frame that called ``core.lending``: a frame more holding
        the batch would count as the poll function keeping the round's list, and
        the core would copy it each round.)"""
        if not understood and not self._warned_bad_delay:
            self._warned_bad_delay = True
            warn_bad_delay(
                self._logger, self.name, returned, self.core.default_interval
            )
