"""The clock that every timed wait of the library reads.

Contract: the scheduler, the poll threads, the rate limit and the retry deadlines
read the time with :func:`monotonic` and wait for a deadline with :func:`wait`,
always through this module (``from . import _clock``; ``_clock.monotonic()``), so
that one clock serves them all and can be replaced in one place. Times are seconds
on one monotonic clock; a delay may be any number of seconds, ``math.inf``
included: a wait longer than the platform can wait (:data:`threading.TIMEOUT_MAX`)
waits that long and lets the caller look again, so a far deadline means "not
before then" and never raises in an internal thread.
"""

from __future__ import annotations

import threading
import time

__all__ = ["monotonic", "wait"]


def monotonic() -> float:
    """The time, in seconds, on the clock of every deadline of the library."""
    return time.monotonic()


def wait(condition: threading.Condition, timeout: float | None) -> bool:
    """Wait on ``condition`` (whose lock the caller holds) for a notify, or until
    ``timeout`` seconds have passed; ``None`` waits for a notify alone.

    A ``timeout`` beyond :data:`threading.TIMEOUT_MAX` (``math.inf`` among them) is
    cut to it: the caller wakes then, finds its deadline not reached, and waits
    again. Returns ``False`` if the wait timed out.
    """
    if timeout is not None and timeout > threading.TIMEOUT_MAX:
        timeout = threading.TIMEOUT_MAX
    return condition.wait(timeout)
