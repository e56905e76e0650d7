"""The thread driver of a PollExecutor: its poll thread, a thin loop around the poll
core (``core.PollCore``), which decides what each round polls and when.

Contract: one ``PollThread`` per executor; its thread, started at the first
future, is the only caller of the poll function, never concurrently, in one place
(:meth:`PollThread._poll`). The driver holds its lock around the core's
bookkeeping only (never around user code: the poll and cancel functions, the
policy); the thread waits on a Condition of that lock for the time the core
gives. A future enters polling through the core's arrivals without the lock while
a poll is scheduled (``start_polling``). The driver also runs what the core does
not: the clock, the thread, an event loop for async poll and cancel functions,
the ``poll_timeout`` watchdog, the counts and metrics of each call, the logging,
and failing the futures of a failed call when the core says so.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, cast

from .. import clock
from ..callbacks import mark_library_thread, must_reraise
from ..outstanding import Outstanding
from ..scheduler import call_later
from ..tracing import poll_call, poll_failed
from .driver import DriverBase
from .keeper import HELD, WAKE
from .reports import settle_failed_poll, warn_list_changed

if TYPE_CHECKING:
    from ..counts import Counts
    from .descriptor import PollDescriptor, PollFuture
    from .keeper import StoreKeeper
    from .settings import PollSettings

# Logged when a cancel function raises; its first words are those of more-executors'
# message for the same event, which programs written for it may look for.
_CANCEL_FN_RAISED = (
    "Exception during cancel of a future of poll executor %r: its cancel function "
    "raised; the future is not cancelled"
)


class PollThread(DriverBase):
    """The driver of one PollExecutor's polls: its bookkeeping's lock and its poll
    thread, around a :class:`~.core.PollCore`.

    It holds no reference to the executor, so that an executor nobody references can
    be collected; the thread then ends once no future is outstanding.
    """

    def __init__(
        self,
        settings: PollSettings,
        counts: Counts,
        keeper: StoreKeeper | None = None,
    ) -> None:
        super().__init__(settings, counts)
        # With a store: the records of the futures; the poll thread writes a
        # future's before it is polled (keeper.py).
        self.keeper = keeper
        self._loop: Any = None  # asyncio loop of async poll/cancel functions, if any
        # Answers of an async cancel function that the poll thread awaits next:
        # (the awaitable, what to call with its answer, a bool).
        self._cancels: list[tuple[Awaitable[object], Callable[[bool], object]]] = []
        self._outstanding = Outstanding()  # submitted, not done
        # The lock guards the core; the poll thread waits on the Condition.
        # (Taken often, the lock is taken directly: a Condition's "with" is Python.)
        self._cond = threading.Condition(self._lock)
        self._stopping = False  # closed, and no future is outstanding: thread ends
        self._cancel_all = False  # shutdown(cancel_futures=True) was called
        self._thread: threading.Thread | None = None

    # -- called from submitting threads and the delegate's threads --------------------

    def add(self, future: PollFuture[Any]) -> None:
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
                        name=f"fluent-executors-poll-{self.name}",
                        daemon=True,
                    )
                    thread.start()
                    self._thread = thread
        except BaseException:  # "can't start new thread"
            self._outstanding.discard(future)  # (outside the lock: see discard)
            raise

    def forget(
        self, future: PollFuture[Any], descriptor: PollDescriptor[Any] | None
    ) -> None:
        """Drop a done future, whose descriptor was ``descriptor``, from the
        bookkeeping (each future's ``_on_resolved``); its descriptor's ``polls``
        stops counting rounds."""
        if descriptor is not None:
            keeper = self.keeper
            with self._lock:
                tidy = self.core.forget(descriptor)
                # (keeper: its record goes at the thread's next sync)
                if tidy or (keeper is not None and keeper.forget(descriptor)):
                    self._cond.notify()  # the poll thread tidies the list
        self._outstanding.discard(future)

    def start_polling(
        self, future: PollFuture[Any], descriptor: PollDescriptor[Any]
    ) -> None:
        """Add ``future``, whose descriptor is ``descriptor``, to those being polled.

        While a poll is scheduled and others are polled, it takes no lock (the
        delegate's threads call it once per future, and would queue up on the
        lock): the descriptor waits in the core's arrivals until it is taken in
        (by the poll thread, or by ``polled()``), and joins the next round. If
        nothing else was polled as it arrived, or the thread has no deadline, it
        is taken in at once, under the lock, and polled at once.
        """
        if not future.enter_polling(descriptor):  # cancelled meanwhile
            return
        keeper = self.keeper
        if keeper is None:
            self._arrive(descriptor)
        else:
            queued = keeper.arrived(descriptor)
            if future.done():
                # Cancelled between enter_polling() and arrived(): its forget()
                # found nothing to drop, so this one drops the record (idempotent).
                if keeper.forget(descriptor):
                    with self._cond:
                        self._cond.notify()
                return
            if queued == WAKE:  # the poll thread writes its record, then polls it
                with self._cond:
                    self._cond.notify()
            elif queued == HELD:
                self._arrive(descriptor)
        # It was running on the delegate when shutdown cancelled it, and that
        # cancel() was refused. It may still be in progress, its hook having looked
        # before the future entered polling: a plain cancel() here would then be
        # refused too, and the future polled on. cancel_after_shutdown has that
        # cancel() try again as it ends, when it finds the future polled.
        if self._cancel_all:
            future.cancel_after_shutdown()

    def _arrive(self, descriptor: PollDescriptor[Any]) -> None:
        """``descriptor`` joins the core's arrivals (taken in at once if the core
        says so)."""
        core = self.core
        if core.arrive(descriptor, clock.monotonic()):
            with self._lock:
                if core.admit():  # (another thread may have taken it in)
                    self._cond.notify()

    def defer(self, entry: PollDescriptor[Any], delay: float) -> None:
        """Do not poll ``entry`` before ``delay`` seconds from now."""
        self.core.defer(entry, clock.monotonic() + delay)

    def age_of(self, entry: PollDescriptor[Any]) -> float:
        """Seconds since ``entry`` entered polling."""
        return self.core.age_of(entry, clock.monotonic())

    def polled(self) -> int:
        """The number of futures being polled now. Those that arrived are taken
        in first, and polled at once if nothing else was polled or there is no
        deadline (even if they arrived while others were polled that have ended
        since: without this call they would wait for the deadline)."""
        with self._lock:
            if self.core.admit(if_idle=True):
                self._cond.notify()
            return len(self.core)

    def notify(self) -> None:
        """Make the poll thread poll as soon as possible."""
        with self._cond:
            self.core.notify()
            self._cond.notify()

    def close(self) -> None:
        """Refuse new futures and poll once more at once (the poll function may
        have asked to wait for this); the thread ends once none is outstanding."""
        self._outstanding.close()
        self.notify()
        self._outstanding.finish(False, self._stop)

    def _stop(self) -> None:
        """End the poll thread: closed, and no future is outstanding any more."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
            started = self._thread is not None
        if not started and self.keeper is not None:  # no thread to close it
            self.keeper.close()

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

    def run_cancel_fn(self, result: object, future: PollFuture[Any]) -> bool:
        """Ask the cancel function to cancel the remote work behind ``result``;
        without one there is nothing remote to cancel, and the future is cancelled.

        An async cancel function's coroutine is awaited on the poll thread's event
        loop, between polls: another thread waits for its answer; the poll thread
        itself cannot, so there it returns ``False`` and cancels ``future`` once
        the answer is truthy.
        """
        if self.cancel_fn is None:
            return True
        try:
            answer = self.cancel_fn(result)
            if not isinstance(answer, Awaitable):
                return bool(answer)
            if threading.current_thread() is self._thread:
                self._await_cancel(answer, lambda ok: ok and future.cancel_now())
                return False
            reply: Future[bool] = Future()
            self._await_cancel(answer, reply.set_result)
            return reply.result()
        except BaseException as error:
            self._logger.exception(_CANCEL_FN_RAISED, self.name)
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
            try:
                if self.keeper is not None:  # the records of the futures done last
                    self.keeper.finish(clock.monotonic())
            finally:
                self._end()

    def _end(self) -> None:
        """The poll thread ends: answer the cancels left (none unless the thread
        failed), close the event loop."""
        with self._lock:
            cancels, self._cancels = self._cancels, []
        for answer, reply in cancels:
            getattr(answer, "close", lambda: None)()  # a coroutine never awaited
            reply(False)
        if self._loop is not None:  # of async poll or cancel functions
            self._loop.close()
            self._loop = None

    def _loop_polls(self) -> None:
        core, cond, keeper = self.core, self._cond, self.keeper
        while True:
            if core.list_changed():
                warn_list_changed(self._logger, self.name)
            if keeper is not None and keeper.due(clock.monotonic()):
                for descriptor in keeper.sync(clock.monotonic()):
                    self._arrive(descriptor)
            with cond:
                core.take_in()
                while not self._cancels:
                    now = clock.monotonic()
                    if core.due(now) and not (
                        keeper is not None and keeper.holds_rounds(now)
                    ):
                        break
                    if keeper is not None and keeper.due(now):
                        break
                    if self._stopping:
                        return
                    clock.wait(cond, self._wait_timeout())
                    core.take_in()
                cancels, self._cancels = self._cancels, []
                # No round while the store is due: a lease may have run out.
                polling = (
                    keeper is None or not keeper.renewal_due(clock.monotonic())
                ) and core.begin_round(clock.monotonic())
            if cancels:
                self._run_cancels(cancels)
            if not polling:
                continue
            while (batch := core.next_batch(clock.monotonic())) is not None:
                self._poll(batch)
            with self._lock:
                core.end_round(clock.monotonic())

    def _wait_timeout(self) -> float | None:
        """Seconds until the core's next round or the keeper's next sync (alone
        while the keeper holds the rounds back)."""
        now = clock.monotonic()
        keeper = self.keeper
        if keeper is not None and keeper.holds_rounds(now):
            return keeper.wait_timeout(now)
        timeout = self.core.wait_timeout(now)
        if keeper is not None:
            syncing = keeper.wait_timeout(now)
            if timeout is None or (syncing is not None and syncing < timeout):
                return syncing
        return timeout

    def _descriptors(self) -> list[PollDescriptor[Any]]:
        """The descriptors of the futures outstanding, from which the core makes
        its list anew (under the lock)."""
        return [
            descriptor
            for future in self._outstanding.snapshot()
            if (descriptor := cast("PollFuture[Any]", future).descriptor) is not None
        ]

    def _poll(self, batch: list[PollDescriptor[Any]]) -> None:
        """Call the poll function once with ``batch`` (the one place it is called,
        under a poll span if tracing is on) and tell the core how it went."""
        poll_call(self.name, len(batch), functools.partial(self._call, batch))

    def _call(self, batch: list[PollDescriptor[Any]]) -> None:
        """The work of :meth:`_poll`."""
        core, counts = self.core, self._counts
        start = time.perf_counter() if counts.metrics is not None else 0.0
        watchdog = None
        if self._poll_timeout is not None:
            watchdog = call_later(
                self._poll_timeout, functools.partial(self._overran, len(batch))
            )
        core.lending(batch)
        try:
            returned: object = self.poll_fn(batch)
            if isinstance(returned, Awaitable):  # an async poll function
                if watchdog is not None:  # an async call can be cancelled
                    watchdog.cancel()
                returned = self._await(returned)
        except BaseException as error:
            if watchdog is not None:
                watchdog.cancel()
            self._poll_called(start, True)
            poll_failed(error)
            settle_failed_poll(
                core, batch, error, clock.monotonic(), self._logger, self.name
            )
            return
        if watchdog is not None:
            watchdog.cancel()
        self._poll_called(start, False)
        self._returned(batch, returned)

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
                self._logger.exception(_CANCEL_FN_RAISED, self.name)
                return False

        async def run() -> list[bool]:
            return list(await asyncio.gather(*(answer(a) for a, _ in cancels)))

        answers = self._event_loop().run_until_complete(run())
        for (_, reply), ok in zip(cancels, answers, strict=True):
            try:
                reply(ok)
            except BaseException:  # a done callback of the cancelled future
                self._logger.exception("cancelling a future of %r failed", self.name)

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
                    f"poll function of poll executor {self.name!r} took longer "
                    f"than its poll_timeout of {timeout} s; cancelled"
                ) from None

        return loop.run_until_complete(run())

    def _overran(self, size: int) -> None:
        """The poll function has run longer than ``poll_timeout`` (on the
        scheduler's thread, once per call): a sync call cannot be interrupted, so
        it is counted, then logged."""
        self._poll_overran()
        self._logger.warning(
            "poll function of poll executor %r has run for more than %s s with %d "
            "futures and cannot be interrupted; give its requests a timeout",
            self.name,
            self._poll_timeout,
            size,
        )
