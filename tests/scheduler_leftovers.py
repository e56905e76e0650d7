"""What a test that counts threads says when it fails: the scheduler's callbacks
still pending, each with its due time and function. A far timer left by an earlier
test in the same process keeps the scheduler thread alive, and starts a worker when
it comes due: the suspect when a thread count fails once and never again."""

from __future__ import annotations

from _fluent_executors import clock, scheduler


def pending_callbacks() -> list[str]:
    """Each callback the scheduler holds, not cancelled: ``in 59.981 s: <fn>``."""
    state = scheduler._scheduler
    now = clock.monotonic()
    with state._lock:
        entries = [(when, handle._fn) for when, _, handle in state._heap]
    return sorted(
        f"in {when - now:.3f} s: {fn!r}" for when, fn in entries if fn is not None
    )
