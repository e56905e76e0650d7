"""ProxyFuture: the future of every wrapper, which follows an upstream future and
cancels it (on :class:`~_fluent_executors.resolvable.ResolvableFuture`, the
standard future API over one lock)."""

from __future__ import annotations

from collections.abc import Generator
from concurrent.futures import CancelledError, Future
from typing import Any, TypeVar

from .callbacks import run_flat
from .handoff import Handoff
from .public import publish
from .resolvable import CANCELLED_STATES, DONE, ResolvableFuture
from .stdlib_compat import FINISHED, RUNNING, done_outcome

T = TypeVar("T")


def outcome(future: Future[T]) -> tuple[bool, BaseException | None, T]:
    """Return ``(cancelled, exception, result)`` of the done ``future``.

    A :class:`ProxyFuture` or a :class:`~_fluent_executors.handoff.Handoff` is
    read without taking its lock (a done future never changes); any other future
    as ``stdlib_compat.done_outcome`` reads it.
    ``result`` is ``None`` if it is cancelled or failed.
    """
    if isinstance(future, (ProxyFuture, Handoff)):
        state = future._state
        # (No typing.cast: a call at run time, and this runs per future per layer)
        if state == FINISHED:  # _result is a T unless there is an _exception
            return False, future._exception, future._result  # type: ignore[return-value]
        if state in CANCELLED_STATES:
            return True, None, None  # type: ignore[return-value]
    return done_outcome(future)


class ProxyFuture(ResolvableFuture[T]):
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

    # Set by _cancel_or_defer, under the lock, while a cancel() is in progress:
    # that cancel() tries once more as it ends. A class default: it costs a future
    # nothing until set.
    _cancel_again = False

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
            if self._state in DONE:
                return self._state in CANCELLED_STATES
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
        return state == RUNNING or (state not in DONE and self._is_running())

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
