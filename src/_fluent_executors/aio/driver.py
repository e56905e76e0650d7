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

With a store (``with_poll(store=)``), each block has a
:class:`~_fluent_executors.poll.keeper.StoreKeeper` of its own (the threaded
driver's): a run's descriptor enters the core once the loop has written its
record; every call of the store (they block) is made in a worker thread, the
loop awaiting it, so the event loop stays free; the loop's end (cancelled with
its block) makes a last, shielded sync. :class:`PolledRun` is a run's handle:
``Poll.run`` awaits one, ``attach()`` and ``resume()`` give them out.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import math
import os
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import anyio
import anyio.lowlevel
import anyio.to_thread

from ..poll.descriptor import PollDescriptor, PollFuture
from ..poll.driver import DriverBase
from ..poll.keeper import HELD, WAKE, StoreKeeper, claimed_error
from ..poll.reports import settle_failed_poll, warn_list_changed
from ..public import publish

if TYPE_CHECKING:
    from collections.abc import Generator

    from ..counts import Counts
    from ..durable import Store, StoredTask
    from ..poll.core import PollCore
    from ..poll.settings import PollSettings
    from ..stats import PollStats
    from .layers import Layer

__all__ = ["AsyncPollDriver", "PolledRun"]

T = TypeVar("T")


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


async def _in_thread_shielded(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a worker thread (a store's call: it blocks), shielded
    from the caller's cancellation (what it does must be seen through)."""
    answer: list[T] = []  # (the type checkers see a scope that may swallow)
    with anyio.CancelScope(shield=True):
        answer.append(await anyio.to_thread.run_sync(fn, *args))
    return answer[0]


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


class PolledRun(Generic[T]):
    """A run of an async poll layer whose start call was made before: by the
    program (:meth:`AsyncExecutor.attach`) or by another process, whose record
    :meth:`AsyncExecutor.resume` took over. It is polled from the moment it is
    made; ``await run`` returns what the poll function resolves its descriptor
    with (type ``T``), or raises what it fails it with.

    The layers outside the poll layer (:meth:`AsyncExecutor.resume`) apply as
    it is first awaited; later awaits give the same outcome.

    Cancelling a task that awaits it stops its polling and calls the cancel
    function with its start result (shielded, as for a cancelled ``run``), and
    the cancellation propagates. It may be awaited more than once, on the event
    loop of its block. One nobody awaits is polled all the same; if its block
    ends first, it fails with ``RuntimeError``, and its record (with a store)
    stays in the store for a later ``resume()``.

    Type parameters:
        T: what it resolves to.

    .. versionadded:: 0.2.0
    """

    def __init__(
        self, driver: AsyncPollDriver, result: object, outer: Sequence[Layer] = ()
    ) -> None:
        future: PollFuture[Any] = PollFuture(driver)
        descriptor: PollDescriptor[Any] = PollDescriptor(future, result)
        future.attach(descriptor)
        driver.adopt(future)
        done = anyio.Event()
        future.add_done_callback(lambda _: driver.call_on_loop(done.set))
        self.future, self.descriptor, self._done = future, descriptor, done
        self._driver, self._result = driver, result
        # The layers outside the poll layer, outermost first, and when it was
        # made (the start of a with_timeout's time).
        self._outer = tuple(outer)
        self._started = anyio.current_time() if outer else 0.0
        self._lock: anyio.Lock | None = None  # one await sees the layers through
        self._outcome: Future[T] | None = None  # what they made of it

    def done(self) -> bool:
        """Whether its remote task has ended (resolved, failed or cancelled):
        the layers outside the poll layer apply as it is awaited."""
        return self.future.done()

    def __await__(self) -> Generator[Any, None, T]:
        return self._through_layers().__await__()

    async def _through_layers(self) -> T:
        """What the layers outside the poll layer make of its outcome, seen
        through by the first await that is not cancelled and kept."""
        if not self._outer:
            return cast("T", await self._wait())
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._outcome is None:
                call: Callable[[], Awaitable[Any]] = self._wait
                for layer in reversed(self._outer):
                    call = functools.partial(layer.resumed, call, self._started)
                outcome: Future[T] = Future()
                try:
                    outcome.set_result(await call())
                except anyio.get_cancelled_exc_class():
                    raise  # (the awaiting task's: the next await tries again)
                except BaseException as error:  # the run's, or a layer's
                    outcome.set_exception(error)
                self._outcome = outcome
        return self._outcome.result()

    async def _wait(self) -> Any:
        try:
            await self._done.wait()
        except anyio.get_cancelled_exc_class():
            if self.future.cancel_now():  # still polled: stop, cancel the remote task
                await self._driver.cancel_remote(self._result)
            raise
        return self.future.result()

    def __repr__(self) -> str:
        state = "done" if self.done() else "polled"
        name, result = self._driver.name, self._result
        return f"<PolledRun of {name!r} {state}, start result {result!r}>"


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
        store: where the layer's start results are kept (``with_poll(store=)``,
            checked): a store, a path opened at each block, or ``None``.
        lease: seconds a record is held for after each write or renewal.
    """

    def __init__(
        self,
        settings: PollSettings,
        counts: Counts,
        store: Store | str | os.PathLike[str] | None = None,
        lease: float = 60.0,
    ) -> None:
        super().__init__(settings, counts)
        self._settings = settings
        self._store, self._lease = store, lease
        # With a store, the block's (a new one each block): the records of its
        # futures, written by the loop before they are polled (poll/keeper.py).
        self.keeper: StoreKeeper | None = None
        self._store_errors = 0  # of the blocks before
        self._owner: str | None = None  # of the SQLite store it opens from a path
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
        if self.keeper is not None:
            self._store_errors += self.keeper.errors
            self.keeper = None

    async def open_keeper(self) -> StoreKeeper | None:
        """The keeper of a new block's records (``None`` without a store): of
        the store given, or of the SQLite file of a path, opened in a worker
        thread, under the same owner at each block (the block's end closes it).
        It serves the block once :meth:`reset` has made way for it (its
        ``keeper`` attribute).

        Raises:
            ~fluent_executors.stores.StoreError: the SQLite file cannot be opened.
            ValueError: the store object serves another poll executor.
        """
        given = self._store
        if given is None:
            return None
        store: Store
        if isinstance(given, (str, os.PathLike)):
            # The aio package's one reach upward (tests/test_layers.py).
            from fluent_executors.stores import SQLiteStore

            opened = functools.partial(
                SQLiteStore, given, queue=self.name, owner=self._owner
            )
            store, owned = await anyio.to_thread.run_sync(opened), True
            self._owner = store.owner
        else:
            store, owned = given, False
        try:
            return StoreKeeper(
                store,
                owned,
                self._lease,
                self._settings.default_interval,
                self._logger,
                self.name,
            )
        except BaseException:
            if owned:
                store.close()  # (an SQLite file: at once)
            raise

    # -- the PollDriver protocol (what the futures and descriptors ask) ------------

    def start_polling(
        self, future: PollFuture[Any], descriptor: PollDescriptor[Any]
    ) -> None:
        """``descriptor`` enters polling: taken in at once if nothing else is
        polled (or no poll is scheduled), else at the next round."""
        if not future.enter_polling(descriptor):
            return
        self._futures.add(future)
        # With a store, its record is written first, by the loop (woken by the
        # first since its last sync), which then polls it.
        keeper = self.keeper
        queued = HELD if keeper is None else keeper.arrived(descriptor)
        if queued == HELD:
            self._arrive(descriptor)
        elif queued == WAKE:
            self._notify()

    def _arrive(self, descriptor: PollDescriptor[Any]) -> None:
        """``descriptor`` joins the core's arrivals (taken in at once if the core
        says so)."""
        if self.core.arrive(descriptor, anyio.current_time()):
            with self._lock:
                if self.core.admit():
                    self._notify()

    def forget(
        self, future: PollFuture[Any], descriptor: PollDescriptor[Any] | None
    ) -> None:
        """``future`` is done: drop it (from any thread); its record goes at the
        loop's next sync."""
        self._futures.discard(future)
        if descriptor is not None:
            keeper = self.keeper
            with self._lock:
                tidy = self.core.forget(descriptor)
            if tidy or (keeper is not None and keeper.forget(descriptor)):
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

    def attach(self, result: object, outer: Sequence[Layer] = ()) -> PolledRun[Any]:
        """A run polled as if its start call had returned ``result`` (on the
        event loop's thread, in a block), through the layers ``outer``
        (outermost first) as it is awaited."""
        run: PolledRun[Any] = PolledRun(self, result, outer)
        self.start_polling(run.future, run.descriptor)
        return run

    async def resume(
        self, limit: int | None, outer: Sequence[Layer] = ()
    ) -> dict[PolledRun[Any], StoredTask]:
        """Claim the records whose lease has run out (at most ``limit``) in a
        worker thread, shielded (a claim once made is adopted), and poll each
        in a run through the layers ``outer`` (outermost first); a record that
        cannot be polled fails its run at once.

        Raises:
            RuntimeError: the layer has no store.
            ~fluent_executors.stores.StoreError: the store failed; nothing was
                claimed.
            BaseException: what failed half-way (the records claimed and given
                no run are let go of, for the next ``resume()``).
        """
        keeper = self.keeper
        if keeper is None:
            raise RuntimeError(
                f"async poll executor {self.name!r} has no store to resume from: "
                "with_poll(..., store=...)"
            )
        tasks = await _in_thread_shielded(keeper.claim, limit)
        resumed: dict[PolledRun[Any], StoredTask] = {}
        taken = 0  # tasks[taken:] have no run: let go of them if this fails
        try:
            for task in tasks:
                run: PolledRun[Any] = PolledRun(self, task.result, outer)
                adopted = keeper.adopt(task, run.descriptor)
                taken += 1
                if not adopted:  # another resume() took it
                    run.future.cancel_now()
                    continue
                resumed[run] = task
                error = claimed_error(task)
                if error is None:
                    self.start_polling(run.future, run.descriptor)
                else:
                    run.future.fail(error)
        except BaseException:
            await _in_thread_shielded(keeper.release, tasks[taken:])
            raise
        finally:
            keeper.end_claim()
        return resumed

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

        keeper = self.keeper
        return PollStats(
            **self._counts.fields(),
            **self.poll_counts(),
            polled=self.polled(),
            store_errors=self._store_errors + (0 if keeper is None else keeper.errors),
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
        ends, once no run is under way). With a store, a last sync then removes
        the records of the runs done last (shielded, in a worker thread); those
        of the runs still polled stay, for a later ``resume()``."""
        keeper = self.keeper
        self._token = anyio.lowlevel.current_token()
        self._thread = threading.get_ident()
        try:
            await self._rounds(self.core, keeper)
        finally:
            if keeper is not None:
                await _in_thread_shielded(keeper.finish, anyio.current_time())

    async def _rounds(
        self, core: PollCore[PollDescriptor[Any]], keeper: StoreKeeper | None
    ) -> None:
        """The work of :meth:`loop`."""
        while True:
            await anyio.lowlevel.checkpoint_if_cancelled()
            if core.list_changed():
                warn_list_changed(self._logger, self.name)
            if keeper is not None and keeper.due(anyio.current_time()):
                # The store's calls, in a worker thread: the loop is free meanwhile.
                written = await anyio.to_thread.run_sync(
                    keeper.sync, anyio.current_time()
                )
                for descriptor in written:
                    self._arrive(descriptor)
            with self._lock:
                core.take_in()
                now = anyio.current_time()
                # (a store due meanwhile is synced at the next turn: a round
                # that is due begins first, as on the poll thread)
                if keeper is not None and keeper.holds_rounds(now):
                    # (the last renewal is too old: none until the next sync)
                    due, timeout = False, keeper.wait_timeout(now)
                else:
                    due = core.due(now)
                    timeout = core.wait_timeout(now)
                    if keeper is not None:
                        syncing = keeper.wait_timeout(now)
                        if timeout is None or (
                            syncing is not None and syncing < timeout
                        ):
                            timeout = syncing
            if not due:
                self._wake = wake = anyio.Event()
                with anyio.move_on_after(math.inf if timeout is None else timeout):
                    await wake.wait()
                continue
            with self._lock:
                # No round while the leases are due: one may have run out.
                polling = (
                    keeper is None or not keeper.renewal_due(anyio.current_time())
                ) and core.begin_round(anyio.current_time())
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


publish("fluent_executors.aio", PolledRun)
