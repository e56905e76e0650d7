"""The counts that every executor keeps, always: what its ``stats()`` reports and
what its metrics are fed from.

Each executor owns one :class:`Counts`: plain integers, each changed by one method
of it, called where the event happens. Where a GIL runs the threads one at a time
(:data:`~_fluent_executors.stdlib_compat.LOCK_FREE`), the methods take no lock: on
CPython 3.10 and later, ``self.x += 1`` on an attribute of a ``__slots__`` object
runs from its read to its write without a switch of thread (the interpreter
checks for a switch at calls and backward jumps, and an int allocates nothing the
garbage collector tracks), so no increment is lost (eight threads adding a
million each, switching every microsecond, lose none on 3.10 to 3.15). Elsewhere
(a free-threaded build, and the portable mode, which tests this path)
:func:`open_counts` makes a :class:`LockedCounts`, whose every method holds the
counts' lock: two threads incrementing at once could otherwise lose one.

What only one kind of executor counts, it keeps itself, in an
:class:`EventCount` each (:func:`event_count`, lock-free or locked alike): a
retry executor its attempts and retries, a timeout executor its timeouts fired,
a poll driver its calls of the poll function.

The metric exporters (:mod:`_fluent_executors.metrics`) are fed by the same events,
through the same calls: ``Counts.metrics`` is the executor's ``ExecutorMetrics``
when a backend is on, and each event that the metrics record is passed on to it
where the counts are incremented; ``None`` otherwise, and then nothing else is done.

A future of the library (:class:`~fluent_executors.ProxyFuture`) is counted as done
under its own lock, before the threads that wait for it are woken
(``ProxyFuture._try_resolve``): once ``wait()`` returns, or a done callback runs,
``stats()`` counts the future as done. A standard or asyncio future (a pool's, the
asyncio wrapper's) is counted by a done callback added when it is submitted, ahead
of every other.

The snapshots (:mod:`_fluent_executors.stats`) are imported when first asked for.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING, Any

from .metrics import ExecutorMetrics, for_executor
from .stdlib_compat import LOCK_FREE, done_failure

if TYPE_CHECKING:
    import asyncio

    from .handoff import Handoff
    from .proxy import ProxyFuture
    from .resolvable import ResolvableFuture
    from .stats import ExecutorStats

__all__ = ["Counts", "EventCount", "LockedCounts", "event_count", "open_counts"]


class Counts:
    """The counts of one executor (see the module's docstring for their safety).

    Each executor keeps either ``pending`` or ``running`` up to date, as
    ``counts_running`` says; :meth:`fields` derives the other one from the futures
    not done. What only one kind of executor counts (a retry executor's attempts,
    a poll executor's calls) it keeps itself, in an :class:`EventCount` each.
    """

    __slots__ = (
        "_lock",
        "cancelled",
        "counts_running",
        "done",
        "done_callback",
        "failed",
        "kind",
        "metrics",
        "name",
        "pending",
        "running",
        "submitted",
    )

    def __init__(
        self,
        kind: str,
        name: str,
        metrics: ExecutorMetrics | None,
        counts_running: bool = False,
    ) -> None:
        self.kind = kind
        self.name = name
        self.metrics = metrics
        self.counts_running = counts_running
        self.submitted = self.done = self.failed = self.cancelled = 0
        self.pending = self.running = 0
        # Made once: add_done_callback(self._done) would make a bound method per
        # future.
        self.done_callback = self._done
        self._lock = threading.RLock()  # what LockedCounts holds: one per executor

    # -- futures ----------------------------------------------------------------------

    def adopt(self, future: ProxyFuture[Any] | Handoff) -> None:
        """Count ``future``, a future of the library that ``submit`` is about to
        return (or a pool's handoff of a call, see :mod:`_fluent_executors.handoff`),
        as submitted; it counts itself as done when resolved.

        Call it before any other thread can see the future (before it follows the
        delegate's future), and before it can be resolved.
        """
        self.submitted += 1
        future._tracker = self
        metrics = self.metrics
        if metrics is not None:
            metrics.submitted()
            future._tracked_since = time.perf_counter()

    def unadopt(self, future: ProxyFuture[Any] | Handoff) -> None:
        """Undo :meth:`adopt` for a future that no other thread has seen, and that
        ``submit`` does not return after all (it refused the callable)."""
        self.submitted -= 1
        future._tracker = None
        if self.metrics is not None:
            self.metrics.submitted(-1)

    def track(self, future: Future[Any]) -> None:
        """Count ``future``, a standard future of a pool, which the library's own
        future follows, as submitted, and as done once it is; call it before any
        other done callback is added."""
        self.submitted += 1
        metrics = self.metrics
        if metrics is None:
            future.add_done_callback(self.done_callback)
        else:
            metrics.submitted()
            future.add_done_callback(partial(self._timed_done, time.perf_counter()))

    def track_asyncio(self, future: asyncio.Future[Any]) -> None:
        """:meth:`track` for an asyncio future."""
        self.submitted += 1
        metrics = self.metrics
        if metrics is not None:
            metrics.submitted()
        future.add_done_callback(partial(self._asyncio_done, time.perf_counter()))

    def ended(self, failed: bool, cancelled: bool) -> None:
        """A future is done: ``failed`` with an exception, or ``cancelled``, or
        neither. A future of the library calls it itself, under its own lock, as it
        is resolved."""
        self.done += 1
        if failed:
            self.failed += 1
        elif cancelled:
            self.cancelled += 1

    def _done(self, future: Future[Any]) -> None:
        """Count the done standard ``future``."""
        cancelled, exception = done_failure(future)
        # cancelled: CANCELLED while its done callbacks run
        self.ended(exception is not None, cancelled)

    def _timed_done(self, since: float, future: Future[Any]) -> None:
        """:meth:`_done`, and the metrics of a future tracked since ``since``."""
        self._done(future)
        self._record(since, future)

    def _asyncio_done(self, since: float, future: asyncio.Future[Any]) -> None:
        """Count the done asyncio ``future``, tracked since ``since``."""
        cancelled = future.cancelled()
        self.ended(not cancelled and future.exception() is not None, cancelled)
        self._record(since, future)

    def record_end(self, future: ResolvableFuture[Any] | Handoff) -> None:
        """Record the metrics of ``future``, resolved and counted already; called
        by it, once, while metrics are on."""
        self._record(future._tracked_since, future)

    def _record(self, since: float, future: Future[Any] | asyncio.Future[Any]) -> None:
        metrics = self.metrics
        if metrics is None:
            return
        seconds = time.perf_counter() - since
        if future.cancelled():
            metrics.ended(seconds, False, True)
        else:
            metrics.ended(seconds, future.exception() is not None, False)

    def running_changed(self, delta: int) -> None:
        """A worker of a pool started (``delta`` 1) or ended (-1) a callable."""
        self.running += delta

    def pending_changed(self, delta: int) -> None:
        """``delta`` more futures wait (1) or one fewer (-1), where the executor
        counts ``pending`` itself (a retry executor's, waiting for an attempt)."""
        self.pending += delta

    def queued(self, delta: int) -> None:
        """The queue of a throttle or rate limit grew by ``delta`` (or shrank);
        called under the queue's lock."""
        self.pending += delta
        if self.metrics is not None:
            self.metrics.queue_changed(delta)

    # -- the snapshot -----------------------------------------------------------------

    def fields(self, running: int | None = None) -> dict[str, Any]:
        """The fields of :class:`ExecutorStats`, read now.

        Args:
            running: the futures running, if the executor knows it otherwise than
                by these counts (a process pool).
        """
        # Read in this order (done, then the gauge, then submitted), so that the
        # derived count is not below zero, however the futures move meanwhile.
        done, failed, cancelled = self.done, self.failed, self.cancelled
        if running is not None or self.counts_running:
            if running is None:
                running = self.running
            in_progress = self.submitted - done
            running = min(max(running, 0), max(in_progress, 0))
            pending = max(in_progress, 0) - running
        else:
            pending = max(self.pending, 0)
            in_progress = self.submitted - done
            pending = min(pending, max(in_progress, 0))
            running = max(in_progress, 0) - pending
        return {
            "kind": self.kind,
            "name": self.name,
            "submitted": pending + running + done,
            "pending": pending,
            "running": running,
            "done": done,
            "failed": failed,
            "cancelled": cancelled,
        }

    def stats(self) -> ExecutorStats:
        """The snapshot of an executor without counts of its own kind."""
        from .stats import ExecutorStats  # on first use: see the module docstring

        return ExecutorStats(**self.fields())


class LockedCounts(Counts):
    """:class:`Counts` whose every change holds the counts' lock: made where no GIL
    runs the threads one at a time, and in the portable mode (see the module's
    docstring). Re-entrant: :meth:`track` may count a future done at once, from
    inside."""

    __slots__ = ()

    def adopt(self, future: ProxyFuture[Any] | Handoff) -> None:
        with self._lock:
            super().adopt(future)

    def unadopt(self, future: ProxyFuture[Any] | Handoff) -> None:
        with self._lock:
            super().unadopt(future)

    def track(self, future: Future[Any]) -> None:
        with self._lock:
            super().track(future)

    def track_asyncio(self, future: asyncio.Future[Any]) -> None:
        with self._lock:
            super().track_asyncio(future)

    def ended(self, failed: bool, cancelled: bool) -> None:
        with self._lock:
            super().ended(failed, cancelled)

    def running_changed(self, delta: int) -> None:
        with self._lock:
            super().running_changed(delta)

    def pending_changed(self, delta: int) -> None:
        with self._lock:
            super().pending_changed(delta)

    def queued(self, delta: int) -> None:
        with self._lock:
            super().queued(delta)


class EventCount:
    """A count of one kind of event that one kind of executor keeps beside its
    :class:`Counts` (a retry executor's attempts, a poll executor's calls of its
    poll function); made by :func:`event_count`. Incremented without a lock where
    :data:`~_fluent_executors.stdlib_compat.LOCK_FREE`, as :class:`Counts` is."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def add(self, count: int = 1) -> None:
        """Count ``count`` more events."""
        self.value += count


class LockedEventCount(EventCount):
    """An :class:`EventCount` whose increments hold its lock (see
    :class:`LockedCounts`)."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def add(self, count: int = 1) -> None:
        with self._lock:
            super().add(count)


def event_count() -> EventCount:
    """A new count of events, locked where no GIL makes an increment atomic."""
    return EventCount() if LOCK_FREE else LockedEventCount()


def new_counts(
    kind: str, name: str, metrics: ExecutorMetrics | None, counts_running: bool = False
) -> Counts:
    """New :class:`Counts` (see its arguments), locked where no GIL makes an
    increment atomic (:class:`LockedCounts`)."""
    make = Counts if LOCK_FREE else LockedCounts
    return make(kind, name, metrics, counts_running)


def open_counts(
    executor: object, kind: str, name: str, *, counts_running: bool = False
) -> Counts:
    """The counts of ``executor``, a new executor of ``kind`` named ``name``; with
    its metrics, if a backend is on (which counts it as created: call it once, at
    the end of the executor's construction).

    Args:
        executor: the executor.
        kind: its kind, the ``type`` label of its metrics: ``poll``, ``threadpool``...
        name: its name.
        counts_running: whether the executor keeps ``running`` up to date (else
            ``pending``).
    """
    return new_counts(kind, name, for_executor(executor, kind, name), counts_running)
