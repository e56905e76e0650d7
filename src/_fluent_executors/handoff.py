"""Handoff: the work item of the library's thread pool for a call whose one
follower is known as the call is queued (a poll, map or flat-map future over the
pool, called directly): it holds the call's outcome itself, in place of a future
of the pool's own, and hands it to the follower.

A pool future that only one follower ever sees costs a whole future per call: its
fields, its lock, its resolving and its done callback; at 64,000 poll futures
outstanding, a sixth to a fifth of the poll executor's time per future
(``bench/poll_scale.py`` on Python 3.14, before and after side by side), and a tenth
of the map+retry+timeout chain's (one thread, 3.10, 3.13 and 3.14). A handoff keeps
what the follower and the pool read of it: its state (queued, running, done), its
outcome, and the pool's count of it. It takes the follower's lock and hands its
outcome to the follower at once, by a direct call of its ``_on_upstream_done``; it
has no waiters and no done callbacks, as nobody else holds it.

It is also the work item that the pool queues (a
:class:`~_fluent_executors.work_item.WorkItem`, its own ``future``): one object per
call, not a handoff and an item that refers to it. Each object that the garbage
collector tracks counts towards its next collection; at 64,000 poll futures
outstanding the one fewer per call spares the collections of the oldest
generation (``bench/poll_scale.py``'s "full collections", Python 3.13 to 3.15).

Who calls what: a worker calls :meth:`~_fluent_executors.work_item.WorkItem.run`,
which calls :meth:`set_running_or_notify_cancel` and then
:meth:`Handoff._try_resolve`, as on a future of the pool; the pool's
``shutdown(cancel_futures=True)`` calls :meth:`cancel` and a failed initializer
:meth:`set_exception`, as on any future of the pool (and a submit that could
start no worker :meth:`withdraw`); the follower reads
:meth:`running`, :meth:`done` and the outcome, and calls :meth:`cancel` from its
cancel hook. A cancel or an outcome from any of them reaches the follower once.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from typing import TYPE_CHECKING, Any

from .callbacks import contain
from .stdlib_compat import CANCELLED_AND_NOTIFIED, FINISHED, PENDING, RUNNING
from .work_item import WorkItem

if TYPE_CHECKING:
    from .counts import Counts
    from .proxy import ProxyFuture


class Handoff(WorkItem, Future[Any]):
    """The pool's work item of a call that it runs for ``follower``, a future of
    the library that follows nothing else, in place of a future of the pool's own.

    A :class:`concurrent.futures.Future` to type checkers and to ``isinstance``
    only (``Future.__init__`` is not called, as for a proxy future): it implements
    what the pool and the follower call, listed in the module's docstring, and
    nothing else reaches it.

    Args:
        follower: the future that takes on the call's outcome; its lock guards
            the handoff's state too.
        fn, args, kwargs, counts, context: the call, as for
            :class:`~_fluent_executors.work_item.WorkItem`.
    """

    __slots__ = ("_exception", "_follower", "_lock", "_result", "_state", "_tracker")

    # What counts.Counts.adopt sets, and record_end reads while metrics are on.
    _tracked_since = 0.0

    def __init__(
        self,
        follower: ProxyFuture[Any],
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        counts: Counts,
        context: contextvars.Context | None,
    ) -> None:
        self._follower: ProxyFuture[Any] | None = follower
        self._lock = follower._lock
        self._state = PENDING
        self._result: Any = None
        self._exception: BaseException | None = None
        self._tracker: Counts | None = None
        super().__init__(fn, args, kwargs, counts, context)

    @property
    def future(self) -> Handoff:
        """The work item's future is the handoff itself: what the pool's shutdown
        cancels and a failed initializer fails."""
        return self

    # -- what the pool calls --------------------------------------------------------

    def set_running_or_notify_cancel(self) -> bool:
        """``True``: the call may run, and can no longer be cancelled; ``False``:
        it was cancelled (its follower knows)."""
        with self._lock:
            if self._state == PENDING:
                self._state = RUNNING
                return True
        return False

    def _try_resolve(
        self,
        state: str,
        result: Any,
        exception: BaseException | None,
        event: str = "",
        before: str = RUNNING,
    ) -> bool:
        """Move from ``before`` to the done ``state``, counted, and hand the
        outcome to the follower; ``False`` if the handoff was not in ``before``.
        The work item calls it as on a future of the pool: the call returned
        ``result`` or raised ``exception`` (``event``, the name of a waiter's
        method, is not needed: a handoff has no waiters)."""
        with self._lock:
            if self._state != before:
                return False
            self._state, self._result, self._exception = state, result, exception
        tracker = self._tracker
        if tracker is not None:  # counted before the follower hears of it
            tracker.ended(exception is not None, state != FINISHED)
            if tracker.metrics is not None:
                tracker.record_end(self)
        follower, self._follower = self._follower, None  # no reference cycle
        if follower is not None:
            # Called directly, not through run_flat: a handoff is resolved by a
            # worker, a cancel or a failed initializer, never by a done callback
            # of a chain, and the follower's own done callbacks run flat.
            try:
                follower._on_upstream_done(self)
            except BaseException as error:  # as run_flat: logged, not re-raised
                if contain(error, self) is not None:  # (but Ctrl-C in the main
                    raise  # thread)
        return True

    def set_exception(self, exception: BaseException | None) -> None:
        """Fail the queued call with ``exception`` (a failed initializer broke the
        pool) unless it is running or done."""
        self._try_resolve(FINISHED, None, exception, before=PENDING)

    def cancel(self) -> bool:
        """Cancel the call unless it is running or done; ``True`` if it is
        cancelled (now or before). The follower follows."""
        if self._try_resolve(CANCELLED_AND_NOTIFIED, None, None, before=PENDING):
            return True
        return self._state == CANCELLED_AND_NOTIFIED

    def withdraw(self) -> None:
        """Never run the queued call, and tell the follower nothing: the submit
        that queued it raises (no worker could be started), and the follower fails
        with that error."""
        with self._lock:
            if self._state == PENDING:
                self._state = CANCELLED_AND_NOTIFIED
        self._follower = None

    # -- what the follower reads --------------------------------------------------

    def running(self) -> bool:
        """Whether a worker runs the call now."""
        return self._state == RUNNING

    def done(self) -> bool:
        """Whether the call has ended, or was cancelled."""
        return self._state in (FINISHED, CANCELLED_AND_NOTIFIED)

    def cancelled(self) -> bool:
        """Whether the call was cancelled before it ran."""
        return self._state == CANCELLED_AND_NOTIFIED

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """What the done call raised (``None`` if it returned); read once done
        only (``timeout`` is not used).

        Raises:
            concurrent.futures.CancelledError: the call was cancelled.
        """
        if self._state == CANCELLED_AND_NOTIFIED:
            raise CancelledError()
        return self._exception

    def result(self, timeout: float | None = None) -> Any:
        """What the done call returned; read once done only (``timeout`` is not
        used).

        Raises:
            concurrent.futures.CancelledError: the call was cancelled.
            BaseException: what the call raised.
        """
        exception = self.exception()
        if exception is not None:
            raise exception
        return self._result

    def __repr__(self) -> str:
        return f"<{type(self).__name__} at {id(self):#x} state={self._state}>"
