"""The shared scheduler: one thread that runs short callbacks at given times.

Retry backoff, timeouts and ``f_timeout`` all need "call this in *n* seconds" for
possibly 100,000 futures at once. Rather than a thread per wrapper or per future,
they share one daemon thread, ``fluent-executors-scheduler``, which sleeps until the
earliest deadline of a heap. It is started by the first :func:`call_at` and ends as
soon as no callback is pending, so an idle program has no scheduler thread; a test
that must see it gone can ``join()`` it (find it with :func:`threading.enumerate`).

Contract for callers:

- :func:`call_at` and :func:`call_later` are O(log n) and may be called from any
  thread, from a scheduled callback too; :meth:`TimerHandle.cancel` is O(1)
  (amortised: cancelled entries are dropped lazily, and the heap is compacted once
  they outnumber the pending ones).
- Callbacks take no argument and run one after another in the scheduler thread,
  outside every lock of this module, so they must be short and must not block
  (resolve or cancel a future, submit to an executor that does not block). A
  callback that raises is logged with its traceback; the thread carries on.
- Times are on the :func:`time.monotonic` clock, in seconds.
- A child process made by :func:`os.fork` starts with no pending callback; the
  parent's stay the parent's.

"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import os
import threading
import time
from collections.abc import Callable

__all__ = [
    "THREAD_NAME",
    "TimerHandle",
    "call_at",
    "call_later",
]

logger = logging.getLogger(__name__)

THREAD_NAME = "fluent-executors-scheduler"

# Compact the heap once cancelled entries outnumber pending ones, but not for a few:
# rebuilding costs O(n), so it must wait for O(n) cancels to stay O(1) amortised.
_MIN_COMPACT = 64


class TimerHandle:
    """A callback scheduled by :func:`call_at`; :meth:`cancel` it if it is no longer
    wanted."""

    __slots__ = ("_fn", "when")

    def __init__(self, when: float, fn: Callable[[], object]) -> None:
        self.when = when
        """The :func:`time.monotonic` time at which the callback is due."""
        self._fn: Callable[[], object] | None = fn  # None: cancelled, or taken to run

    def cancel(self) -> bool:
        """Stop the callback from running; safe from any thread, any number of times.

        Returns:
            ``True`` if the callback was pending and now will not run; ``False`` if
            it has already started (or run), or was cancelled before.
        """
        return _scheduler.cancel(self)


class _Scheduler:
    """The heap and the thread; one instance per process."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        # Heap entries are tuples, which compare faster than objects with __lt__;
        # the sequence number keeps callbacks due at the same time in call order.
        self._heap: list[tuple[float, int, TimerHandle]] = []
        self._sequence = itertools.count()
        self._pending = 0  # entries of the heap not cancelled
        self._thread: threading.Thread | None = None

    def call_at(self, when: float, fn: Callable[[], object]) -> TimerHandle:
        if not math.isfinite(when):
            raise ValueError(f"when must be a finite time, got {when!r}")
        handle = TimerHandle(when, fn)
        with self._cond:
            heapq.heappush(self._heap, (when, next(self._sequence), handle))
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=THREAD_NAME, daemon=True
                )
                self._thread.start()
            elif self._heap[0][2] is handle:  # earlier than what the thread waits for
                self._cond.notify()
        return handle

    def cancel(self, handle: TimerHandle) -> bool:
        with self._cond:
            if handle._fn is None:
                return False
            handle._fn = None
            self._pending -= 1
            cancelled = len(self._heap) - self._pending
            if not self._pending:
                self._heap.clear()
                self._cond.notify()  # so that the thread ends now, not at a deadline
            elif cancelled > _MIN_COMPACT and cancelled > self._pending:
                # In place: the thread may hold the list while it waits.
                self._heap[:] = [e for e in self._heap if e[2]._fn is not None]
                heapq.heapify(self._heap)
        return True

    def _run(self) -> None:
        while self._run_due():
            pass

    def _run_due(self) -> bool:
        """Wait for callbacks to come due and run them; ``False`` once none is
        pending. A frame of its own, so that nothing it ran is kept alive while the
        thread waits for the next deadline."""
        with self._cond:
            due = self._wait_for_due()
        if due is None:
            return False
        for fn in due:
            try:
                fn()
            except BaseException:  # the thread serves every executor: keep it
                logger.exception("scheduled callback %r raised", fn)
        return True

    def _wait_for_due(self) -> list[Callable[[], object]] | None:
        """Wait until callbacks are due and take them; ``None`` once none is pending.

        Called with the lock held; returns with it held.
        """
        heap = self._heap
        while True:
            if not self._pending:
                heap.clear()  # only cancelled entries are left
                self._thread = None  # the next call_at starts a new thread
                return None
            if heap[0][2]._fn is None:
                heapq.heappop(heap)
                continue
            delay = heap[0][0] - time.monotonic()
            if delay <= 0:
                break
            self._cond.wait(delay)
        now = time.monotonic()
        due: list[Callable[[], object]] = []
        while heap and heap[0][0] <= now:
            handle = heapq.heappop(heap)[2]
            if handle._fn is not None:
                due.append(handle._fn)
                handle._fn = None
                self._pending -= 1
        return due

    def _after_fork_in_child(self) -> None:
        # The child has none of the parent's threads, and one of them may have held
        # the lock at the fork: start afresh. The pending callbacks belong to the
        # parent; mark them cancelled so that cancelling them here stays consistent.
        for entry in self._heap:
            entry[2]._fn = None
        self._heap = []
        self._pending = 0
        self._cond = threading.Condition(threading.Lock())
        self._thread = None


_scheduler = _Scheduler()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_scheduler._after_fork_in_child)


def call_at(when: float, fn: Callable[[], object]) -> TimerHandle:
    """Run ``fn()`` in the scheduler thread at :func:`time.monotonic` time ``when``.

    Args:
        when: the monotonic time, in seconds, at which ``fn`` is due; a time in the
            past means as soon as possible.
        fn: a short callback taking no argument; its return value is ignored.

    Returns:
        A :class:`TimerHandle` whose ``cancel()`` unschedules ``fn``.

    Raises:
        ValueError: ``when`` is infinite or NaN.
    """
    return _scheduler.call_at(when, fn)


def call_later(delay: float, fn: Callable[[], object]) -> TimerHandle:
    """Run ``fn()`` in the scheduler thread ``delay`` seconds from now.

    Args:
        delay: seconds from now; zero or negative means as soon as possible.
        fn: a short callback taking no argument; its return value is ignored.

    Returns:
        A :class:`TimerHandle` whose ``cancel()`` unschedules ``fn``.

    Raises:
        ValueError: ``delay`` is infinite or NaN.
    """
    return _scheduler.call_at(time.monotonic() + delay, fn)
