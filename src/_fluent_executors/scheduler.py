"""The shared scheduler: one thread that runs short callbacks at given times.

Retry backoff, timeouts and ``f_timeout`` all need "call this in *n* seconds" for
possibly 100,000 futures at once. Rather than a thread per wrapper or per future,
they share one daemon thread, ``fluent-executors-scheduler``, which sleeps until the
earliest deadline of a heap. It is started by the first :func:`call_at` and ends
once no callback has been pending for ``LINGER`` seconds (50 ms), so an idle program
has no scheduler thread, and a busy one, whose heap empties and fills again between
futures, does not start a thread each time; a test that must see it gone can
``join()`` it (find it with :func:`threading.enumerate`).

Contract for callers:

- :func:`call_at` and :func:`call_later` are O(log n) and may be called from any
  thread, from a scheduled callback too; :meth:`TimerHandle.cancel` is O(1)
  (amortised: cancelled entries are dropped lazily, and the heap is compacted once
  they outnumber the pending ones).
- Callbacks take no argument and run one after another in the scheduler thread,
  outside every lock of this module, so they must be short and must not block
  (resolve a future). A callback that raises is logged with its traceback; the
  thread carries on.
- A callback scheduled with ``may_block=True`` (one that cancels a future, which
  may call a user's cancel function, or submits to a delegate, which may block) is
  handed to a worker thread, ``fluent-executors-scheduler-worker``, when due, so
  that it holds up no other callback. Up to ``MAX_WORKERS`` of them run at once,
  each started when there is such a callback to run and no idle worker, each
  ending once idle for ``LINGER`` seconds. Such callbacks due at the same time
  start in call order, but may run at the same time.
- Times are seconds on the library's clock (``clock.monotonic()``, the
  :func:`time.monotonic` clock unless a test replaced it).
- A child process made by :func:`os.fork` starts with no pending callback; the
  parent's stay the parent's.

A :class:`DeadlineQueue` holds the deadlines of one executor whose items all expire
a fixed delay after they are added (a timeout executor's futures): since they come
due in the order added, it keeps them in a FIFO behind one scheduler entry, that of
its earliest deadline, rather than one heap entry each. Adding an item and telling
the queue that one is done both cost O(1) (amortised: done items are dropped
lazily, and the FIFO compacted once they are half of it).

"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import operator
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Protocol

from . import clock
from .callbacks import mark_library_thread
from .logging import ContainedLogger
from .resolvable import DONE
from .stdlib_compat import LOCK_FREE, interpreter_exiting

__all__ = [
    "THREAD_NAME",
    "WORKER_THREAD_NAME",
    "DeadlineQueue",
    "TimerHandle",
    "call_at",
    "call_later",
    "counts",
]

logger = ContainedLogger(logging.getLogger("fluent_executors._scheduler"))

THREAD_NAME = "fluent-executors-scheduler"
WORKER_THREAD_NAME = f"{THREAD_NAME}-worker"

MAX_WORKERS = 4
"""The most worker threads that run ``may_block`` callbacks at once."""

LINGER = 0.05
"""Seconds the thread waits for a new callback, once none is pending, before it ends."""

# Compact the heap once cancelled entries outnumber pending ones, but not for a few:
# rebuilding costs O(n), so it must wait for O(n) cancels to stay O(1) amortised.
_MIN_COMPACT = 64


class TimerHandle:
    """A callback scheduled by :func:`call_at`; :meth:`cancel` it if it is no longer
    wanted."""

    __slots__ = ("_fn", "may_block", "when")

    def __init__(
        self, when: float, fn: Callable[[], object], may_block: bool = False
    ) -> None:
        self.when = when
        """The time (``clock.monotonic()``) at which the callback is due."""
        self.may_block = may_block
        """Whether the callback runs in a worker thread (see :func:`call_at`)."""
        self._fn: Callable[[], object] | None = fn  # None: cancelled, or taken to run

    def cancel(self) -> bool:
        """Stop the callback from running; safe from any thread, any number of times.

        Returns:
            ``True`` if the callback was pending and now will not run; ``False`` if
            it was cancelled before, or has come due and been taken to run (it may
            not have started yet: a ``may_block`` callback waits for a free worker).
        """
        if self._fn is None:  # taken to run, or cancelled: no need for the lock
            return False
        if self.when == math.inf:  # never due, and so never in the heap
            self._fn = None
            return True
        return _scheduler.cancel(self)


class _Scheduler:
    """The heap and the thread; one instance per process."""

    def __init__(self) -> None:
        # Callers take the lock itself (a C-level context manager, quicker than the
        # Condition's); the thread waits on the Condition.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        # Heap entries are tuples, which compare faster than objects with __lt__;
        # the sequence number keeps callbacks due at the same time in call order.
        self._heap: list[tuple[float, int, TimerHandle]] = []
        self._sequence = itertools.count()
        self._pending = 0  # entries of the heap not cancelled
        self._thread: threading.Thread | None = None
        self._retiring = False  # retire() waits for the idle thread to end

    def call_at(
        self, when: float, fn: Callable[[], object], may_block: bool
    ) -> TimerHandle:
        if math.isnan(when):
            raise ValueError(f"when must be a time, got {when!r}")
        handle = TimerHandle(when, fn, may_block)
        if when == math.inf:  # never due: nothing to wait for
            return handle
        with self._lock:
            heapq.heappush(self._heap, (when, next(self._sequence), handle))
            self._pending += 1
            if self._retiring:  # in use again: the thread stays (see retire)
                self._retiring = False
                self._cond.notify_all()
            elif self._thread is None:
                thread = threading.Thread(
                    target=self._run, name=THREAD_NAME, daemon=True
                )
                try:
                    thread.start()  # if it cannot, the next call_at tries again
                except BaseException:  # "can't start new thread": not scheduled
                    handle._fn = None  # (left in the heap, as a cancelled entry)
                    self._pending -= 1
                    raise
                self._thread = thread
            elif self._heap[0][2] is handle:  # earlier than what the thread waits for
                self._cond.notify()
        return handle

    def cancel(self, handle: TimerHandle) -> bool:
        with self._lock:
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

    def pending(self) -> int:
        """The callbacks scheduled and neither due, run nor cancelled."""
        with self._lock:
            return self._pending

    def retire(self, deadline: float) -> None:
        """If no callback is pending, end the thread now rather than ``LINGER``
        seconds from now, and join it; wait for the callbacks it runs until
        ``deadline`` (``time.monotonic()``) at the most. A thread that
        :meth:`call_at` takes back into use meanwhile is left running (another
        executor needs it)."""
        with self._lock:
            thread = self._thread
            if thread is None or self._pending:
                return
            self._retiring = True
            self._cond.notify_all()
            # Until the thread ends (it resets _thread), or call_at calls it off.
            while self._thread is thread and self._retiring:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._retiring = False  # it lingers, as without retire
                    return
                self._cond.wait(remaining)
        if self._thread is not thread:
            thread.join(max(deadline - time.monotonic(), 0.0))

    def _run(self) -> None:
        mark_library_thread()
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
        blocking = [fn for fn, may_block in due if may_block]
        if blocking:
            _workers.run(blocking)
        for fn, may_block in due:
            if not may_block:
                _run_logged(fn)
        return True

    def _wait_for_due(self) -> list[tuple[Callable[[], object], bool]] | None:
        """Wait until callbacks are due and take them; ``None`` once none is pending.

        Called with the lock held; returns with it held.
        """
        heap = self._heap
        idle_until = None
        while True:
            if not self._pending:
                heap.clear()  # only cancelled entries are left
                # The linger is real time, whatever clock the deadlines are on: a
                # virtual or replaced clock must not keep an idle thread alive.
                now = time.monotonic()
                if idle_until is None:
                    idle_until = now + LINGER
                if now >= idle_until or self._retiring:
                    self._thread = None  # the next call_at starts a new thread
                    self._retiring = False
                    self._cond.notify_all()  # retire() waits for this
                    return None
                clock.wait(self._cond, idle_until - now)  # call_at, retire notify
                continue
            idle_until = None
            if heap[0][2]._fn is None:
                heapq.heappop(heap)
                continue
            delay = heap[0][0] - clock.monotonic()
            if delay <= 0:
                break
            clock.wait(self._cond, delay)
        now = clock.monotonic()
        due: list[tuple[Callable[[], object], bool]] = []
        while heap and heap[0][0] <= now:
            handle = heapq.heappop(heap)[2]
            if handle._fn is not None:
                due.append((handle._fn, handle.may_block))
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
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._thread = None
        self._retiring = False


def _run_logged(fn: Callable[[], object]) -> None:
    try:
        fn()
    except BaseException:  # the thread serves every executor: keep it
        logger.exception("scheduled callback %r raised", fn)  # never raises


class _Workers:
    """The threads that run the callbacks that may block; one instance per process."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: deque[Callable[[], object]] = deque()  # not taken yet
        self._threads = 0  # alive, or about to start
        self._idle = 0  # waiting for a callback
        self._retiring = False  # retire() waits for the workers to end
        self._ended: list[threading.Thread] = []  # ended for retire(): to join

    def run(self, fns: list[Callable[[], object]]) -> None:
        """Run each of ``fns`` in a worker thread, in order, as workers come free.

        One call for all the callbacks that came due together: under a burst of
        timeouts this is one hand-over per batch, not one per callback.
        """
        with self._lock:
            self._queue.extend(fns)
            if self._retiring:  # in use again: the workers stay (see retire)
                self._retiring = False
                self._cond.notify_all()
            self._cond.notify(min(len(self._queue), self._idle))
            # Each idle worker takes one; more threads for the rest, up to the most.
            unclaimed = len(self._queue) - self._idle
            start = max(min(unclaimed, MAX_WORKERS - self._threads), 0)
            self._threads += start
        for started in range(start):
            try:
                threading.Thread(
                    target=self._work, name=WORKER_THREAD_NAME, daemon=True
                ).start()
            except RuntimeError:  # "can't start new thread": out of threads or memory
                # (At interpreter exit no thread can start: expected, and quiet.)
                if not interpreter_exiting():
                    logger.exception("could not start a scheduler worker thread")
                self._not_started(start - started)
                return

    def counts(self) -> tuple[int, int, int]:
        """The callbacks waiting for a worker, the workers running one (or about
        to), and the workers alive."""
        with self._lock:
            return len(self._queue), self._threads - self._idle, self._threads

    def retire(self, deadline: float) -> None:
        """If no callback waits for a worker, end the workers now rather than
        ``LINGER`` seconds from now, once each has finished the callback it runs
        (until ``deadline``, ``time.monotonic()``, at the most), and join them.
        Workers that :meth:`run` takes back into use meanwhile are left running."""
        with self._lock:
            if not self._threads or self._queue:
                return
            self._retiring = True
            self._cond.notify_all()
            while self._threads and self._retiring:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            self._retiring = False  # any still busy linger, as without retire
            ended, self._ended = self._ended, []
        for thread in ended:
            thread.join(max(deadline - time.monotonic(), 0.0))

    def _not_started(self, count: int) -> None:
        """``count`` worker threads counted in could not start. If no worker is left
        to run the queue, run it here (in the scheduler thread) rather than lose it."""
        with self._lock:
            self._threads -= count
            if self._threads:
                return
            orphans = list(self._queue)
            self._queue.clear()
        for fn in orphans:
            _run_logged(fn)

    def _work(self) -> None:
        mark_library_thread()
        while (fn := self._take()) is not None:
            _run_logged(fn)
            del fn  # keep nothing alive while waiting for the next one

    def _take(self) -> Callable[[], object] | None:
        """The next callback; ``None`` once none has come for ``LINGER`` seconds
        (and the thread must end)."""
        with self._lock:
            idle_until = time.monotonic() + LINGER  # real time: see _wait_for_due
            while not self._queue:
                remaining = idle_until - time.monotonic()
                if remaining <= 0 or self._retiring:
                    self._threads -= 1
                    if self._retiring:
                        self._ended.append(threading.current_thread())
                        self._cond.notify_all()  # retire() waits for this
                    return None
                self._idle += 1
                self._cond.wait(remaining)
                self._idle -= 1
            return self._queue.popleft()

    def _after_fork_in_child(self) -> None:
        # As for the scheduler: the parent's workers and callbacks stay the parent's.
        self._reset()


# The item and its deadline, of a pair that DeadlineQueue.discard keeps.
_ITEM = operator.itemgetter(0)
_WHEN = operator.itemgetter(1)


class Expiring(Protocol):
    """What a :class:`DeadlineQueue` holds (a timeout executor's future)."""

    # Its state, a standard future's: one of resolvable.DONE, and the item must
    # not expire. Read as a field, not through done(): a compaction reads it of
    # every item it keeps, a call each.
    _state: str

    def _expire(self) -> None:
        """Called in a scheduler worker thread once the deadline has passed, unless
        the item was done then; it may block (cancel a future)."""
        ...


class DeadlineQueue:
    """The deadlines of items that each expire ``delay`` seconds after they are
    added, behind one scheduler entry (that of the earliest) rather than one each.

    Since every item has the same delay, deadlines come due in the order the items
    were added: a FIFO, without a heap. Due items not done have their ``_expire()``
    run in the scheduler's worker threads (as ``may_block`` callbacks), so a slow
    one holds up no other deadline. Each item's owner calls :meth:`discard` once
    the item is done. Thread-safe.
    """

    __slots__ = ("__weakref__", "_delay", "_done", "_items", "_lock", "_timer", "_when")

    def __init__(self, delay: float) -> None:
        self._delay = delay
        self._lock = threading.Lock()
        # The items and their deadlines, in the same order: two deques rather than
        # one of pairs, which would be one more object per item for the garbage
        # collector to track.
        self._items: deque[Expiring] = deque()
        self._when: deque[float] = deque()
        self._done = 0  # discard() calls since the last compaction
        # The scheduler entry of the earliest deadline: None if the queue is empty;
        # taken to run (its _fn is None) while _fire has yet to wait for the next.
        self._timer: TimerHandle | None = None
        _queues.add(self)

    def add(self, item: Expiring) -> None:
        """Have ``item._expire()`` called ``delay`` seconds from now, unless
        ``item`` is done by then. An item done already is not added."""
        with self._lock:
            if item._state in DONE:  # its owner's discard() has counted it
                return
            when = clock.monotonic() + self._delay  # under the lock: in order
            self._items.append(item)
            self._when.append(when)
            # None only while the queue was empty: this is the earliest deadline.
            # (A timer taken to run is _fire's, which waits for the next one.)
            if self._timer is None:
                try:
                    self._timer = _scheduler.call_at(when, self._fire, False)
                except BaseException:  # no scheduler thread: not added
                    self._items.pop()
                    self._when.pop()
                    raise

    def discard(self) -> None:
        """One item is done: once done items are half of the queue, drop them (and
        the scheduler entry, if none is left)."""
        # Counted without the lock (an increment is atomic: see counts), taken
        # only to compact: a count too high by a racing compaction's reset only
        # compacts earlier.
        if LOCK_FREE:
            self._done += 1
        else:  # no GIL to make the increment atomic (see stdlib_compat)
            with self._lock:
                self._done += 1
        if 2 * self._done < len(self._items):
            return
        with self._lock:
            items = self._items
            if 2 * self._done < len(items):  # compacted meanwhile
                return
            self._done = 0
            if not items:
                # Nothing to drop: the done items were never added (done before
                # add(), as a quick future is: the common case) or are gone. Only
                # the scheduler entry may be left, as below: one that _fire found
                # pending for an item done since.
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
                return
            pairs = zip(items, self._when, strict=True)
            kept = [pair for pair in pairs if pair[0]._state not in DONE]
            # (Split by C-level maps: a generator would resume once per item.)
            self._items = deque(map(_ITEM, kept))
            self._when = deque(map(_WHEN, kept))
            if not kept and self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _fire(self) -> None:
        """At the earliest deadline, in the scheduler thread: hand the due items
        not done to the workers; wait for the next deadline."""
        now = clock.monotonic()
        expired: list[Callable[[], object]] = []
        with self._lock:
            items, when = self._items, self._when
            while items and (when[0] <= now or items[0]._state in DONE):
                when.popleft()
                item = items.popleft()
                if item._state not in DONE:
                    expired.append(item._expire)
            timer = self._timer
            if timer is None or timer._fn is None:  # this call's: wait for the next
                self._timer = (
                    _scheduler.call_at(when[0], self._fire, False) if items else None
                )
        if expired:
            _workers.run(expired)

    def _after_fork_in_child(self) -> None:
        # The items and the scheduler entry are the parent's.
        self._lock = threading.Lock()
        self._items.clear()
        self._when.clear()
        self._done = 0
        self._timer = None


_scheduler = _Scheduler()
_workers = _Workers()
_queues: weakref.WeakSet[DeadlineQueue] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    _scheduler._after_fork_in_child()
    _workers._after_fork_in_child()
    for queue in list(_queues):
        queue._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


RETIRE_WAIT = 5.0
"""Real seconds :func:`retire` waits, at the most, for the callbacks running in
the scheduler's threads to return (they are short: they resolve or cancel futures,
which may call a user's cancel function)."""


def retire() -> None:
    """End the scheduler thread and its workers now if no callback is pending or
    queued, and join them: what ``shutdown(wait=True)`` calls last, so that the
    threads started for an executor's futures are gone when it returns, as the
    standard pools' are.

    Threads that another executor still uses (a callback pending, queued or
    scheduled meanwhile) are left running, and so are those still running a
    callback after :data:`RETIRE_WAIT` seconds. Called from one of these threads
    (a shutdown in a scheduled callback), it does nothing: a thread cannot join
    itself, and waiting for the others could wait for the caller.
    """
    if threading.current_thread().name in (THREAD_NAME, WORKER_THREAD_NAME):
        return
    deadline = time.monotonic() + RETIRE_WAIT
    _scheduler.retire(deadline)
    _workers.retire(deadline)


def counts() -> tuple[int, int, int, int]:
    """What ``fluent_executors.scheduler_stats()`` reports: the timers pending, the
    callbacks waiting for a worker, the workers busy and the workers alive."""
    return (_scheduler.pending(), *_workers.counts())


def call_at(
    when: float, fn: Callable[[], object], *, may_block: bool = False
) -> TimerHandle:
    """Run ``fn()`` in the scheduler thread at time ``when`` (``clock.monotonic()``).

    Args:
        when: the monotonic time, in seconds, at which ``fn`` is due; a time in the
            past means as soon as possible, ``math.inf`` never (a far time is
            waited for in steps the platform can wait).
        fn: a short callback taking no argument; its return value is ignored.
        may_block: ``fn`` may block (it cancels a future or submits to an
            executor): run it in a worker thread instead, once due.

    Returns:
        A :class:`TimerHandle` whose ``cancel()`` unschedules ``fn``.

    Raises:
        ValueError: ``when`` is NaN.
        RuntimeError: the scheduler thread had to be started and could not be
            (``fn`` is then not scheduled; the next call tries again).
    """
    return _scheduler.call_at(when, fn, may_block)


def call_later(
    delay: float, fn: Callable[[], object], *, may_block: bool = False
) -> TimerHandle:
    """Run ``fn()`` in the scheduler thread ``delay`` seconds from now.

    Args:
        delay: seconds from now; zero or negative means as soon as possible.
        fn: a short callback taking no argument; its return value is ignored.
        may_block: as for :func:`call_at`.

    Returns:
        A :class:`TimerHandle` whose ``cancel()`` unschedules ``fn``.

    Raises:
        ValueError: ``delay`` is NaN.
    """
    return _scheduler.call_at(clock.monotonic() + delay, fn, may_block)
