"""The clock that every timed wait of the library reads.

Contract: the scheduler, the poll threads, the rate limit and the retry deadlines
read the time with :func:`monotonic` and wait for a deadline with :func:`wait`,
always through this module (``from . import clock``, ``clock.monotonic()``; in a
public module, ``from _fluent_executors import clock as _clock``), so that one
clock serves them all and can be replaced in one place. Times are seconds
on one monotonic clock; a delay may be any number of seconds, ``math.inf``
included: a wait longer than the platform can wait (:data:`threading.TIMEOUT_MAX`)
waits that long and lets the caller look again, so a far deadline means "not
before then" and never raises in an internal thread.

:func:`fluent_executors.testing.virtual_time` replaces both functions (module
attributes, so that the real path stays one plain function call) while it is
installed; once it is removed, the real clock resumes from the virtual time reached
(shifted by a constant offset), so the clock never goes back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["monotonic", "wait"]

_offset = 0.0  # seconds by which virtual clocks moved the time forward, in total


# The time, in seconds, on the clock of every deadline of the library: the C
# function itself, with no Python call around it (it is read per future).
_real_monotonic: Callable[[], float] = time.monotonic


def _shifted_monotonic() -> float:
    """:func:`time.monotonic` moved forward by what virtual clocks added."""
    return time.monotonic() + _offset


def _real_wait(condition: threading.Condition, timeout: float | None) -> bool:
    """Wait on ``condition`` (whose lock the caller holds) for a notify, or until
    ``timeout`` seconds have passed; ``None`` waits for a notify alone.

    A ``timeout`` beyond :data:`threading.TIMEOUT_MAX` (``math.inf`` among them) is
    cut to it: the caller wakes then, finds its deadline not reached, and waits
    again. Returns ``False`` if the wait timed out.
    """
    if timeout is not None and timeout > threading.TIMEOUT_MAX:
        timeout = threading.TIMEOUT_MAX
    return condition.wait(timeout)


monotonic: Callable[[], float] = _real_monotonic
wait: Callable[[threading.Condition, float | None], bool] = _real_wait


def _install(
    new_monotonic: Callable[[], float],
    new_wait: Callable[[threading.Condition, float | None], bool],
) -> None:
    """Put the library on another clock (for :mod:`fluent_executors.testing`)."""
    global monotonic, wait
    monotonic = new_monotonic
    wait = new_wait


def _restore(virtual_now: float) -> None:
    """Back to the real clock, which resumes at ``virtual_now`` (never earlier)."""
    global _offset, monotonic, wait
    _offset = max(_offset, virtual_now - time.monotonic())
    monotonic = _shifted_monotonic if _offset else _real_monotonic
    wait = _real_wait
