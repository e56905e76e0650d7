"""The async driver of a poll layer: a thin loop around the poll core
(``poll.core.PollCore``), a task of the executor's task group on the caller's
event loop (asyncio or trio, through anyio).

Contract: one ``AsyncPollDriver`` per ``with_poll`` layer; its loop
(:meth:`AsyncPollDriver.loop`) is the only caller of the poll function, never
concurrently, and runs in one ``async with`` block at a time: each block starts
it anew (:meth:`AsyncPollDriver.reset`: a core of its own, whose times are that
block's event loop's). Every call of the core is made on the event loop's thread
but ``forget`` (a descriptor may be resolved from any thread), so a lock guards
the core's bookkeeping, never an ``await``; what another thread asks of the loop
(waking it, waking a run) is handed to it without waiting for it
(:meth:`AsyncPollDriver.call_on_loop`), so a poll function that waits for worker
threads resolving its descriptors never waits on itself. Every sleep goes through
anyio (a test's mock clock moves it), and the time told to the core is
``anyio.current_time()``. The loop never holds the event loop: each call of the
poll function is followed by a checkpoint, whatever delay it asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from ..poll.descriptor import PollDescriptor, PollFuture
from ..poll.driver import DriverBase
from ..poll.reports import settle_failed_poll, warn_list_changed

if TYPE_CHECKING:
    from ..counts import Counts
    from ..poll.settings import PollSettings
    from ..stats import PollStats

__all__ = ["AsyncPollDriver"]


async def call_maybe_async(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn`` with ``args``; await what it returns if that is awaitable (a
    coroutine function's call)."""
    value = fn(*args)
    if inspect.isawaitable(value):
        value = await value
    return value


def _cancelled() -> bool:
    """Whether the calling task is cancelled (a scope around it was, or its
    deadline passed)."""
    return anyio.current_effective_deadline() <= anyio.current_time()


def _uncalled_for(cancelled: BaseException, function: str, name: str) -> RuntimeError:
    """What a call of a user's ``function`` that raised the backend's cancellation
    exception (``cancelled``) while its task was not cancelled fails with: an
    error of that call (caused by ``cancelled``), not a cancellation of the
    caller's."""
    error = RuntimeError(
        f"{function} function of async poll executor {name!r} raised "
        f"{type(cancelled).__name__}, though its call was not cancelled"
    )
    error.__cause__ = cancelled
    return error


class AsyncPollDriver(DriverBase):
    """The driver of one async poll layer's polls, around a
    :class:`~_fluent_executors.poll.core.PollCore`.

    Args:
        settings: the layer's poll function (plain or coroutine function), cancel
            function (likewise, or ``None``), name, logger and its core's
            settings; ``poll_timeout``: seconds a call of the poll or cancel
            function may take (``None``: no limit), an async one is cancelled, a
            plain one logged.
        counts: the layer's counts (``stats()``).
    """

    def __init__(self, settings: PollSettings, counts: Counts) -> None:
        super().__init__(settings, counts)
        self._settings = settings
        self._futures: set[PollFuture[Any]] = set()  # being polled
        self._wake: anyio.Event | None = None  # set: the loop looks at the core
        self._token: Any = None  # the event loop's, for a wake from another thread
        self._thread: int | None = None  # the event loop's thread

    def reset(self) -> None:
        """Start afresh, for a new block: a new core (the times of the last one
        are another event loop's), no event loop known until the loop runs."""
        self.core = self._settings.core(self._descriptors)
        self._futures.clear()
        self._wake = None
        self._token = self._thread = None

    # -- the PollDriver protocol (what the futures and descriptors ask) ------------

    def start_polling(
        self, future: PollFuture[Any], descriptor: PollDescriptor[Any]
    ) -> None:
        """``descriptor`` enters polling: taken in at once if nothing else is
        polled (or no poll is scheduled), else at the next round."""
        if not future.enter_polling(descriptor):
            return
        self._futures.add(future)
        if self.core.arrive(descriptor, anyio.current_time()):
            with self._lock:
                if self.core.admit():
                    self._notify()

    def forget(
        self, future: PollFuture[Any], descriptor: PollDescriptor[Any] | None
    ) -> None:
        """``future`` is done: drop it (from any thread)."""
        self._futures.discard(future)
        if descriptor is not None:
            with self._lock:
                tidy = self.core.forget(descriptor)
            if tidy:
                self._notify()

    def run_cancel_fn(self, result: object, future: PollFuture[Any]) -> bool:
        """A future of this driver is never given out, so no one calls its
        ``cancel()``: the cancel of a run is :meth:`cancel_remote`. Answers
        ``True`` (cancel it locally)."""
        return True

    def defer(self, entry: PollDescriptor[Any], delay: float) -> None:
        """Do not poll ``entry`` before ``delay`` seconds from now."""
        self.core.defer(entry, anyio.current_time() + delay)

    def age_of(self, entry: PollDescriptor[Any]) -> float:
        """Seconds since ``entry`` entered polling."""
        return self.core.age_of(entry, anyio.current_time())

    # -- the executor's side -------------------------------------------------------

    def adopt(self, future: PollFuture[Any]) -> None:
        """Count ``future``, a run's, in the layer's ``stats()``."""
        self._counts.adopt(future)

    def fail_polled(self, error: BaseException) -> None:
        """Fail every future still polled with ``error`` (the loop has stopped)."""
        for future in list(self._futures):
            future.fail(error)

    def polled(self) -> int:
        """The number of futures being polled now."""
        with self._lock:
            return len(self.core)

    def stats(self) -> PollStats:
        """A :class:`~fluent_executors.PollStats` of the layer's runs and poll
        calls."""
        from ..stats import PollStats

        return PollStats(
            **self._counts.fields(), **self.poll_counts(), polled=self.polled()
        )

    def _notify(self) -> None:
        """Wake the loop to look at the core (from any thread)."""
        wake = self._wake
        if wake is not None and not wake.is_set():
            self.call_on_loop(wake.set)

    def call_on_loop(self, fn: Callable[[], object]) -> None:
        """Call ``fn`` on the event loop's thread: at once from it; from another
        thread (a descriptor resolved there) soon, without waiting for it (the
        loop may be waiting for that thread); not at all once the loop has ended
        (nothing waits any more)."""
        if self._thread is None or threading.get_ident() == self._thread:
            fn()
            return
        native = self._token.native_token
        with contextlib.suppress(RuntimeError):  # the loop has ended (trio's too)
            if isinstance(native, asyncio.AbstractEventLoop):
                native.call_soon_threadsafe(fn)
            else:  # a trio.lowlevel.TrioToken
                native.run_sync_soon(fn)

    async def cancel_remote(self, result: object) -> None:
        """Call the cancel function for the remote task behind ``result``,
        shielded from the cancellation of the caller, at most ``poll_timeout``
        seconds; its failure (or ``False`` answer) is logged, never raised."""
        if self.cancel_fn is None:
            return
        timeout = math.inf if self._poll_timeout is None else self._poll_timeout
        with anyio.CancelScope(shield=True):
            try:
                with anyio.fail_after(timeout):
                    answer = await call_maybe_async(self.cancel_fn, result)
            except BaseException:  # contained: logged, the run's cancel goes on
                self._logger.exception(
                    "Exception during cancel of a run of async poll executor %r: "
                    "its cancel function raised or took longer than poll_timeout",
                    self.name,
                )
            else:
                if not answer:  # (it may have ended meanwhile)
                    self._logger.info(
                        "cancel function of async poll executor %r answered %r "
                        "for %r: the remote task may go on",
                        self.name,
                        answer,
                        result,
                    )

    # -- the loop --------------------------------------------------------------------

    async def loop(self) -> None:
        """Poll until cancelled (the executor's task group cancels it as its block
        ends, once no run is under way)."""
        core = self.core
        self._token = anyio.lowlevel.current_token()
        self._thread = threading.get_ident()
        while True:
            await anyio.lowlevel.checkpoint_if_cancelled()
            if core.list_changed():
                warn_list_changed(self._logger, self.name)
            with self._lock:
                core.take_in()
                due = core.due(anyio.current_time())
                timeout = core.wait_timeout(anyio.current_time())
            if not due:
                self._wake = wake = anyio.Event()
                with anyio.move_on_after(math.inf if timeout is None else timeout):
                    await wake.wait()
                continue
            with self._lock:
                polling = core.begin_round(anyio.current_time())
            if not polling:
                continue
            while (batch := core.next_batch(anyio.current_time())) is not None:
                await self._poll(batch)
                # Let the other tasks run, whatever the poll function did and
                # asked for (0 s, a coroutine that never awaited).
                await anyio.lowlevel.cancel_shielded_checkpoint()
            with self._lock:
                core.end_round(anyio.current_time())

    def _descriptors(self) -> list[PollDescriptor[Any]]:
        """The descriptors of the futures being polled (the core's list anew)."""
        return [
            descriptor
            for future in list(self._futures)
            if (descriptor := future.descriptor) is not None
        ]

    async def _poll(self, batch: list[PollDescriptor[Any]]) -> None:
        """Call the poll function once with ``batch`` and tell the core how it
        went (the one place it is called)."""
        core = self.core
        timeout = self._poll_timeout
        start = time.perf_counter()
        core.lending(batch)
        try:
            with anyio.fail_after(math.inf if timeout is None else timeout):
                returned = await call_maybe_async(self.poll_fn, batch)
        except anyio.get_cancelled_exc_class() as cancelled:
            if _cancelled():
                core.returned(batch, None)  # the list is the core's again
                raise
            self._poll_called(start, True)
            settle_failed_poll(
                core,
                batch,
                _uncalled_for(cancelled, "poll", self.name),
                anyio.current_time(),
                self._logger,
                self.name,
            )
            return
        except BaseException as error:
            self._poll_called(start, True)
            settle_failed_poll(
                core, batch, error, anyio.current_time(), self._logger, self.name
            )
            return
        self._poll_called(start, False)
        if timeout is not None and time.perf_counter() - start > timeout:
            self._poll_overran()  # a plain poll function: not interrupted
            self._logger.warning(
                "poll function of async poll executor %r ran for more than %s s "
                "and could not be interrupted",
                self.name,
                timeout,
            )
        self._returned(batch, returned)
