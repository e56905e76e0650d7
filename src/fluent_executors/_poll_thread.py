"""The poll thread of a PollExecutor and its bookkeeping: which futures are
outstanding and being polled, when the next poll is due, and one poll round.

Contract: one ``_Poller`` per executor; its thread, started at the first future,
is the only caller of the poll function, never concurrently. A round takes the
descriptors that are due (all of them, but those deferred with
``PollDescriptor.defer`` until later), passes them to the poll function in batches
of at most ``max_batch`` (those longest since their last poll first), and waits for
the earliest of the delays returned and the first deferred descriptor's time. With
a ``poll_retry_policy``, an error of the poll function leaves the futures of that
call pending while the policy allows. User code (the poll and cancel functions, the
policy) runs outside the lock; the lock guards the bookkeeping only. A future
enters polling through a queue of arrivals that the delegate's threads append to
without the lock while a poll is scheduled, and that is emptied under it: by the
poll thread before each round and as it wakes, by a delegate's thread that finds
nothing else polled or no deadline, and by ``polled()`` (``start_polling``,
``_take_arrivals``). The futures taken in, and the list that a round passes to the
poll function, are kept by ``_polled.Polled``.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from . import _clock
from ._callbacks import mark_library_thread, must_reraise
from ._outstanding import Outstanding
from ._polled import Polled
from ._scheduler import call_later
from ._tracing import poll_call, poll_failed
from ._wrapper import check_non_negative, seconds_returned

if TYPE_CHECKING:
    from ._counts import Counts
    from ._retry_policy import RetryPolicy
    from .poll import CancelFn, PollDescriptor, PollFn, _PollFuture

# Logged when a cancel function raises; its first words are those of more-executors'
# message for the same event, which programs written for it may look for.
_CANCEL_FN_RAISED = (
    "Exception during cancel of a future of poll executor %r: its cancel function "
    "raised; the future is not cancelled"
)


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
        counts: Counts,
        *,
        poll_retry_policy: RetryPolicy | None = None,
        max_batch: int | None = None,
        poll_timeout: float | None = None,
    ) -> None:
        self._poll_timeout = poll_timeout
        self._loop: Any = None  # asyncio loop of async poll/cancel functions, if any
        # Answers of an async cancel function that the poll thread awaits next:
        # (the awaitable, what to call with its answer, a bool).
        self._cancels: list[tuple[Awaitable[object], Callable[[bool], object]]] = []
        self._poll_fn = poll_fn
        self._poll_retry_policy = poll_retry_policy
        self._max_batch = max_batch
        self._poll_failures = 0  # consecutive failed calls of the poll function
        self.any_deferred = False  # a descriptor was deferred: rounds filter
        # Until the first defer, every round passes every descriptor once (in one
        # call, or in calls of max_batch): PollDescriptor.polls and the time of the
        # last poll are then counted by rounds, not per descriptor and call.
        self.full_rounds = 0  # such rounds so far (under the lock)
        self._full_round_at = 0.0  # when the last one started
        self._counting_rounds = True
        self._cancel_fn = cancel_fn
        self._default_interval = default_interval
        self._logger = logger
        self._name = name
        self._counts = counts
        # The lock guards the bookkeeping; the poll thread waits on the Condition.
        # (Taken often, the lock is taken directly: a Condition's "with" is Python.)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._outstanding = Outstanding()  # submitted, not done
        self._polled = Polled(self._recover)  # delegate done (or attached), not done
        # Futures that entered polling and are not taken in yet: the delegate's
        # threads append to it without the lock (deque.append is atomic); they are
        # moved into _polled under the lock (_take_arrivals).
        self._arrivals: deque[PollDescriptor[Any]] = deque()
        self._fresh = 0  # taken in since the last round began: in no round yet
        self._wake = False  # poll at once: notify(), or a future arrived while idle
        self._deadline: float | None = None  # monotonic time of next poll; None: none
        self._stopping = False  # closed, and no future is outstanding: thread ends
        self._cancel_all = False  # shutdown(cancel_futures=True) was called
        self._thread: threading.Thread | None = None
        self._warned_bad_delay = False
        # The poll function changed its list behind its methods: None never,
        # True not logged yet, False logged.
        self._list_changed: bool | None = None

    # -- called from submitting threads and the delegate's threads --------------------

    def add(self, future: _PollFuture[Any]) -> None:
        """Count ``future`` as outstanding; start the poll thread at the first one.

        Raises:
            RuntimeError: the executor has been shut down, or the poll thread
                could not be started (the future is then not counted; the next
                call tries again).
        """
        self._outstanding.add(future)
        if self._thread is not None:
            return
        try:
            with self._lock:
                if self._thread is None:
                    thread = threading.Thread(
                        target=self._run,
                        name=f"fluent-executors-poll-{self._name}",
                        daemon=True,
                    )
                    thread.start()
                    self._thread = thread
        except BaseException:  # "can't start new thread"
            self._outstanding.discard(future)  # (outside the lock: see discard)
            raise

    def forget(self, future: _PollFuture[Any]) -> None:
        """Drop a done future from the bookkeeping (each future's ``_on_resolved``);
        its descriptor's ``polls`` stops counting rounds."""
        with self._lock:
            descriptor = future._descriptor
            if descriptor is not None:
                if self._polled.discard(descriptor):
                    self._cond.notify()  # the poll thread tidies the list
                future._descriptor = None  # no reference cycle
                rounds_from = descriptor._rounds_from
                if rounds_from is not None:  # its polls stop counting rounds
                    descriptor._polls += self.full_rounds - rounds_from
                    descriptor._rounds_from = None
        self._outstanding.discard(future)

    def start_polling(self, descriptor: PollDescriptor[Any]) -> None:
        """Add the future of ``descriptor`` to those being polled.

        While a poll is scheduled and others are polled, it takes no lock (the
        delegate's threads call it once per future, and would queue up on the
        poller's lock): the descriptor waits in the arrivals until it is taken in
        (by the poll thread, or by ``polled()``), and joins the next round. If
        nothing else was polled as it arrived, or the thread has no deadline, it
        is taken in at once, under the lock, and polled at once.
        """
        future = descriptor._future
        if future.done():  # cancelled meanwhile (rechecked as it is taken in)
            return
        descriptor._since = descriptor._last_polled = _clock.monotonic()
        future._descriptor = descriptor
        # The delegate's future is needed no more: cancel() reads the result
        # from the descriptor. (Not freed here: the delegate's future calls
        # this, so it lives until that call returns.)
        future._upstream = None
        # Nothing else polled, or no deadline: polled at once. (Looked at before
        # and after the append: the poll thread may take it in meanwhile.)
        at_once = not self._polled
        self._arrivals.append(descriptor)
        if at_once or self._deadline is None or not self._polled:
            with self._lock:
                self._take_arrivals()  # (another thread may have taken it in)
                self._wake_if_fresh()
        # It was running on the delegate when shutdown cancelled it, and that
        # cancel() was refused. It may still be in progress, its hook having looked
        # before the future entered polling: a plain cancel() here would then be
        # refused too, and the future polled on. _cancel_or_defer has that cancel()
        # try again as it ends, when it finds the future polled.
        if self._cancel_all:
            future._cancel_or_defer()

    def _take_arrivals(self) -> None:
        """Move the arrivals into the futures polled (under the lock), but those
        done meanwhile (their ``forget`` found nothing to drop), and count them
        in ``_fresh``. Whether they are polled at once is the caller's call."""
        arrivals, polled = self._arrivals, self._polled
        if not arrivals:
            return
        rounds_from = self.full_rounds if self._counting_rounds else None
        taken = 0
        while arrivals:
            descriptor = arrivals.popleft()
            future = descriptor._future
            if future.done():
                future._descriptor = None  # no reference cycle
                continue
            descriptor._rounds_from = rounds_from
            polled.add(descriptor)
            taken += 1
        self._fresh += taken

    def _wake_if_fresh(self) -> None:
        """Under the lock, for an arrival that found nothing else polled or no
        deadline: have the poll thread poll at once if futures taken in are in no
        round yet. (Called on the poll thread itself, from a poll function that
        calls ``stats()``, ``attach()`` or a sync delegate's ``submit``, it makes
        one more round after the current one.)"""
        if self._fresh:  # else a round that polls them has begun
            self._wake = True
            self._cond.notify()

    def polled(self) -> int:
        """The number of futures being polled now. Those that arrived are taken
        in first, and polled at once if nothing else was polled or there is no
        deadline (even if they arrived while others were polled that have ended
        since: without this call they would wait for the deadline)."""
        with self._lock:
            at_once = not self._polled or self._deadline is None
            self._take_arrivals()
            if at_once:
                self._wake_if_fresh()
            return len(self._polled)

    def notify(self) -> None:
        """Make the poll thread poll as soon as possible."""
        with self._cond:
            self._wake = True
            self._cond.notify()

    def close(self) -> None:
        """Refuse new futures and poll once more at once (the poll function may
        have asked to wait for this); the thread ends once none is outstanding."""
        self._outstanding.close()
        with self._cond:
            self._wake = True
            self._cond.notify()
        self._outstanding.finish(False, self._stop)

    def _stop(self) -> None:
        """End the poll thread: closed, and no future is outstanding any more."""
        with self._cond:
            self._stopping = True
            self._cond.notify()

    def cancel_all(self) -> None:
        """Cancel every outstanding future, now and as each one enters polling.

        Without a cancel function, a future being polled is cancelled locally:
        there is no remote work to cancel.
        """
        with self._lock:
            self._cancel_all = True
        for future in self._outstanding.close():
            future.cancel()

    def join(self) -> None:
        """Wait for the poll thread to end, unless called from it."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def run_cancel_fn(self, result: object, future: _PollFuture[Any]) -> bool:
        """Ask the cancel function to cancel the remote work behind ``result``;
        without one there is nothing remote to cancel, and the future is cancelled.

        An async cancel function's coroutine is awaited on the poll thread's event
        loop, between polls: another thread waits for its answer; the poll thread
        itself cannot, so there it returns ``False`` and cancels ``future`` once
        the answer is truthy.
        """
        if self._cancel_fn is None:
            return True
        try:
            answer = self._cancel_fn(result)
            if not isinstance(answer, Awaitable):
                return bool(answer)
            if threading.current_thread() is self._thread:
                self._await_cancel(answer, lambda ok: ok and future._try_cancel())
                return False
            reply: Future[bool] = Future()
            self._await_cancel(answer, reply.set_result)
            return reply.result()
        except BaseException as error:
            self._logger.exception(_CANCEL_FN_RAISED, self._name)
            if must_reraise(error):  # Ctrl-C in a user's thread
                raise
            return False

    def _await_cancel(
        self, answer: Awaitable[object], reply: Callable[[bool], object]
    ) -> None:
        """Have the poll thread await ``answer`` and call ``reply`` with it (with
        ``False`` at once if the thread has ended: no future is polled any more)."""
        with self._cond:
            thread = self._thread
            if thread is not None and thread.is_alive() and not self._stopping:
                self._cancels.append((answer, reply))
                self._cond.notify()
                return
        getattr(answer, "close", lambda: None)()  # a coroutine never awaited
        reply(False)

    # -- the poll thread ------------------------------------------------------------

    def _run(self) -> None:
        mark_library_thread()
        try:
            self._loop_polls()
        finally:
            with self._lock:  # none is left unless the thread failed: answer them
                cancels, self._cancels = self._cancels, []
            for answer, reply in cancels:
                getattr(answer, "close", lambda: None)()  # a coroutine never awaited
                reply(False)
            if self._loop is not None:  # of async poll or cancel functions
                self._loop.close()
                self._loop = None

    def _loop_polls(self) -> None:
        while True:
            self._warn_if_list_changed()
            with self._cond:
                self._take_in()
                while not self._due() and not self._cancels:
                    if self._stopping:
                        return
                    _clock.wait(self._cond, self._wait_timeout())
                    self._take_in()
                cancels, self._cancels = self._cancels, []
                batch: list[PollDescriptor[Any]] = []
                due = self._due()
                full = not self.any_deferred  # every descriptor is due
                if due:
                    self._wake = False
                    if full:
                        self.full_rounds += 1
                        self._full_round_at = _clock.monotonic()
                    elif self._counting_rounds:  # descriptors count their own now
                        self._stop_counting_rounds()
                    batch = self._polled.begin_round()
                    self._fresh = 0
            if cancels:
                self._run_cancels(cancels)
            if not due:
                continue
            delay = self._round(batch, full)
            del batch  # not kept alive while the thread waits
            with self._lock:
                self._polled.end_round()
                self._deadline = (
                    _clock.monotonic() + delay if delay < math.inf else None
                )
                self._take_in()

    def _take_in(self) -> None:
        """The poll thread takes the arrivals in (under the lock), and cuts the
        descriptors of futures done since the last round out of the list. Those
        in no round yet (taken in by polled() too) are polled at once if it has
        no deadline, else at the next round. (An arrival that found nothing else
        polled has woken the thread itself: ``start_polling``.)"""
        self._take_arrivals()
        self._polled.tidy()
        if self._fresh and self._deadline is None:
            self._wake = True

    def _round(self, batch: list[PollDescriptor[Any]], full: bool) -> float:
        """Poll the descriptors of ``batch`` that are due, in calls of at most
        ``max_batch``; return the delay until the next round. A ``full`` round
        (nothing was ever deferred) passes every one, in the order of arrival, which
        is also the order of their last polls, and counts nothing per descriptor;
        a descriptor whose future another thread resolves meanwhile may still be
        passed, as in any call (resolving it again is harmless)."""
        if full:
            size = self._max_batch
            if size is None or size >= len(batch):  # one call: no copy of the batch
                delays = [self._polled.lend(self._poll, batch)]
            else:
                delays = [
                    self._poll(batch[start : start + size])
                    for start in range(0, len(batch), size)
                ]
        else:
            now = _clock.monotonic()
            due = [d for d in batch if d._not_before <= now]
            delays = [self._next_deferred(now)]
            if self._max_batch is not None:
                due.sort(key=_since_last_poll)
            size = self._max_batch or len(due) or 1
            for start in range(0, len(due), size):
                chunk = [d for d in due[start : start + size] if not d._future.done()]
                if not chunk:
                    continue
                polled_at = _clock.monotonic()
                for descriptor in chunk:
                    descriptor._polls += 1
                    descriptor._last_polled = polled_at
                delays.append(self._poll(chunk))
        if self.any_deferred:  # the poll function may have deferred some
            delays.append(self._next_deferred(_clock.monotonic()))
        return min(delays, default=math.inf)

    def _stop_counting_rounds(self) -> None:
        """Turn the counts of full rounds into each descriptor's own (under the
        lock): from now on rounds count per descriptor."""
        rounds, polled_at = self.full_rounds, self._full_round_at
        for descriptor in self._polled:
            rounds_from = descriptor._rounds_from
            if rounds_from is not None and rounds > rounds_from:
                descriptor._polls += rounds - rounds_from
                descriptor._last_polled = polled_at
            descriptor._rounds_from = None
        self._counting_rounds = False

    def _recover(self) -> list[PollDescriptor[Any]]:
        """Every descriptor taken in whose future is not done, from the futures
        outstanding (under the lock, on the poll thread): the poll function
        changed its list other than through the list's methods (logged once, by
        ``_warn_if_list_changed``, outside the lock)."""
        if self._list_changed is None:
            self._list_changed = True
        return [
            descriptor
            for future in self._outstanding.snapshot()
            if (descriptor := getattr(future, "_descriptor", None)) is not None
            and descriptor._slot >= 0
            and not descriptor._gone
        ]

    def _warn_if_list_changed(self) -> None:
        """Log, once, that the poll function changed its list behind its methods
        (outside the lock: a logging handler may call the executor)."""
        if self._list_changed:
            self._list_changed = False
            self._logger.warning(
                "poll function of poll executor %r changed its list of descriptors "
                "other than through the list's methods (list.sort(descriptors), "
                "C code); the executor makes its own list anew "
                "each time it finds that out (see the poll page, 'The list of "
                "descriptors'; warned once)",
                self._name,
            )

    def _next_deferred(self, now: float) -> float:
        """Seconds until the first deferred descriptor is due (``inf``: none)."""
        with self._lock:
            polled = list(self._polled)
        later = [d._not_before for d in polled if d._not_before > now]
        return min(later) - now if later else math.inf

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
        """Call the poll function once (under a poll span, with tracing on); return
        the delay until the next poll."""
        return poll_call(self._name, len(batch), functools.partial(self._call, batch))

    def _call(self, batch: list[PollDescriptor[Any]]) -> float:
        """Call the poll function once; return the delay until the next poll."""
        counts = self._counts
        start = time.perf_counter() if counts.metrics is not None else 0.0
        watchdog = None
        if self._poll_timeout is not None:
            watchdog = call_later(
                self._poll_timeout, functools.partial(self._overran, len(batch))
            )
        try:
            returned: object = self._poll_fn(batch)
            if isinstance(returned, Awaitable):  # an async poll function
                if watchdog is not None:  # an async call can be cancelled
                    watchdog.cancel()
                returned = self._await(returned)
        except BaseException as error:
            if watchdog is not None:
                watchdog.cancel()
            counts.poll_called(start, True)
            poll_failed(error)
            return self._poll_failed(batch, error)
        if watchdog is not None:
            watchdog.cancel()
        self._poll_failures = 0
        counts.poll_called(start, False)
        return self._delay(returned)

    def _run_cancels(
        self, cancels: list[tuple[Awaitable[object], Callable[[bool], object]]]
    ) -> None:
        """Await the answers of an async cancel function, concurrently, and reply
        with each (``False`` for one that raises, which is logged)."""
        import asyncio

        async def answer(awaitable: Awaitable[object]) -> bool:
            try:
                return bool(await awaitable)
            except BaseException:  # contained: the poll thread serves every future
                self._logger.exception(_CANCEL_FN_RAISED, self._name)
                return False

        async def run() -> list[bool]:
            return list(await asyncio.gather(*(answer(a) for a, _ in cancels)))

        answers = self._event_loop().run_until_complete(run())
        for (_, reply), ok in zip(cancels, answers, strict=True):
            try:
                reply(ok)
            except BaseException:  # a done callback of the cancelled future
                self._logger.exception("cancelling a future of %r failed", self._name)

    def _event_loop(self) -> Any:
        """The poll thread's event loop, made at the first async call."""
        import asyncio

        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop

    def _await(self, awaitable: Awaitable[object]) -> object:
        """Run what an async poll function returned on the poll thread's event
        loop (made at the first one, closed as the thread ends), at most
        ``poll_timeout`` seconds.

        Raises:
            TimeoutError: it took longer than ``poll_timeout``; it is cancelled.
        """
        import asyncio

        loop = self._event_loop()
        timeout = self._poll_timeout

        async def run() -> object:
            if timeout is None:
                return await awaitable
            try:
                return await asyncio.wait_for(awaitable, timeout)
            except asyncio.TimeoutError:
                raise TimeoutError(
                    f"poll function of poll executor {self._name!r} took longer "
                    f"than its poll_timeout of {timeout} s; cancelled"
                ) from None

        return loop.run_until_complete(run())

    def _overran(self, size: int) -> None:
        """The poll function has run longer than ``poll_timeout`` (on the
        scheduler's thread, once per call): a sync call cannot be interrupted, so
        it is counted, then logged."""
        self._counts.poll_overran()
        self._logger.warning(
            "poll function of poll executor %r has run for more than %s s with %d "
            "futures and cannot be interrupted; give its requests a timeout",
            self._name,
            self._poll_timeout,
            size,
        )

    def _poll_failed(
        self, batch: list[PollDescriptor[Any]], error: BaseException
    ) -> float:
        """After the poll function raised ``error``: leave the futures of ``batch``
        pending if the poll retry policy says so, else fail them; return the delay
        until the next poll."""
        self._poll_failures += 1
        retry_in = self._retry_delay(error)
        if retry_in is not None:
            self._logger.warning(
                "poll function of poll executor %r raised (%d in a row); the %d "
                "futures it was given stay pending, next poll in %s s",
                self._name,
                self._poll_failures,
                len(batch),
                retry_in,
                exc_info=True,
            )
            return retry_in
        self._poll_failures = 0
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

    def _retry_delay(self, error: BaseException) -> float | None:
        """What the poll retry policy says of the latest failure: the delay before
        the next poll, or ``None`` to fail the futures. A policy that raises, or
        gives a bad delay, is logged and read as ``None``."""
        policy = self._poll_retry_policy
        if policy is None:
            return None
        failed: Future[Any] = Future()
        failed.set_exception(error)
        try:
            if not policy.should_retry(self._poll_failures, failed):
                return None
            return check_non_negative(
                "the delay sleep_time returned",
                policy.sleep_time(self._poll_failures, failed),
            )
        except BaseException:  # in the poll thread: contained
            self._logger.exception(
                "poll retry policy %r of poll executor %r raised; failing the "
                "futures of the poll",
                policy,
                self._name,
            )
            return None

    def _delay(self, returned: object) -> float:
        if returned is None:
            return self._default_interval
        delay = seconds_returned(returned)  # negative: 0; beyond a float: inf
        if delay is not None:
            return delay
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


def _since_last_poll(descriptor: PollDescriptor[Any]) -> float:
    return descriptor._last_polled
