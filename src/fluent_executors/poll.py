"""PollExecutor: futures of remote tasks, resolved through one poll function."""

from __future__ import annotations

import logging
import math
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import CancelledError, Executor, Future
from types import TracebackType
from typing import Any, Generic, TypeVar, overload

from . import _clock
from ._fluent import FluentExecutor, R, SameResult
from ._metrics import ExecutorMetrics
from ._proxy import ProxyFuture, mark_library_thread, must_reraise, outcome
from ._wrapper import WrapperExecutor, check_callable, check_non_negative

__all__ = ["CancelFn", "PollDescriptor", "PollExecutor", "PollFn"]

T = TypeVar("T")

PollFn = Callable[[list["PollDescriptor[Any]"]], "float | None"]
"""A poll function: takes the descriptors of every future being polled and returns
the delay in seconds until the next poll, or ``None`` for the executor's default."""

CancelFn = Callable[[Any], object]
"""A cancel function: takes the delegate's result and returns a truthy value if the
remote work was cancelled."""

_OMITTED: Any = object()


class PollDescriptor(Generic[T]):
    """One future being polled, as the poll function sees it.

    The poll function receives a list of these and resolves each future by calling
    :meth:`yield_result` or :meth:`yield_exception` on its descriptor, or leaves it
    pending until a later poll by doing nothing. A descriptor may also be resolved
    from any other thread (for example on an external event); the first resolution
    wins and later ones are ignored. The executor creates descriptors; users never
    construct one.

    Type parameters:
        T: the type of the delegate's result, which is also the type of the
        executor future's result.
    """

    __slots__ = ("_future", "_result")

    def __init__(self, future: _PollFuture[T], result: T) -> None:
        self._future = future
        self._result = result

    @property
    def result(self) -> T:
        """The delegate future's result (type ``T``), which drives the poll;
        typically the identifier of a remote task."""
        return self._result

    @overload
    def yield_result(self) -> None: ...

    @overload
    def yield_result(self, result: T) -> None: ...

    def yield_result(self, result: T = _OMITTED) -> None:
        """Resolve the future successfully.

        Args:
            result: the value the future resolves with (type ``T``). If omitted,
                the future resolves with :attr:`result`, the delegate's value.

        Does nothing if the future is already resolved or cancelled.
        """
        self._future._try_set_result(self._result if result is _OMITTED else result)

    def yield_exception(
        self, exception: BaseException, traceback: TracebackType | None = None
    ) -> None:
        """Make the future fail with ``exception``.

        Args:
            exception: the exception that the future's ``result()`` raises.
            traceback: a traceback to attach to ``exception`` (kept for compatibility
                with more-executors; exceptions carry their own traceback).

        Raises:
            TypeError: ``exception`` is not an exception instance.

        Does nothing if the future is already resolved or cancelled.
        """
        if not isinstance(exception, BaseException):
            raise TypeError(
                "exception must be an exception instance, "
                f"got {type(exception).__name__}"
            )
        self._future._try_set_exception(exception, traceback)

    def __repr__(self) -> str:
        return f"<PollDescriptor result={self._result!r} future={self._future!r}>"


class _PollFuture(ProxyFuture[T]):
    """Follows the delegate's future, then is polled until the poll function resolves
    it."""

    def __init__(self, poller: _Poller) -> None:
        super().__init__()
        self._poller = poller
        self._descriptor: PollDescriptor[T] | None = None

    def _on_upstream_done(self, upstream: Future[Any]) -> None:
        cancelled, exception, result = outcome(upstream)
        if cancelled or exception is not None:
            self._try_copy(upstream)
        else:
            self._poller.start_polling(PollDescriptor(self, result))

    def _on_resolved(self) -> None:
        self._poller.forget(self)

    def _cancel_hook(self) -> bool:
        delegate = self._upstream
        if delegate is None:  # resolved since cancel() looked
            return False
        try:
            if delegate.cancel():  # still queued on the delegate
                return True
            if not delegate.done():  # running on the delegate: nothing remote yet
                return False
            cancelled, exception, result = outcome(delegate)
        except CancelledError:  # cancelled meanwhile: this future follows it
            return True
        if cancelled:
            return True
        if exception is not None:  # this future fails with it
            return False
        return self._poller.run_cancel_fn(result)

    def _is_running(self) -> bool:
        # Only while the delegate runs it: once polled it can still be cancelled,
        # so it is not running in the sense of Future.running().
        delegate = self._upstream
        return delegate is not None and delegate.running()


class _Poller:
    """The bookkeeping and the poll thread of one PollExecutor.

    It holds no reference to the executor, so that an executor nobody references can
    be collected; the thread then ends once no future is outstanding.
    """

    def __init__(
        self,
        poll_fn: PollFn,
        cancel_fn: CancelFn | None,
        default_interval: float,
        logger: logging.Logger,
        name: str,
        metrics: ExecutorMetrics | None = None,
    ) -> None:
        self._poll_fn = poll_fn
        self._cancel_fn = cancel_fn
        self._default_interval = default_interval
        self._logger = logger
        self._name = name
        self._metrics = metrics
        self._cond = threading.Condition(threading.Lock())
        # Dicts as insertion-ordered sets: O(1) add and remove, ordered snapshots.
        self._outstanding: dict[Future[Any], None] = {}  # submitted, not done
        self._polled: dict[PollDescriptor[Any], None] = {}  # delegate done, not done
        # A dict does not shrink as entries are removed, and copying it costs its
        # largest size: it is rebuilt once most of the entries added are gone, so
        # that a poll stays O(futures passed to it).
        self._polled_added = 0
        self._wake = False  # poll at once: notify(), or a future arrived while idle
        self._deadline: float | None = None  # monotonic time of next poll; None: none
        self._closing = False  # shutdown, or the executor was collected
        self._cancel_all = False  # shutdown(cancel_futures=True) was called
        self._thread: threading.Thread | None = None
        self._warned_bad_delay = False

    # -- called from submitting threads and the delegate's threads --------------------

    def add(self, future: _PollFuture[Any]) -> None:
        """Count ``future`` as outstanding; start the poll thread at the first one.

        Raises:
            RuntimeError: the executor has been shut down.
        """
        with self._cond:
            if self._closing:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._outstanding[future] = None
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run,
                    name=f"fluent-executors-poll-{self._name}",
                    daemon=True,
                )
                self._thread.start()

    def forget(self, future: Future[Any]) -> None:
        """Drop a done future from the bookkeeping (each future's ``_on_resolved``)."""
        with self._cond:
            self._outstanding.pop(future, None)
            if isinstance(future, _PollFuture) and future._descriptor is not None:
                self._polled.pop(future._descriptor, None)
                future._descriptor = None  # it refers to the future: no cycle
            if self._closing and not self._outstanding:
                self._cond.notify()

    def start_polling(self, descriptor: PollDescriptor[Any]) -> None:
        """Add the future of ``descriptor`` to those being polled."""
        future = descriptor._future
        with self._cond:
            if future.done():
                return
            future._descriptor = descriptor
            idle = not self._polled
            self._polled[descriptor] = None
            self._polled_added += 1
            if idle or self._deadline is None:
                self._wake = True
                self._cond.notify()
            cancel_now = self._cancel_all
        if cancel_now:  # it was running on the delegate when shutdown cancelled
            future.cancel()

    def notify(self) -> None:
        """Make the poll thread poll as soon as possible."""
        with self._cond:
            self._wake = True
            self._cond.notify()

    def close(self) -> None:
        """Refuse new futures and poll once more at once (the poll function may
        have asked to wait for this); the thread ends once none is outstanding."""
        with self._cond:
            self._closing = True
            self._wake = True
            self._cond.notify()

    def cancel_all(self) -> None:
        """Cancel every outstanding future, now and as each one enters polling.

        Without a cancel function, a future being polled is cancelled locally:
        there is no remote work to cancel.
        """
        with self._cond:
            self._cancel_all = True
            futures = list(self._outstanding)
        for future in futures:
            future.cancel()

    def outstanding(self) -> list[Future[Any]]:
        """A snapshot of the futures not yet done."""
        with self._cond:
            return list(self._outstanding)

    def join(self) -> None:
        """Wait for the poll thread to end, unless called from it."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def run_cancel_fn(self, result: object) -> bool:
        """Ask the cancel function to cancel the remote work behind ``result``;
        without one there is nothing remote to cancel, and the future is cancelled."""
        if self._cancel_fn is None:
            return True
        try:
            return bool(self._cancel_fn(result))
        except BaseException as error:
            self._logger.exception(
                "cancel function of poll executor %r raised; the future is not "
                "cancelled",
                self._name,
            )
            if must_reraise(error):  # Ctrl-C in a user's thread
                raise
            return False

    # -- the poll thread ------------------------------------------------------------

    def _run(self) -> None:
        mark_library_thread()
        while True:
            with self._cond:
                while not self._due():
                    if self._closing and not self._outstanding:
                        return
                    _clock.wait(self._cond, self._wait_timeout())
                self._wake = False
                batch = list(self._polled)
                if self._polled_added > 2 * len(batch) + 64:
                    self._polled = dict.fromkeys(batch)
                    self._polled_added = len(batch)
            delay = self._poll(batch)
            del batch  # not kept alive while the thread waits
            with self._cond:
                self._deadline = (
                    _clock.monotonic() + delay if delay < math.inf else None
                )

    def _due(self) -> bool:
        if not self._polled:
            return False
        if self._wake:
            return True
        return self._deadline is not None and _clock.monotonic() >= self._deadline

    def _wait_timeout(self) -> float | None:
        if not self._polled or self._deadline is None:
            return None
        return max(self._deadline - _clock.monotonic(), 0.0)

    def _poll(self, batch: list[PollDescriptor[Any]]) -> float:
        """Call the poll function once; return the delay until the next poll."""
        metrics = self._metrics
        start = time.perf_counter() if metrics is not None else 0.0
        try:
            returned = self._poll_fn(batch)
        except BaseException as error:
            if metrics is not None:
                metrics.poll(time.perf_counter() - start, True)
            self._logger.warning(
                "poll function of poll executor %r raised; failing the %d futures "
                "it was given",
                self._name,
                len(batch),
                exc_info=True,
            )
            for descriptor in batch:
                descriptor._future._try_set_exception(error)
            return self._default_interval
        if metrics is not None:
            metrics.poll(time.perf_counter() - start, False)
        return self._delay(returned)

    def _delay(self, returned: object) -> float:
        if returned is None:
            return self._default_interval
        if (
            isinstance(returned, (int, float))
            and not isinstance(returned, bool)
            and not math.isnan(returned)
        ):
            return max(float(returned), 0.0)
        if not self._warned_bad_delay:
            self._warned_bad_delay = True
            self._logger.warning(
                "poll function of poll executor %r returned %r, which is not a "
                "number of seconds; polling every %s s instead (warned once)",
                self._name,
                returned,
                self._default_interval,
            )
        return self._default_interval


class PollExecutor(WrapperExecutor[R]):
    """An executor whose futures are resolved by a poll function.

    Each callable is submitted to the *delegate* executor. When the delegate's
    future succeeds, the executor's future enters *polling*: one thread per executor
    calls ``poll_fn`` with a list of :class:`PollDescriptor`, one for each future
    being polled, so that one request per poll interval can check many remote tasks.
    The poll function resolves futures through their descriptors and returns the
    delay in seconds until the next poll:

    - ``None``: ``default_interval``;
    - a number: that many seconds; a negative one means at once, ``math.inf`` means
      not until :meth:`notify`, a new future or shutdown;
    - anything else (a ``bool``, a string, NaN): ignored, ``default_interval`` is
      used and a warning is logged once per executor.

    The poll function is called only while at least one future is being polled. A
    future that enters polling while none is polled is polled at once; otherwise it
    joins the next scheduled poll, so that a burst of futures is polled together.

    Errors:

    - the delegate's future fails: the executor's future fails with the same
      exception; the delegate's future is cancelled: so is the executor's;
    - ``poll_fn`` raises: every future it was given and has not resolved fails with
      that exception, a warning with the traceback is logged, and polling goes on
      after ``default_interval``;
    - ``cancel_fn`` raises: ``cancel()`` returns ``False`` and the error is logged
      with its traceback.

    Cancelling a future (:meth:`~concurrent.futures.Future.cancel`):

    - still queued on the delegate: the delegate's future is cancelled;
    - running on the delegate: refused (``False``); the cancel function is not called;
    - being polled: ``cancel_fn`` is called with the delegate's result; a truthy
      return value cancels the future. Without a ``cancel_fn`` there is nothing
      remote to cancel: the future is cancelled and leaves the poll list.

    ``running()`` is ``True`` only while the callable runs on the delegate; a future
    being polled can still be cancelled, so it is not running.

    The poll thread, named ``fluent-executors-poll-<name>``, is a daemon thread
    started at the first :meth:`submit`. It holds no reference to the executor: if
    the executor is garbage-collected without :meth:`shutdown`, the thread ends once
    no future is outstanding. The poll function should not hold a reference to its
    executor either, or :meth:`shutdown` is the only way to end the thread.

    Args:
        delegate: the executor that runs the submitted callables.
        poll_fn: the poll function, ``Callable[[list[PollDescriptor[Any]]],
            float | None]``; called from the poll thread, never concurrently.
        cancel_fn: the cancel function, ``Callable[[Any], object]``: called with the
            delegate's result, from the thread that calls ``cancel()``, at most once
            per successful cancel and never for a future that is already done.
        default_interval: seconds between polls when the poll function returns
            ``None``, raises, or returns something that is not a number.
        logger: where to log; default ``logging.getLogger("fluent_executors.poll")``.
        name: the executor's name, used in the poll thread's name and log messages.

    Raises:
        TypeError: ``delegate`` has no ``submit`` method; ``poll_fn`` or ``cancel_fn``
            is not callable; ``default_interval`` is not a real number; ``name`` is
            not a ``str``.
        ValueError: ``default_interval`` is negative or NaN.

    Type parameters:
        R: the result type of the futures: the delegate's, if it is a
            :class:`~fluent_executors.FluentExecutor`, else
            :class:`~fluent_executors.SameResult` (what the callable returns).
    """

    @overload
    def __init__(
        self,
        delegate: FluentExecutor[R],
        poll_fn: PollFn,
        cancel_fn: CancelFn | None = None,
        default_interval: float = 5.0,
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None: ...

    @overload
    def __init__(
        self: PollExecutor[SameResult],
        delegate: Executor,
        poll_fn: PollFn,
        cancel_fn: CancelFn | None = None,
        default_interval: float = 5.0,
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None: ...

    def __init__(
        self,
        delegate: Executor,
        poll_fn: PollFn,
        cancel_fn: CancelFn | None = None,
        default_interval: float = 5.0,
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None:
        super().__init__(delegate, logger=logger, name=name)
        check_callable("poll_fn", poll_fn)
        if cancel_fn is not None:
            check_callable("cancel_fn", cancel_fn)
        interval = check_non_negative("default_interval", default_interval)
        self._open_metrics("poll")
        self._poller = _Poller(
            poll_fn, cancel_fn, interval, self._logger, name, self._metrics
        )
        weakref.finalize(self, self._poller.close).atexit = False

    def _submit(
        self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ProxyFuture[T]:
        future: _PollFuture[T] = _PollFuture(self._poller)
        self._poller.add(future)
        try:
            delegate_future = self._submit_to_delegate(fn, *args, **kwargs)
        except BaseException:
            self._poller.forget(future)
            raise
        future._follow(delegate_future)
        if self._metrics is not None:
            self._metrics.track(future)
        return future

    def notify(self) -> None:
        """Run the poll function as soon as possible, earlier than scheduled.

        Useful when futures are resolved by a mixture of polling and external
        events. Safe to call from any thread, the poll function included.
        """
        self._poller.notify()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting work; shut down the delegate; poll until every future ends.

        Args:
            wait: if ``True``, return once every outstanding future is resolved and
                the poll thread has ended (not waited for when called from the poll
                thread itself, for example from the poll function).
            cancel_futures: if ``True``, first cancel every future not yet resolved:
                those queued on the delegate are cancelled there; those being polled
                through the cancel function, or without one, here alone (the remote
                work is left as it is); those running on the delegate as soon as
                they enter polling. A future whose cancel function refuses or raises
                is still polled until the poll function resolves it.

        Calling it more than once is harmless. New submits raise ``RuntimeError``.
        """
        self._poller.close()
        if cancel_futures:
            self._poller.cancel_all()
        super().shutdown(wait, cancel_futures=cancel_futures)
        if wait:
            self._poller.join()
