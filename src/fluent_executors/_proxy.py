"""The proxy-future base class that every wrapper's futures share."""

from __future__ import annotations

import copy
import logging
import threading
from collections import deque
from collections.abc import Callable, Generator
from concurrent.futures import CancelledError, Future, InvalidStateError
from concurrent.futures import TimeoutError as FutureTimeoutError
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, Union, cast

from ._callbacks import contain, run_flat
from ._logging import ContainedLogger
from ._public import publish
from ._stdlib_compat import (
    CANCELLED,
    CANCELLED_AND_NOTIFIED,
    FINISHED,
    PENDING,
    RUNNING,
)
from ._stdlib_compat import Waiter as _Waiter

T = TypeVar("T")

logger = ContainedLogger(logging.getLogger(__name__))

# Creating its future is much of what a wrapper costs per call. Future.__init__ makes
# a Condition over an RLock, which binds five methods to each instance, and every
# method of Future takes that Condition through Python-level __enter__ calls: objects
# the garbage collector walks at each full collection, and calls that the threads of
# a pool contend for. A proxy future keeps the same fields (the module functions
# wait() and as_completed() read them) but guards them with one RLock (re-entrant,
# as the standard Future's lock is), which is also its _condition: those functions
# only acquire and release it (in C, where a Condition's __enter__ is Python), and
# append their waiters under it. It reads a
# done future without the lock (a done future never changes), and makes a Condition
# only when a thread blocks in result() or exception().
_DONE = frozenset({CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED})
_CANCELLED = frozenset({CANCELLED, CANCELLED_AND_NOTIFIED})


# Condition.__init__ binds the lock's methods to each instance, each looked up in a
# try statement. The Condition of a proxy future sets the fields that Condition's
# methods read directly: the RLock's acquire, release, _release_save,
# _acquire_restore and _is_owned, bound as Condition binds them (3.10 to 3.13;
# tests/test_future.py fails if a version's Condition has other fields).
class _LightCondition(threading.Condition):
    """A ``threading.Condition`` over a future's ``RLock``, made quickly."""

    def __init__(self, lock: Any) -> None:  # instead of Condition.__init__
        self._lock = lock
        self.acquire = lock.acquire  # type: ignore[method-assign]
        self.release = lock.release  # type: ignore[method-assign]
        self._release_save = lock._release_save
        self._acquire_restore = lock._acquire_restore
        self._is_owned = lock._is_owned
        self._waiters: deque[Any] = deque()


E = TypeVar("E")


def _one_more(held: E | list[E] | None, item: E) -> E | list[E]:
    """``held`` with ``item`` added after the rest: what a future holds of waiters
    or done callbacks, none (``None``), the one (never a list itself), or a list
    of two or more. A list is made from the second on: the common case of one
    costs none."""
    if held is None:
        return item
    if isinstance(held, list):
        held.append(item)
        return held
    return [held, item]


class _Waiters:
    """What a :class:`ProxyFuture`'s ``_waiters`` gives :func:`~concurrent.futures.wait`
    and :func:`~concurrent.futures.as_completed`: they only ``append`` a waiter to a
    future's list and ``remove`` it (the standard library's source, 3.10 to 3.13;
    tests/test_future.py fails if a version uses it otherwise), under the future's
    ``_condition``. A future waited on by one waiter holds it without a list: a list
    per waited future would be one more object for the garbage collector to walk.
    """

    __slots__ = ("_future",)

    def __init__(self, future: ProxyFuture[Any]) -> None:
        self._future = future

    def append(self, waiter: _Waiter) -> None:
        """Add ``waiter`` (one more call ``waiter.add_result(future)`` or the like
        once the future is resolved)."""
        future = self._future
        future._waiter_entry = _one_more(future._waiter_entry, waiter)

    def remove(self, waiter: _Waiter) -> None:
        """Remove ``waiter``; raise ``ValueError`` if it is not there, as a list
        does. (The message names no future: a future's repr takes its lock, which
        the caller holds.)"""
        future = self._future
        entry = future._waiter_entry
        if entry is waiter:
            future._waiter_entry = None
        elif isinstance(entry, list):
            entry.remove(waiter)
            if len(entry) < 2:  # back to none, or the one without a list
                future._waiter_entry = entry[0] if entry else None
        else:
            raise ValueError(f"{waiter!r} is not a waiter of the future")


def outcome(future: Future[T]) -> tuple[bool, BaseException | None, T]:
    """Return ``(cancelled, exception, result)`` of the done ``future``.

    A standard :class:`~concurrent.futures.Future` or a :class:`ProxyFuture` is read
    without taking its lock (a done future never changes); any other future through
    its public methods. ``result`` is ``None`` if it is cancelled or failed.
    """
    if type(future) is Future or isinstance(future, ProxyFuture):
        state = future._state
        if state == FINISHED:  # _result is a T unless there is an _exception
            return False, future._exception, cast("T", future._result)
        if state in _CANCELLED:
            return True, None, cast("T", None)
    if future.cancelled():
        return True, None, cast("T", None)
    exception = future.exception()
    if exception is not None:
        return False, exception, cast("T", None)
    return False, None, future.result()


if TYPE_CHECKING:  # for annotations only: a Protocol costs import time
    from typing import Protocol

    class _Tracker(Protocol):
        """What counts the futures of an executor (``_counts.Counts``): the future
        increments ``done`` and ``failed`` or ``cancelled`` itself, as it is resolved,
        and calls :meth:`record_end` afterwards while ``metrics`` is not ``None``."""

        done: int
        failed: int
        cancelled: int

        @property
        def metrics(self) -> object: ...

        def record_end(self, future: ProxyFuture[Any]) -> None: ...


# A done callback of a ProxyFuture: a function of the future, or a ProxyFuture
# that follows it (its _on_upstream_done is called, with no callback object made).
_Callback = Union[Callable[[Future[Any]], object], "ProxyFuture[Any]"]


class ProxyFuture(Future[T]):
    """A :class:`concurrent.futures.Future` that a wrapper executor resolves.

    It keeps the whole standard future API (``result``, ``exception``, ``cancel``,
    ``add_done_callback``, :func:`~concurrent.futures.wait`,
    :func:`~concurrent.futures.as_completed`) and adds what wrappers need:

    - it can *follow* an upstream future (the delegate's), taking on its outcome when
      the upstream is done, and cancelling the upstream when it is cancelled itself;
    - it resolves at most once: the ``_try_set_*`` methods return ``False`` instead of
      raising :class:`~concurrent.futures.InvalidStateError` when another thread won
      the race;
    - :meth:`cancel` asks a hook (``_cancel_hook``) before it agrees;
    - done callbacks run outside any lock of this library;
    - it can be awaited in a coroutine (``await future``) without blocking the
      event loop.

    A proxy future that follows an upstream one is never in the standard
    ``RUNNING`` state, so that ``cancel()`` stays possible for as long as the hook
    allows it; :meth:`running` reports whether the work behind it is under way
    instead. One that an executor's work item runs (the library's thread pool)
    enters it through :meth:`set_running_or_notify_cancel`, as a standard future
    does, and can then no longer be cancelled.

    Type parameters:
        T: the type of the result.

    Subclasses override ``_cancel_hook``, ``_on_upstream_done`` and ``_is_running``
    as needed. A subclass whose upstream future comes later than its creation (a
    queued submit) must override ``_cancel_hook``: by default a future with no
    upstream agrees to every cancel. Users never create one directly.
    """

    # What counts this future in its executor's stats (``_counts.Counts.adopt``), and
    # since when (read only while metrics are on).
    _tracker: _Tracker | None = None
    _tracked_since = 0.0

    # What result() and exception() raise once cancelled, if not a plain
    # CancelledError (a TimeoutCancelledError); a class default, so it costs a
    # future nothing until set.
    _cancel_reason: CancelledError | None = None

    # Set by _cancel_or_defer, under the lock, while a cancel() is in progress:
    # that cancel() tries once more as it ends. A class default, as above.
    _cancel_again = False

    # Whether the class overrides _on_resolved (set for each subclass): if not,
    # resolving does not call the hook.
    _has_on_resolved = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._has_on_resolved = cls._on_resolved is not ProxyFuture._on_resolved

    def __init__(self) -> None:  # Future.__init__ is what this avoids (see above)
        # Every field set here, even those that may never change: an attribute
        # that an instance sets later is slower to set and to read.
        # Re-entrant, as the standard Future's: a signal handler that cancels or
        # resolves the future while its thread holds the lock (inside wait(),
        # say) must not deadlock.
        lock = self._lock = threading.RLock()
        # What wait() and as_completed() take (see above); a type checker reads
        # Future's Condition, of which they use acquire, release and "with".
        self._condition = lock  # type: ignore[assignment]
        self._state = PENDING
        self._result: T | None = None
        self._exception: BaseException | None = None
        # None, the one done callback, or a list of them (from the second on).
        self._done_callbacks: _Callback | list[_Callback] | None = None
        self._upstream: Future[Any] | None = None
        self._cancelling = False
        self._made_condition: threading.Condition | None = None  # see _wait
        # The waiters of wait() and as_completed(): none, the one (the common case:
        # no list per waited future), or a list of two or more (see _Waiters).
        self._waiter_entry: _Waiter | list[_Waiter] | None = None

    # Type checkers see the field of Future that wait() and as_completed() use; at
    # run time it is a property (every field of a future is set in __init__: one set
    # later would make the instance's __dict__).
    if TYPE_CHECKING:
        _waiters: list[_Waiter]
    else:

        @property
        def _waiters(self) -> _Waiters:
            return _Waiters(self)

    # -- the standard Future methods, over one Lock ---------------------------------

    def done(self) -> bool:
        """Return ``True`` if the future is resolved or cancelled."""
        return self._state in _DONE

    def cancelled(self) -> bool:
        """Return ``True`` if the future is cancelled."""
        return self._state in _CANCELLED

    def result(self, timeout: float | None = None) -> T:
        """Return the result, waiting up to ``timeout`` seconds (``None``: forever).

        Raises:
            concurrent.futures.CancelledError: the future is cancelled.
            concurrent.futures.TimeoutError: it is not done within ``timeout``.
            BaseException: the exception the future failed with.
        """
        if self._state not in _DONE:
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
        if self._state not in _DONE:
            self._wait(timeout)
        if self._state == FINISHED:
            return self._exception
        raise self._cancelled_error()

    def _wait(self, timeout: float | None) -> None:
        """Wait until the future is done; raise TimeoutError after ``timeout``.

        A ``timeout`` beyond what a thread can wait (``math.inf`` among them) waits
        as long as needed, where the standard Future raises ``OverflowError``.
        """
        if timeout is not None and timeout > threading.TIMEOUT_MAX:
            timeout = None
        with self._lock:  # the Condition is made once, over this lock
            condition = self._made_condition
            if condition is None:
                condition = self._made_condition = _LightCondition(self._lock)
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

    def _add_callback(self, entry: _Callback) -> bool:
        """Add a done callback, or a follower to notify (a ProxyFuture); ``False``
        if the future is done already (and so nothing was added)."""
        with self._lock:
            if self._state in _DONE:
                return False
            held = self._done_callbacks
            # The first one without a call (the common case: the one follower)
            self._done_callbacks = entry if held is None else _one_more(held, entry)
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

    # -- following an upstream future ---------------------------------------------

    def _follow(self, upstream: Future[Any]) -> None:
        """Take on ``upstream``'s outcome when it is done; cancel it with this one.

        Once this future is resolved it forgets ``upstream``: the upstream's done
        callbacks refer to this future, so keeping it would make a reference cycle
        of every chain, freed only by the garbage collector.
        """
        self._upstream = upstream
        if not isinstance(upstream, ProxyFuture):
            upstream.add_done_callback(self._upstream_done)
        elif not upstream._add_callback(self):  # no bound method: see _try_resolve
            self._upstream_done(upstream)

    def _upstream_done(self, upstream: Future[Any]) -> None:
        run_flat(self._on_upstream_done, upstream)

    def _on_upstream_done(self, upstream: Future[Any]) -> None:
        """Called once ``upstream`` is done; by default copies its outcome."""
        self._try_copy(upstream)

    def _try_copy(self, source: Future[Any]) -> bool:
        """Resolve like the done future ``source``, unless already resolved."""
        if isinstance(source, ProxyFuture) and source._state == FINISHED:
            exception = source._exception  # (the common case, in one call)
            if exception is None:
                return self._try_resolve(FINISHED, source._result, None, "add_result")
            return self._try_resolve(FINISHED, None, exception, "add_exception")
        cancelled, exception, result = outcome(source)
        if cancelled:
            reason = getattr(source, "_cancel_reason", None)
            if reason is not None and not self.done():
                self._cancel_reason = reason
            return self._try_cancel()
        if exception is not None:
            return self._try_set_exception(exception)
        return self._try_set_result(result)

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
        (:meth:`_on_resolved`, the metrics), then the done callbacks (each once, in
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
                tracker.done += 1
                if exception is not None:
                    tracker.failed += 1
                elif state != FINISHED:
                    tracker.cancelled += 1
            if self._made_condition is not None or self._waiter_entry is not None:
                self._wake(event)  # else nobody waits
        self._upstream = None
        if self._has_on_resolved or (
            tracker is not None and tracker.metrics is not None
        ):
            self._run_hooks()
        # Once done the list changes no more: add_done_callback() calls at once.
        callbacks = self._done_callbacks
        if callbacks is not None:
            self._done_callbacks = (
                None  # they may hold much; the done future needs none
            )
            if isinstance(callbacks, ProxyFuture):  # one follower, the common case
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
        if condition is not None and condition._waiters:  # type: ignore[attr-defined]
            condition.notify_all()  # threads blocked in result() or exception()
        entry = self._waiter_entry
        if isinstance(entry, list):
            for waiter in entry:
                getattr(waiter, event)(self)
        elif entry is not None:
            getattr(entry, event)(self)

    def _run_hooks(self) -> None:
        """Once resolved, before the done callbacks: :meth:`_on_resolved`, then the
        metrics' tracker."""
        try:
            if self._has_on_resolved:
                self._on_resolved()
            tracker = self._tracker
            if tracker is not None and tracker.metrics is not None:
                tracker.record_end(self)
        except Exception:  # a bug of ours; the callbacks must run all the same
            logger.exception("internal error resolving %r", self)

    def _run_callbacks(self, callbacks: _Callback | list[_Callback]) -> None:
        """Run the done callbacks of the resolved future, in order: a callable
        ``callback(self)``, a follower its ``_on_upstream_done(self)``. One that
        raises is logged and the others run; a ``KeyboardInterrupt`` or
        ``SystemExit`` in a user's thread is raised once all have run."""
        escaped = None
        for callback in callbacks if isinstance(callbacks, list) else [callbacks]:
            try:
                if isinstance(callback, ProxyFuture):  # a follower (see _follow)
                    run_flat(callback._on_upstream_done, self)  # raises only what
                    # contain() gave
                else:
                    callback(self)
            except BaseException as error:  # as Future does: log, go on
                escaped = (
                    error
                    if isinstance(callback, ProxyFuture)  # logged where it was raised
                    else contain(error, self)
                ) or escaped
        if escaped is not None:
            raise escaped

    def _on_resolved(self) -> None:
        """Called once, when the future is resolved, before its done callbacks;
        executors do their bookkeeping here. It must not raise."""

    # -- cancel -----------------------------------------------------------------------

    def cancel(self) -> bool:
        """Cancel the future if the work behind it can still be stopped.

        Returns:
            ``True`` if the future is cancelled (now or before), ``False`` if it is
            already resolved, if the wrapper refuses (for example the delegate's
            future is running), or if another ``cancel()`` is in progress on it.
        """
        refused = self._begin_cancel()
        if refused is not None:
            return refused
        # A chain of futures that cancel by cancelling their upstream (f_map's,
        # say) is walked in a loop, not a call per link: a chain of 100,000 would
        # pass the interpreter's recursion limit. Each link is marked as being
        # cancelled on the way down, and ends its cancel on the way back up, from
        # the first upstream, with what the link below it decided.
        chain: list[ProxyFuture[Any]] = [self]
        link: ProxyFuture[Any] = self
        try:
            while True:
                upstream = link._upstream
                if not (
                    type(link)._cancel_hook is _DEFAULT_CANCEL_HOOK
                    and isinstance(upstream, ProxyFuture)
                    and type(upstream).cancel is _DEFAULT_CANCEL
                ):
                    allowed = link._cancel_hook()
                    break
                refused = upstream._begin_cancel()
                if refused is not None:
                    allowed = refused
                    break
                chain.append(upstream)
                link = upstream
        except BaseException:
            for link in chain:
                link._end_cancel()
            raise
        for link in reversed(chain):
            again = link._end_cancel()
            allowed = (allowed and link._try_cancel()) or (again and link.cancel())
        return allowed

    def _begin_cancel(self) -> bool | None:
        """Mark the future as being cancelled, and return ``None``; or return what
        ``cancel()`` returns at once: it is done, running, or being cancelled."""
        with self._lock:
            if self._state in _DONE:
                return self._state in _CANCELLED
            if self._cancelling or self._state == RUNNING:
                return False
            self._cancelling = True
        return None

    def _end_cancel(self) -> bool:
        """Unmark the future as being cancelled; return whether another
        ``cancel()`` asked to try again meanwhile (see :meth:`_cancel_or_defer`)."""
        with self._lock:
            self._cancelling = False
            again = self._cancel_again  # asked for while the hook ran
            if again:
                self._cancel_again = False
        return again

    def _cancel_or_defer(self) -> bool:
        """``cancel()``, for a caller that has just changed what the hook decides
        on (a poll future entering polling after ``shutdown(cancel_futures=True)``).

        A ``cancel()`` in progress may have asked its hook before that change, and
        makes this one return ``False`` at once: it is then asked to try once more
        as it ends, and the cancel is not lost. A ``cancel()`` that starts after
        this call sees the change already. Returns what ``cancel()`` returns here
        (``False`` when deferred).

        In that race a poll future's cancel function may be asked twice for one
        task: once by the hook in progress, if it found the callable done and the
        cancel function refused, and once more by the retry.
        """
        with self._lock:
            if self._cancelling:
                self._cancel_again = True
                return False
        return self.cancel()

    def __repr__(self) -> str:
        """The standard future's repr (state, and result type or exception), and
        the name of the executor that made the future, where there is one."""
        name = self._made_by()
        text = super().__repr__()
        return text if name is None else f"{text[:-1]} executor={name!r}>"

    def _made_by(self) -> str | None:
        """The name of the executor that made this future; ``None`` if none
        (a combinator's future). Read from what the future holds already: a future
        must not keep an executor alive for its repr."""
        name = getattr(getattr(self, "_executor", None), "name", None)
        return name if isinstance(name, str) else None

    def _cancelled_error(self) -> CancelledError:
        """The exception that ``result()`` and ``exception()`` of the cancelled
        future raise: a copy of its cancel reason, else a plain CancelledError."""
        reason = self._cancel_reason
        return CancelledError() if reason is None else copy.copy(reason)

    def _cancel_with(self, reason: CancelledError) -> bool:
        """``cancel()``, and once cancelled have ``result()`` and ``exception()``
        raise ``reason`` (a :class:`~fluent_executors.TimeoutCancelledError`), here
        and in the futures that follow this one."""
        self._cancel_reason = reason
        if self.cancel():
            return True
        if not self.cancelled():  # refused: the future goes on
            self._cancel_reason = None
        return False

    def _cancel_hook(self) -> bool:
        """Decide whether ``cancel()`` may proceed; runs outside every lock.

        By default it cancels the upstream future (if any) and agrees only if that
        worked. It must not raise.
        """
        upstream = self._upstream
        return upstream is None or upstream.cancel()

    # -- running ----------------------------------------------------------------------

    def running(self) -> bool:
        """Return ``True`` if the work behind the future is under way."""
        state = self._state
        return state == RUNNING or (state not in _DONE and self._is_running())

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
        if state in _CANCELLED:
            return False
        raise RuntimeError(f"Future in unexpected state: {state}")

    def _is_running(self) -> bool:
        """Whether the work is under way, asked only while the future is not done."""
        upstream = self._upstream
        return upstream is not None and upstream.running()

    # -- asyncio ----------------------------------------------------------------------

    def __await__(self) -> Generator[Any, None, T]:
        """Wait for the outcome in a coroutine, without blocking the event loop.

        ``await future`` returns the result or raises the exception; a cancelled
        future raises :class:`asyncio.CancelledError`. Cancelling the awaiting task
        cancels this future (like :func:`asyncio.wrap_future`, which it uses).

        Raises:
            RuntimeError: no event loop is running in this thread.
        """
        import asyncio  # here: importing the library must not import asyncio

        return asyncio.wrap_future(self, loop=asyncio.get_running_loop()).__await__()


_DEFAULT_CANCEL = ProxyFuture.cancel
_DEFAULT_CANCEL_HOOK = ProxyFuture._cancel_hook


publish("fluent_executors", ProxyFuture)
