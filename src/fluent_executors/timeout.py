"""TimeoutExecutor: cancel the futures that are not done in time."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from _fluent_executors.counts import event_count
from _fluent_executors.errors import TimeoutCancelledError
from _fluent_executors.fluent import Delegate, R, SameResult
from _fluent_executors.logging import trace
from _fluent_executors.proxy import ProxyFuture
from _fluent_executors.scheduler import DeadlineQueue, TimerHandle, call_later
from _fluent_executors.wrapper import (
    WrapperExecutor,
    check_non_negative,
    check_submittable,
)

if TYPE_CHECKING:
    from _fluent_executors.stats import TimeoutStats

__all__ = ["TimeoutExecutor"]

T = TypeVar("T")
P = ParamSpec("P")


class _TimeoutFuture(ProxyFuture[T]):
    """Follows the delegate's future; tries to cancel itself when its time is up."""

    # Where its deadline is: in its executor's queue (the executor's own timeout),
    # or, for another timeout of submit_timeout, a scheduler entry of its own.
    _deadlines: DeadlineQueue | None = None
    _timer: TimerHandle | None = None

    def __init__(
        self,
        executor: TimeoutExecutor[Any],
        timeout: float,
        lock: threading.RLock | None,
    ) -> None:
        super().__init__(lock)
        self._executor = executor
        self._timeout = timeout

    def _arm(self) -> None:
        """Schedule :meth:`_expire` in :attr:`_timeout` seconds, unless done."""
        timer = call_later(self._timeout, self._expire, may_block=True)
        with self._lock:  # against _try_resolve, which sets the state under it
            self._timer = timer
            done = self.done()
        if done:  # resolved before the timer was set: _on_resolved missed it
            timer.cancel()

    def _on_resolved(self) -> None:
        deadlines = self._deadlines
        if deadlines is not None:
            deadlines.discard()
            return
        timer = self._timer
        if timer is not None:
            timer.cancel()

    def _expire(self) -> None:
        """Runs in a worker thread of the scheduler once the timeout has passed."""
        if self.done():  # in time after all, while the callback waited for a worker
            return
        self._executor._timed_out()
        name = self._executor._name
        cancelled = self._cancel_with(TimeoutCancelledError(self._timeout, name))
        trace(
            self._executor._logger,
            "timeout executor %r: future not done after %s s; %s",
            name,
            self._timeout,
            "cancelled" if cancelled else "cancel refused, left to finish",
        )


class TimeoutExecutor(WrapperExecutor[R]):
    """An executor whose futures are cancelled if not done within a timeout.

    Each callable is submitted to the *delegate* executor at once. If the future
    is not done ``timeout`` seconds after :meth:`submit`, one attempt is made to
    :meth:`~concurrent.futures.Future.cancel` it, which cancels the delegate's
    future: that works while the callable is still queued (or, for a
    :class:`~fluent_executors.PollExecutor` delegate, through its cancel function).
    If the delegate refuses, the future is left to finish as it would have.

    The timeouts of every executor share one scheduler thread,
    ``fluent-executors-scheduler``, which keeps a heap of deadlines: there is no
    thread per executor or per future. The futures of the executor's own timeout
    come due in the order they were submitted: the executor keeps them in a FIFO
    and has one entry in the heap, its earliest deadline, whatever the number of
    futures pending; a future done in time is dropped from the FIFO lazily, in O(1)
    amortised. A future of :meth:`submit_timeout` with another timeout has a heap
    entry of its own, dropped once it is done. The cancel happens in one of that
    thread's workers, ``fluent-executors-scheduler-worker`` (about a millisecond
    late), and so do the done callbacks of the future it cancels; so a slow cancel
    (a poll executor's cancel function, say) holds up no other deadline.

    Args:
        delegate: the executor that runs the submitted callables.
        timeout: seconds from submit after which a future not done is cancelled;
            ``math.inf`` never cancels.
        logger: where to log; default
            ``logging.getLogger("fluent_executors.timeout")``.
        name: the executor's name, used in log messages.

    Raises:
        TypeError: ``delegate`` has no ``submit`` method; ``timeout`` is not a real
            number; ``name`` is not a ``str``.
        ValueError: ``timeout`` is negative or NaN.
    """

    def __init__(
        self,
        delegate: Delegate[R],
        timeout: float,
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None:
        super().__init__(delegate, logger=logger, name=name)
        self._timeout = check_non_negative("timeout", timeout)
        # The deadlines of the futures of its own timeout, which come due in the
        # order of their submits: one scheduler entry for them all.
        self._deadlines = DeadlineQueue(self._timeout)
        self._timeout_count = event_count()  # timeouts fired (stats())
        self._open_metrics("timeout")

    def _wrapper_fields(self) -> dict[str, object]:
        return {"timeout": self.timeout}

    def _timed_out(self) -> None:
        """A timeout fired; its future is about to be cancelled."""
        self._timeout_count.add()
        metrics = self._counts.metrics
        if metrics is not None:
            metrics.timeout_fired()

    def stats(self) -> TimeoutStats:
        """What this executor has done with the futures its ``submit`` returned, and
        is doing now (see :meth:`FluentExecutor.stats
        <fluent_executors.FluentExecutor.stats>`), and how many timeouts fired.

        Returns:
            A :class:`~fluent_executors.TimeoutStats`.

        .. versionadded:: 0.2.0
        """
        # On first use: see _fluent_executors.stats.
        from _fluent_executors.stats import TimeoutStats

        return TimeoutStats(**self._counts.fields(), timeouts=self._timeout_count.value)

    @property
    def timeout(self) -> float:
        """The timeout of :meth:`submit`, in seconds (``float``)."""
        return self._timeout

    @overload
    def submit_timeout(
        self: TimeoutExecutor[SameResult],
        timeout: float,
        fn: Callable[P, T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> ProxyFuture[T]: ...

    @overload
    def submit_timeout(
        self,
        timeout: float,
        fn: Callable[P, object],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> ProxyFuture[R]: ...

    def submit_timeout(
        self, timeout: float, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> ProxyFuture[T] | ProxyFuture[R]:
        """Submit ``fn(*args, **kwargs)`` with a timeout of its own.

        Args:
            timeout: seconds from now after which the future, if not done, is
                cancelled; ``math.inf`` never cancels.
            fn: the callable.
            args: its positional arguments.
            kwargs: its keyword arguments.

        Returns:
            A ``Future[T]`` for a ``fn`` returning ``T`` (a ``Future[R]`` if the
            executor's result type ``R`` is not
            :class:`~fluent_executors.SameResult`), resolved like the delegate's
            future, or cancelled if it is not done in time and can be cancelled.

        Raises:
            TypeError: ``timeout`` is not a real number; ``fn`` is not callable,
                or is a coroutine function.
            ValueError: ``timeout`` is negative or NaN.
            RuntimeError: the executor has been shut down.
            Exception: whatever the delegate's ``submit`` raises.
        """
        timeout = check_non_negative("timeout", timeout)
        check_submittable(fn)
        return self._submit_in_context(self._submit, fn, args, kwargs, timeout)

    def _submit(
        self,
        fn: Callable[..., T],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        timeout: float | None = None,
    ) -> ProxyFuture[T]:
        """Submit ``fn``, cancelled after ``timeout`` seconds (default: the
        executor's)."""
        if timeout is None:
            timeout = self._timeout
        self._check_open()
        return self._timed(self._submit_to_delegate(fn, args, kwargs), timeout)

    def _resumed(self, future: ProxyFuture[Any]) -> ProxyFuture[Any]:
        return self._timed(future, self._timeout)

    def _timed(self, upstream: Future[T], timeout: float) -> ProxyFuture[T]:
        """A future of this executor following ``upstream``, the delegate's,
        cancelled after ``timeout`` seconds if not done."""
        future: _TimeoutFuture[T] = _TimeoutFuture(
            self, timeout, self._lock_to_share(upstream)
        )
        shared = timeout == self._timeout and timeout < math.inf
        if shared:  # the executor's own timeout: its FIFO of deadlines
            future._deadlines = self._deadlines  # before it can resolve
        self._counts.adopt(future)
        future._follow(upstream)
        try:
            if shared:
                self._deadlines.add(future)
            elif timeout < math.inf and not future.done():
                future._arm()
        except BaseException as error:  # the scheduler thread could not start
            self._log_failure(
                logging.ERROR,
                "timeout executor %r could not schedule a deadline; failing the future",
                self.name,
            )
            future._try_set_exception(error)  # with no deadline, it could hang
            upstream.cancel()  # (whether it still can is the delegate's call)
        return future
