"""The base of executors that queue submissions and pass them on to the delegate
later: ThrottleExecutor and RateLimitExecutor."""

from __future__ import annotations

import logging
import threading
from abc import abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from .callbacks import in_library_thread
from .fluent import Delegate, R
from .proxy import ProxyFuture
from .stdlib_compat import LOCK_FREE
from .wrapper import WrapperExecutor, shutdown_delegate

if TYPE_CHECKING:
    from .stats import QueueStats

T = TypeVar("T")
Prepared = TypeVar("Prepared")
Token = TypeVar("Token")


class _Job:
    """A callable waiting in the queue, with its arguments."""

    __slots__ = ("args", "fn", "kwargs")

    def __init__(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs


class _QueuedFuture(ProxyFuture[T]):
    """A future that waits in its executor's queue until it is passed on to the
    delegate; from then on it follows the delegate's future."""

    def __init__(self, executor: QueueingExecutor[Any, Any, Any]) -> None:
        super().__init__()
        self._executor = executor

    def _cancel_hook(self) -> bool:
        if self._executor._unqueue(self):
            return True
        if self._upstream is None:  # being passed on to the delegate right now
            return False
        return super()._cancel_hook()


class QueueingExecutor(WrapperExecutor[R], Generic[Prepared, Token, R]):
    """Queues submissions in order and passes each on to the delegate once
    :meth:`_admit` allows it (a submission that finds the queue empty and is
    admitted at once goes straight on, without a place in the queue).

    Subclasses decide when: :meth:`_admit` is asked, under the lock, whether the
    next queued callable may go to the delegate now; whenever that may have changed
    (a slot freed, a timer fired), they call :meth:`_pump`. :meth:`_pump` never
    recurses: a future completed from inside it only makes the running loop go on.

    Type parameters:
        Prepared: what :meth:`_prepare` returns for :meth:`_admit`.
        Token: what :meth:`_admit` returns for :meth:`_dispatched`.
        R: the result type of the futures (see :class:`FluentExecutor`).
    """

    # The class of the futures that submit() returns.
    _future_type: ClassVar[type[_QueuedFuture[Any]]] = _QueuedFuture

    def __init__(
        self,
        delegate: Delegate[Any],
        *,
        block: bool,
        logger: logging.Logger | None,
        name: str,
    ) -> None:
        super().__init__(delegate, logger=logger, name=name)
        if not isinstance(block, bool):
            raise TypeError(f"block must be a bool, got {type(block).__name__}")
        self._block = block
        # The lock guards the queue and the counts; the condition over it is for the
        # threads that wait (blocked submits, shutdown). Holding the lock, as most
        # paths do, costs less than entering the condition.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        # An OrderedDict as a FIFO queue: O(1) append, pop of the oldest, and
        # removal of any entry on cancel.
        self._queue: OrderedDict[_QueuedFuture[Any], _Job] = OrderedDict()
        self._waiters = 0  # threads in _cond.wait(): blocked submits and shutdowns
        # Callables taken from the queue whose delegate submit() has not returned:
        # the delegate must not be shut down under them.
        self._dispatching = 0
        self._deferred_shutdown: tuple[bool, bool] | None = None  # (wait, cancel)
        self._pumping = threading.local()

    # -- what subclasses define ------------------------------------------------------

    @abstractmethod
    def _prepare(self) -> Prepared:
        """Called without the lock before each :meth:`_admit`; its return value is
        passed to it (for reading user callables outside the lock)."""

    @abstractmethod
    def _admit(self, prepared: Prepared) -> Token | None:
        """Called under the lock while the queue is not empty: return a token (not
        ``None``) to pass the oldest callable on to the delegate now, or ``None``."""

    def _dispatched(self, token: Token, upstream: Future[Any] | None) -> None:
        """Called without the lock once the delegate's ``submit`` has returned
        ``upstream``, or raised (``upstream`` is ``None``)."""

    # -- submit -----------------------------------------------------------------------

    def _submit(
        self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ProxyFuture[T]:
        future: _QueuedFuture[T] = self._future_type(self)
        # The common case, an empty queue with room: straight to the delegate,
        # under one lock and without a place in the queue. Not from inside _pump
        # (a done callback): its loop passes the callable on next, rather than
        # nesting one dispatch in another.
        direct = not self._queue and not self._in_pump()
        prepared = self._prepare() if direct else None  # outside the lock
        token: Token | None = None
        with self._lock:
            self._check_open()
            asked = direct and not self._queue  # none queued since: none overtaken
            if asked:  # (if it raises, the submit does, nothing adopted or queued)
                token = self._admit(cast("Prepared", prepared))
            self._counts.adopt(future)
            if token is None:
                self._counts.queued(1)
                self._queue[future] = _Job(fn, args, kwargs)
            else:
                self._dispatching += 1
        if token is not None:
            self._pumping.active = True
            try:
                self._dispatch(future, token, fn, args, kwargs)
                while self._pump_one():  # what was queued meanwhile, in this thread
                    pass
            finally:
                self._pumping.active = False
        elif not asked:
            self._pump()
        # (else refused under the lock that queued it: whoever makes room next
        # pumps, and a pump now would only ask _prepare and _admit again.)
        # Blocking inside _pump (from a done callback) would stop the queue for good,
        # and blocking a thread of the library's (a rate limit or a retry passing
        # work on from the shared scheduler) would starve every other timer of the
        # process: the queue holds the callable instead, as without block.
        if self._block and not self._in_pump() and not in_library_thread():
            try:
                with self._cond:
                    self._waiters += 1
                    try:
                        while future in self._queue:
                            self._cond.wait()
                    finally:
                        self._waiters -= 1
            except BaseException:  # a KeyboardInterrupt, say: no future handed out
                future.cancel()  # so no job is left behind: out of the queue
                raise
        return future

    def _unqueue(self, future: _QueuedFuture[Any]) -> bool:
        """Remove ``future`` from the queue; ``False`` if it was not there."""
        with self._lock:
            if self._queue.pop(future, None) is None:
                return False
            self._counts.queued(-1)
            shutdown_args = self._after_unqueue()
        if shutdown_args is not None:
            shutdown_delegate(self._delegate, *shutdown_args)
        return True

    def _after_unqueue(self) -> tuple[bool, bool] | None:
        """Wake whoever waits for the queue to move; under the lock.

        Returns:
            The arguments of a deferred shutdown of the delegate, due now that the
            queue is empty: the caller does it once it has released the lock.
        """
        if self._waiters:
            self._cond.notify_all()
        if self._queue or self._dispatching or self._deferred_shutdown is None:
            return None
        shutdown_args, self._deferred_shutdown = self._deferred_shutdown, None
        return shutdown_args

    def stats(self) -> QueueStats:
        """What this executor has done with the futures its ``submit`` returned, and
        is doing now (see :meth:`FluentExecutor.stats
        <fluent_executors.FluentExecutor.stats>`; *pending* are the callables in
        its queue, *running* those passed on to the delegate and not done).

        Returns:
            A :class:`~fluent_executors.QueueStats`.

        .. versionadded:: 0.2.0
        """
        from .stats import QueueStats  # on first use: see stats.py

        fields = self._counts.fields()
        return QueueStats(**fields, queued=fields["pending"])

    # -- passing callables on to the delegate ---------------------------------------

    def _in_pump(self) -> bool:
        """Whether this thread is inside :meth:`_pump` (in a done callback)."""
        return getattr(self._pumping, "active", False)

    def _pump(self) -> None:
        """Pass queued callables on to the delegate for as long as admitted."""
        if not self._queue or self._in_pump():
            return  # nothing to pass on, or the loop up this thread's stack goes on
        self._pumping.active = True
        try:
            while self._pump_one():
                pass
        finally:
            self._pumping.active = False

    def _pump_one(self) -> bool:
        if not self._queue:  # unlocked: whoever queues next pumps next
            return False
        taken = self._take_admitted(self._prepare())
        if taken is None:
            return False
        if isinstance(taken, Exception):
            self._fail_queued(taken)
            return False
        future, token, job = taken
        self._dispatch(future, token, job.fn, job.args, job.kwargs)
        return True

    def _take_admitted(
        self, prepared: Prepared
    ) -> tuple[_QueuedFuture[Any], Token, _Job] | Exception | None:
        """Take the oldest queued callable off the queue if :meth:`_admit` admits
        it now (counted in ``_dispatching``); ``None`` if the queue is empty or it
        is not admitted; what ``_admit`` raised (a timer whose thread could not
        start) if it did."""
        with self._lock:
            if not self._queue:
                return None
            try:
                token = self._admit(prepared)
            except Exception as error:
                return error
            if token is None:
                return None
            future, job = self._queue.popitem(last=False)
            self._counts.queued(-1)
            self._dispatching += 1
            self._after_unqueue()  # wakes blocked submits; no shutdown is due yet
            return future, token, job

    def _fail_queued(self, error: Exception) -> None:
        """Fail every queued future with ``error``, raised by :meth:`_admit` as it
        set up what would pass them on later (a timer, whose thread could not
        start): nothing else would, and they would wait for ever. As for every
        thread of the library that cannot start, what it would have run fails, and
        the next submit tries again."""
        with self._lock:
            queued = list(self._queue)
        self._log_failure(
            logging.ERROR,
            "%s %r: could not wait for room to pass its queued callables on; "
            "failing %d futures",
            type(self).__name__,
            self.name,
            len(queued),
            error=error,
        )
        for future in queued:
            if self._unqueue(future):
                future._try_set_exception(error)

    def _dispatch(
        self,
        future: _QueuedFuture[Any],
        token: Token,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        """Pass ``fn(*args, **kwargs)`` on to the delegate, admitted with ``token``
        (counted in ``_dispatching`` by the caller); ``future`` follows its future,
        or fails with what its ``submit`` raised."""
        try:
            upstream = self._submit_to_delegate(fn, args, kwargs)
        except BaseException as error:
            self._log_failure(
                logging.WARNING,
                "%s %r: the delegate's submit() raised; failing the future",
                type(self).__name__,
                self.name,
            )
            self._dispatched(token, None)
            future._try_set_exception(error)
        else:
            self._dispatched(token, upstream)
            future._follow(upstream)
        finally:
            # Without the lock (a decrement is atomic: see counts) unless a thread
            # waits or the executor is shut down: a waiter counts itself, and
            # shutdown() sets _is_shutdown, under the lock before it reads
            # _dispatching, so either it reads this decrement, or this reads what
            # it set (and then takes the lock for a deferred shutdown).
            shutdown_args = None
            if LOCK_FREE:
                self._dispatching -= 1
                if self._waiters or self._is_shutdown:
                    with self._lock:
                        shutdown_args = self._after_unqueue()
            else:  # no GIL to make the decrement atomic (see stdlib_compat)
                with self._lock:
                    self._dispatching -= 1
                    shutdown_args = self._after_unqueue()
        if shutdown_args is not None:
            shutdown_delegate(self._delegate, *shutdown_args)

    # -- shutdown ---------------------------------------------------------------------

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting work; shut down the delegate once the queue is empty.

        Args:
            wait: if ``True``, return once every queued callable has been passed on
                and the delegate has been shut down with ``wait=True``. If
                ``False``, return at once; the delegate is shut down (without
                waiting) once the last queued callable has been passed on to it.
            cancel_futures: if ``True``, first cancel the queued futures, then shut
                down the delegate with ``cancel_futures=True``.

        Calling it more than once is harmless. New submits raise ``RuntimeError``.
        """
        with self._lock:
            self._is_shutdown = True
            queued = list(self._queue) if cancel_futures else []
        self._close_metrics()
        for future in queued:
            future.cancel()
        # Waiting inside _pump (from a done callback) would wait for ever; the
        # delegate is then shut down later, by the thread that empties the queue,
        # without waiting (which, from one of the delegate's threads, could not).
        waiting = wait and not self._in_pump()
        with self._cond:
            if waiting:
                self._waiters += 1
                try:
                    while self._queue or self._dispatching:
                        self._cond.wait()
                finally:
                    self._waiters -= 1
            elif self._queue or self._dispatching:
                self._deferred_shutdown = (False, cancel_futures)
                return
        shutdown_delegate(self._delegate, waiting, cancel_futures)
