"""The proxy-future base class that every wrapper's futures share."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Callable, Generator
from concurrent.futures import Future, InvalidStateError
from concurrent.futures._base import CANCELLED_AND_NOTIFIED, PENDING
from functools import partial
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")

logger = logging.getLogger(__name__)

# Resolving a future runs the done callbacks of the futures that follow it, which
# resolve them and run the callbacks of the futures that follow those, and so on: a
# chain of n futures (say, a loop written with f_flat_map) would nest n levels deep,
# and past the interpreter's recursion limit the standard Future logs the
# RecursionError and leaves the rest of the chain pending forever. So callbacks
# run through run_flat nest at most this deep; deeper ones are queued, and run by
# the outermost one, in the same thread, before it returns. (A callback that deep
# which waits for a queued one would wait forever: callbacks must not block.)
_MAX_NESTING = 50


class _Nesting(threading.local):
    def __init__(self) -> None:
        self.depth = 0
        self.queued: deque[Callable[[], object]] = deque()


_nesting = _Nesting()


def run_flat(callback: Callable[[Future[Any]], object], future: Future[Any]) -> None:
    """Run the done callback ``callback(future)`` so that a chain of futures, each
    resolved by a callback of the previous one, resolves without deep recursion,
    however long. Call it from a done callback; it never raises."""
    nesting = _nesting
    if nesting.depth >= _MAX_NESTING:
        nesting.queued.append(partial(callback, future))
        return
    nesting.depth += 1
    try:
        callback(future)
    except Exception:  # as Future does for its callbacks: log, go on
        logger.exception("exception calling callback for %r", future)
    finally:
        if nesting.depth == 1:
            _run_queued(nesting.queued)
        nesting.depth -= 1


def _run_queued(queued: deque[Callable[[], object]]) -> None:
    while queued:
        call = queued.popleft()
        try:
            call()
        except Exception:  # as Future does for its callbacks: log, go on
            logger.exception("exception calling callback %r", call)


# Creating its future is much of what a wrapper costs per call, and the Condition of
# Future.__init__ binds five methods to each instance: objects that the garbage
# collector then walks at every full collection, which makes the cost per future grow
# with the number of futures alive. ProxyFuture sets up the same fields with a
# Condition that reaches its lock through methods, where this Python's Future and
# Condition have exactly the fields expected (3.10 to 3.13 have); anywhere else it
# calls Future.__init__.
_LIGHT_INIT = set(vars(Future())) == {
    "_condition",
    "_state",
    "_result",
    "_exception",
    "_waiters",
    "_done_callbacks",
} and set(vars(threading.Condition())) == {
    "_lock",
    "_waiters",
    "acquire",
    "release",
    "_release_save",
    "_acquire_restore",
    "_is_owned",
}


class _LightCondition(threading.Condition):
    """A ``threading.Condition`` over a new ``RLock``, with no bound method per
    instance (see ``_LIGHT_INIT``)."""

    def __init__(self) -> None:  # Condition.__init__ is what this avoids
        self._lock = threading.RLock()
        self._waiters: deque[Any] = deque()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def _release_save(self) -> Any:
        return self._lock._release_save()  # type: ignore[attr-defined]

    def _acquire_restore(self, state: Any) -> None:
        self._lock._acquire_restore(state)  # type: ignore[attr-defined]

    def _is_owned(self) -> bool:
        return self._lock._is_owned()  # type: ignore[attr-defined,no-any-return]


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

    A proxy future is never in the standard ``RUNNING`` state, so that ``cancel()``
    stays possible for as long as the hook allows it; :meth:`running` reports
    whether the work behind it is under way instead.

    Type parameters:
        T: the type of the result.

    Subclasses override ``_cancel_hook``, ``_on_upstream_done`` and ``_is_running``
    as needed. A subclass whose upstream future comes later than its creation (a
    queued submit) must override ``_cancel_hook``: by default a future with no
    upstream agrees to every cancel. Users never create one directly.

    .. versionadded:: 0.1.0
    """

    def __init__(self) -> None:
        if _LIGHT_INIT:
            self._condition: threading.Condition = _LightCondition()
            self._state = PENDING
            self._result = None
            self._exception = None
            self._waiters = []
            self._done_callbacks: list[Callable[[Future[T]], object]] = []
        else:
            super().__init__()
        self._upstream: Future[Any] | None = None
        self._cancelling = False

    # -- following an upstream future ---------------------------------------------

    def _follow(self, upstream: Future[Any]) -> None:
        """Take on ``upstream``'s outcome when it is done; cancel it with this one.

        Once this future is resolved it forgets ``upstream``: the upstream's done
        callbacks refer to this future, so keeping it would make a reference cycle
        of every chain, freed only by the garbage collector.
        """
        self._upstream = upstream
        upstream.add_done_callback(self._upstream_done)

    def _upstream_done(self, upstream: Future[Any]) -> None:
        run_flat(self._on_upstream_done, upstream)

    def _on_upstream_done(self, upstream: Future[Any]) -> None:
        """Called once ``upstream`` is done; by default copies its outcome."""
        self._try_copy(upstream)

    def _try_copy(self, source: Future[Any]) -> bool:
        """Resolve like the done future ``source``, unless already resolved."""
        if source.cancelled():
            return self._try_cancel()
        exception = source.exception()
        if exception is not None:
            return self._try_set_exception(exception)
        return self._try_set_result(source.result())

    # -- resolving at most once -----------------------------------------------------

    def _try_set_result(self, result: T) -> bool:
        """Resolve with ``result``; ``False`` if the future was already done."""
        try:
            self.set_result(result)
        except InvalidStateError:
            return False
        self._upstream = None
        return True

    def _try_set_exception(
        self, exception: BaseException, traceback: TracebackType | None = None
    ) -> bool:
        """Fail with ``exception``; ``False`` if the future was already done."""
        if traceback is not None:
            exception = exception.with_traceback(traceback)
        try:
            self.set_exception(exception)
        except InvalidStateError:
            return False
        self._upstream = None
        return True

    def _try_cancel(self) -> bool:
        """Cancel without asking the hook; ``True`` if the future is now cancelled."""
        # The standard cancel() leaves the future in CANCELLED until an executor calls
        # set_running_or_notify_cancel(); until then wait() and as_completed() do not
        # see it. Nobody will call that for a proxy, so notify the waiters here, before
        # the done callbacks run (one of them may well call wait()).
        with self._condition:
            if self.done():
                return self.cancelled()
            self._state = CANCELLED_AND_NOTIFIED
            for waiter in self._waiters:
                waiter.add_cancelled(self)
            self._condition.notify_all()
        self._upstream = None
        # Future's own hook (not in typeshed): runs callbacks and logs their errors.
        self._invoke_callbacks()  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]
        return True

    # -- cancel -----------------------------------------------------------------------

    def cancel(self) -> bool:
        """Cancel the future if the work behind it can still be stopped.

        Returns:
            ``True`` if the future is cancelled (now or before), ``False`` if it is
            already resolved, if the wrapper refuses (for example the delegate's
            future is running), or if another ``cancel()`` is in progress on it.
        """
        with self._condition:
            if self.done():
                return self.cancelled()
            if self._cancelling:
                return False
            self._cancelling = True
        try:
            allowed = self._cancel_hook()
        finally:
            with self._condition:
                self._cancelling = False
        return allowed and self._try_cancel()

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
        return not self.done() and self._is_running()

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

        .. versionadded:: 0.1.0
        """
        return asyncio.wrap_future(self, loop=asyncio.get_running_loop()).__await__()
