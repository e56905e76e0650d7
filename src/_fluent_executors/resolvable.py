"""The standard :class:`~concurrent.futures.Future` API over one lock, resolved at
most once, with done callbacks run outside it: the base of
:class:`~fluent_executors.ProxyFuture` (``proxy.py``), which adds following an
upstream future and cancelling it."""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, InvalidStateError
from concurrent.futures import TimeoutError as FutureTimeoutError
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, Union

from .callbacks import contain, run_flat
from .logging import ContainedLogger
from .stdlib_compat import (
    CANCELLED,
    CANCELLED_AND_NOTIFIED,
    FINISHED,
    LIGHT_FUTURES,
    PENDING,
    RUNNING,
    LightCondition,
    RLock,
    Waiter,
)
from .waiters import Waiters, one_more

T = TypeVar("T")

logger = ContainedLogger(logging.getLogger("fluent_executors._proxy"))

# Creating its future is much of what a wrapper costs per call. Future.__init__ makes
# a Condition over an RLock, which binds five methods to each instance, and every
# method of Future takes that Condition through Python-level __enter__ calls: objects
# the garbage collector walks at each full collection, and calls that the threads of
# a pool contend for. A proxy future keeps the same fields (the module functions
# wait() and as_completed() read them) but guards them with one RLock (re-entrant,
# as the standard Future's lock is), and makes a Condition over it only when a
# thread needs one. Where stdlib_compat.LIGHT_FUTURES, that lock is also its
# _condition: those functions only acquire and release it (in C, where a
# Condition's __enter__ is Python), and append their waiters under it; the
# Condition is made only when a thread blocks in result() or exception(). In the
# portable mode _condition is that Condition, made when first asked for. Either
# way the future reads its own done state without the lock (a done future never
# changes).
DONE = frozenset({CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED})
CANCELLED_STATES = frozenset({CANCELLED, CANCELLED_AND_NOTIFIED})

if TYPE_CHECKING:  # for annotations only: a Protocol costs import time
    from typing import Protocol

    class _Tracker(Protocol):
        """What counts the futures of an executor (``counts.Counts``): the future
        calls :meth:`ended` itself, as it is resolved, and :meth:`record_end`
        afterwards while ``metrics`` is not ``None``."""

        @property
        def metrics(self) -> object: ...

        def ended(self, failed: bool, cancelled: bool) -> None: ...

        def record_end(self, future: ResolvableFuture[Any]) -> None: ...


# A done callback: a function of the future, or a proxy future that follows it
# (its _on_upstream_done is called, with no callback object made).
Callback = Union[Callable[[Future[Any]], object], "ResolvableFuture[Any]"]


class ResolvableFuture(Future[T]):
    """The standard future API over one lock, resolved at most once (the
    ``_try_*`` methods return ``False`` instead of raising
    :class:`~concurrent.futures.InvalidStateError` when another thread won the
    race), with done callbacks run outside every lock: the base of
    :class:`~fluent_executors.ProxyFuture`, the only class made of it.

    Type parameters:
        T: the type of the result.
    """

    # What counts this future in its executor's stats (``counts.Counts.adopt``), and
    # since when (read only while metrics are on).
    _tracker: _Tracker | None = None
    _tracked_since = 0.0

    # What result() and exception() raise once cancelled, if not a plain
    # CancelledError (a TimeoutCancelledError); a class default, so it costs a
    # future nothing until set.
    _cancel_reason: CancelledError | None = None

    # Whether the class overrides _on_resolved (set for each subclass): if not,
    # resolving does not call the hook.
    _has_on_resolved = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._has_on_resolved = cls._on_resolved is not ResolvableFuture._on_resolved

    def __init__(self, lock: threading.RLock | None = None) -> None:
        # Every field set here, ProxyFuture's too, even those that may never
        # change: an attribute that an instance sets later is slower to set and to
        # read. Future.__init__ is not called (see above).
        # Re-entrant, as the standard Future's: a signal handler that cancels or
        # resolves the future while its thread holds the lock (inside wait(), say)
        # must not deadlock. Or ``lock``: that of the one future this one will
        # follow (see wrapper.DelegatingExecutor._lock_to_share).
        if lock is None:
            lock = RLock()
        self._lock = lock
        if LIGHT_FUTURES:
            # What wait() and as_completed() take (see above); a type checker
            # reads Future's Condition, of which they use acquire, release and
            # "with".
            self._condition = lock  # type: ignore[assignment]
            # The waiters of wait() and as_completed(): none, the one (the common
            # case: no list per waited future), or a list of two or more (see
            # Waiters).
            self._waiter_entry: Waiter | list[Waiter] | None = None
        else:  # a list, as Future's; its _condition is made when first asked for
            self._waiter_entry = self._waiters = []
        # The Condition over the lock: made by the first thread that blocks in
        # result() or exception(), or (in the portable mode) that takes _condition.
        self._made_condition: threading.Condition | None = None
        self._state = PENDING
        self._result: T | None = None
        self._exception: BaseException | None = None
        # None, the one done callback, or a list of them (from the second on).
        self._done_callbacks: Callback | list[Callback] | None = None
        self._upstream: Future[Any] | None = None
        self._cancelling = False

    # Type checkers see the fields of Future that wait() and as_completed() use. At
    # run time, where LIGHT_FUTURES, _waiters is a property (every field of a future
    # is set in __init__: one set later would make the instance's __dict__); in the
    # portable mode _waiters is a list, and _condition a property: a standard
    # Condition over the future's lock, made on first use.
    if TYPE_CHECKING:
        _waiters: list[Waiter]

        def _on_upstream_done(self, upstream: Future[Any]) -> None:
            """What a follower does once the future it follows is done (a
            ProxyFuture's, the only class made of this one)."""

    elif LIGHT_FUTURES:
        # Waiters(self) on each read: the class itself as the getter, no frame
        # of a function of ours around the call.
        _waiters = property(Waiters)

    else:

        @property
        def _condition(self) -> threading.Condition:
            with self._lock:
                return self._made_condition or self._make_condition()

    def _make_condition(self) -> threading.Condition:
        """Make the Condition over the future's lock, once; with the lock held."""
        make = LightCondition if LIGHT_FUTURES else threading.Condition
        condition = self._made_condition = make(self._lock)
        return condition

    # -- the standard Future methods, over one Lock ---------------------------------

    def done(self) -> bool:
        """Return ``True`` if the future is resolved or cancelled."""
        return self._state in DONE

    def cancelled(self) -> bool:
        """Return ``True`` if the future is cancelled."""
        return self._state in CANCELLED_STATES

    def result(self, timeout: float | None = None) -> T:
        """Return the result, waiting up to ``timeout`` seconds (``None``: forever).

        Raises:
            concurrent.futures.CancelledError: the future is cancelled.
            concurrent.futures.TimeoutError: it is not done within ``timeout``.
            BaseException: the exception the future failed with.
        """
        if self._state not in DONE:
            self._wait(timeout)
        if self._state == FINISHED:
            exception = self._exception
            if exception is None:
                return self._result  # type: ignore[return-value]
            try:
                raise exception
            finally:
                del exception, self  # no reference cycle through the traceback
        raise self._cancelled_error()

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """Return the exception the future failed with (``None`` if it succeeded),
        waiting up to ``timeout`` seconds (``None``: forever).

        Raises:
            concurrent.futures.CancelledError: the future is cancelled.
            concurrent.futures.TimeoutError: it is not done within ``timeout``.
        """
        if self._state not in DONE:
            self._wait(timeout)
        if self._state == FINISHED:
            return self._exception
        raise self._cancelled_error()

    def _get_snapshot(self) -> tuple[bool, bool, T | None, BaseException | None]:
        """Return ``(done, cancelled, result, exception)`` at once: what Python
        3.15's asyncio reads of a concurrent future to copy its outcome
        (:func:`asyncio.wrap_future`, and so ``await``), as the standard
        ``Future._get_snapshot`` gives it; read without the lock, as a done future
        changes no more (``result`` and ``exception`` are set before ``_state``)."""
        state = self._state
        if state == FINISHED:
            return True, False, self._result, self._exception
        if state in CANCELLED_STATES:
            return True, True, None, None
        return False, False, None, None

    def _wait(self, timeout: float | None) -> None:
        """Wait until the future is done; raise TimeoutError after ``timeout``.

        A ``timeout`` beyond what a thread can wait (``math.inf`` among them) waits
        as long as needed, where the standard Future raises ``OverflowError``.
        """
        if timeout is not None and timeout > threading.TIMEOUT_MAX:
            timeout = None
        with self._lock:
            condition = self._made_condition or self._make_condition()
            if condition.wait_for(self.done, timeout):
                return
        raise FutureTimeoutError()

    def add_done_callback(self, fn: Callable[[Future[T]], object]) -> None:
        """Call ``fn(future)`` once the future is done (now, if it is done already).

        Callbacks run in the thread that resolves the future, in the order they were
        added, outside every lock; one that raises is logged and the others run.
        """
        if self._add_callback(fn):
            return
        try:
            fn(self)
        except BaseException as error:  # as Future does: log, go on
            escaped = contain(error, self)
            if escaped is not None:
                raise

    def _add_callback(self, entry: Callback) -> bool:
        """Add a done callback, or a follower to notify (a ProxyFuture); ``False``
        if the future is done already (and so nothing was added)."""
        with self._lock:
            if self._state in DONE:
                return False
            held = self._done_callbacks
            # The first one without a call (the common case: the one follower)
            self._done_callbacks = entry if held is None else one_more(held, entry)
            return True

    def set_result(self, result: T) -> None:
        """Resolve the future with ``result``.

        Raises:
            concurrent.futures.InvalidStateError: the future is already done.
        """
        if not self._try_set_result(result):
            raise InvalidStateError(f"{self._state}: {self!r}")

    def set_exception(self, exception: BaseException | None) -> None:
        """Fail the future with ``exception``.

        Raises:
            concurrent.futures.InvalidStateError: the future is already done.
        """
        if exception is None:  # Future allows it, and then reports success
            if not self._try_set_result(None):  # type: ignore[arg-type]
                raise InvalidStateError(f"{self._state}: {self!r}")
        elif not self._try_set_exception(exception):
            raise InvalidStateError(f"{self._state}: {self!r}")

    # -- resolving at most once -----------------------------------------------------

    def _try_set_result(self, result: T) -> bool:
        """Resolve with ``result``; ``False`` if the future was already done."""
        return self._try_resolve(FINISHED, result, None, "add_result")

    def _try_set_exception(
        self, exception: BaseException, traceback: TracebackType | None = None
    ) -> bool:
        """Fail with ``exception``; ``False`` if the future was already done."""
        if traceback is not None:
            exception = exception.with_traceback(traceback)
        return self._try_resolve(FINISHED, None, exception, "add_exception")

    def _try_cancel(self) -> bool:
        """Cancel without asking the hook; ``True`` if the future is now cancelled."""
        # The standard cancel() leaves the future in CANCELLED until an executor calls
        # set_running_or_notify_cancel(); until then wait() and as_completed() do not
        # see it. Nobody will call that for a proxy, so go straight to
        # CANCELLED_AND_NOTIFIED and notify the waiters here.
        resolved = self._try_resolve(
            CANCELLED_AND_NOTIFIED, None, None, "add_cancelled"
        )
        return resolved or self.cancelled()

    def _try_resolve(
        self, state: str, result: T | None, exception: BaseException | None, event: str
    ) -> bool:
        """Move to the done ``state`` with ``result`` or ``exception``, wake the
        waiters (``event`` names their method), forget the upstream, run the hooks
        (:meth:`_on_resolved`, then the metrics), then the done callbacks (each once, in
        the order added); ``False`` if the future was already done.

        The common case (no waiter, no hook, one follower) is one call here and one
        to the follower's ``_on_upstream_done``.
        """
        with self._lock:
            current = self._state
            # From PENDING to any done state; from RUNNING (a work item runs the
            # callable) only to FINISHED: a running callable cannot be cancelled.
            if current != PENDING and (current != RUNNING or state != FINISHED):
                return False
            self._result = result
            self._exception = exception
            self._state = state
            tracker = self._tracker
            if tracker is not None:  # counted before anyone sees the future done
                tracker.ended(exception is not None, state != FINISHED)
            if self._made_condition is not None or self._waiter_entry:
                self._wake(event)  # else nobody waits
        self._upstream = None
        if self._has_on_resolved:
            try:
                self._on_resolved()
            except Exception:  # a bug of ours; the callbacks must run all the same
                logger.exception("internal error resolving %r", self)
        if tracker is not None and tracker.metrics is not None:
            self._record_metrics(tracker)
        # Once done the list changes no more: add_done_callback() calls at once.
        callbacks = self._done_callbacks
        if callbacks is not None:
            self._done_callbacks = (
                None  # they may hold much; the done future needs none
            )
            if isinstance(callbacks, ResolvableFuture):  # one follower, the common case
                run_flat(callbacks._on_upstream_done, self)  # raises only what
                # contain() gave, as _run_callbacks would once done
            else:
                self._run_callbacks(callbacks)
        return True

    def _wake(self, event: str) -> None:
        """Wake the threads waiting for this future, now resolved: those in
        :meth:`result` or :meth:`exception` through the Condition, and call
        ``waiter.<event>(self)`` of each waiter of :func:`~concurrent.futures.wait`
        or :func:`~concurrent.futures.as_completed`. Called with ``_lock`` held.

        Both kinds add themselves under ``_lock``, so while there is neither a
        Condition nor a waiter nobody waits.
        """
        condition = self._made_condition
        if condition is not None:
            condition.notify_all()  # threads blocked in result() or exception()
        entry = self._waiter_entry
        if isinstance(entry, list):
            for waiter in entry:
                getattr(waiter, event)(self)
        elif entry is not None:
            getattr(entry, event)(self)

    def _record_metrics(self, tracker: _Tracker) -> None:
        """Once resolved, after :meth:`_on_resolved` and before the done
        callbacks: have ``tracker`` record the metrics of the future."""
        try:
            tracker.record_end(self)
        except Exception:  # a bug of ours; the callbacks must run all the same
            logger.exception("internal error resolving %r", self)

    def _run_callbacks(self, callbacks: Callback | list[Callback]) -> None:
        """Run the done callbacks of the resolved future, in order: a callable
        ``callback(self)``, a follower its ``_on_upstream_done(self)``. One that
        raises is logged and the others run; a ``KeyboardInterrupt`` or
        ``SystemExit`` in a user's thread is raised once all have run."""
        escaped = None
        for callback in callbacks if isinstance(callbacks, list) else [callbacks]:
            try:
                if isinstance(callback, ResolvableFuture):  # a follower (see _follow)
                    run_flat(callback._on_upstream_done, self)  # raises only what
                    # contain() gave
                else:
                    callback(self)
            except BaseException as error:  # as Future does: log, go on
                escaped = (
                    error
                    if isinstance(callback, ResolvableFuture)  # logged where raised
                    else contain(error, self)
                ) or escaped
        if escaped is not None:
            raise escaped

    def _on_resolved(self) -> None:
        """Called once, when the future is resolved, before its done callbacks;
        executors do their bookkeeping here. It must not raise."""

    def _cancelled_error(self) -> CancelledError:
        """The exception that ``result()`` and ``exception()`` of the cancelled
        future raise: a copy of its cancel reason, else a plain CancelledError."""
        reason = self._cancel_reason
        return CancelledError() if reason is None else copy.copy(reason)

    def set_running_or_notify_cancel(self) -> bool:
        """Mark the future as running, unless it is cancelled; for the executor
        that runs its callable, just before it calls it (as for a standard future).

        Returns:
            ``True`` if the callable must run (the future can no longer be
            cancelled), ``False`` if the future is cancelled (and its waiters have
            been told already).

        Raises:
            RuntimeError: the future is running or finished already.
        """
        with self._lock:
            state = self._state
            if state == PENDING:
                self._state = RUNNING
                return True
        if state in CANCELLED_STATES:
            return False
        raise RuntimeError(f"Future in unexpected state: {state}")
