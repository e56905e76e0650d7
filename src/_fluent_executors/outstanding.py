"""Outstanding futures, and a shutdown deferred until they are done: the
bookkeeping that the retry, poll, remote (Dask, Ray) and cancel-on-shutdown
executors share. (Throttle and rate limit defer their delegate's shutdown until
their *queue* is empty, callables not yet passed on rather than futures not yet
done, under the condition their blocked submits wait on: ``queueing.py``.)

Contract: an executor :meth:`~Outstanding.add` s each future it returns (refused
with ``RuntimeError`` once :meth:`~Outstanding.close` d) and
:meth:`~Outstanding.discard` s it once done, from any thread. Its ``shutdown``
calls :meth:`~Outstanding.close` (and cancels what it returns, if asked to), then
:meth:`~Outstanding.finish` with what to do once idle (shut the delegate down):
with ``wait``, that waits until no future is left and does it; without, it does it
now if none is left, else the thread that discards the last one does, once.
Every operation is O(1) but the snapshots that ``snapshot`` and ``close``
return. :meth:`~Outstanding.discard` takes no lock but for the last future after
a close: it drops the future in one dict operation, atomic under the GIL, and
reads the closed flag after it. :meth:`~Outstanding.add` takes it, so that a
future is either refused or listed by ``close`` (which a shutdown cancels), never
both. The lock also guards waiting and the deferred action, which runs outside
it. Nothing here refers to the executor but a deferred action, until it has
run: no reference cycle.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from .stdlib_compat import LOCK_FREE

__all__ = ["Outstanding"]


class Outstanding:
    """The futures an executor returned that are not done yet."""

    __slots__ = ("_cond", "_deferred", "_futures", "_is_closed", "_lock")

    def __init__(self) -> None:
        # add() and the last discard() take the lock itself (a C-level context
        # manager, quicker than the Condition's); finish() waits on the Condition.
        # Re-entrant: a finalizer (a poll executor's) may close() in a thread
        # inside this lock, when the garbage collector runs it there.
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        # A dict as an insertion-ordered set: O(1) add and remove.
        self._futures: dict[Future[Any], None] = {}
        self._is_closed = False
        self._deferred: Callable[[], object] | None = None  # a finish without wait

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (``bool``)."""
        return self._is_closed

    def add(self, future: Future[Any]) -> None:
        """Count ``future`` as outstanding.

        Raises:
            RuntimeError: :meth:`close` was called (the executor is shut down).
        """
        with self._lock:
            if self._is_closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._futures[future] = None

    def discard(self, future: Future[Any]) -> None:
        """Count ``future`` out (done, or never handed out); the last one after a
        :meth:`finish` without ``wait`` runs its action."""
        if LOCK_FREE:  # a dict's pop is atomic under the GIL (see stdlib_compat)
            self._futures.pop(future, None)
        else:
            with self._lock:
                self._futures.pop(future, None)
        if self._futures or not self._is_closed:
            return
        # The last one, closed (so none is added any more): under the lock, which
        # finish() holds from its check of the futures left to its wait (or to
        # setting its action), so neither misses this.
        with self._lock:
            self._cond.notify_all()
            action, self._deferred = self._deferred, None
        if action is not None:
            action()

    def snapshot(self) -> list[Future[Any]]:
        """The futures outstanding now."""
        with self._lock:
            return list(self._futures)

    def close(self) -> list[Future[Any]]:
        """Refuse new futures; return those outstanding (to cancel, say)."""
        with self._cond:
            self._is_closed = True
            return list(self._futures)

    def finish(self, wait: bool, when_idle: Callable[[], object]) -> None:
        """After :meth:`close`: call ``when_idle()`` once no future is left, waiting
        for that here if ``wait``, else from the last :meth:`discard` (a later
        ``finish`` without ``wait`` replaces the action of an earlier one)."""
        with self._cond:
            if wait:
                self._cond.wait_for(lambda: not self._futures)
            elif self._futures:
                self._deferred = when_idle
                return
        when_idle()

    def __len__(self) -> int:
        return len(self._futures)
