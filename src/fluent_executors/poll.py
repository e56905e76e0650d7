"""PollExecutor: futures of remote tasks, resolved through one poll function.

The public module of polling; the machinery is in the private package
``_fluent_executors.poll``: the poll core (``core``, the decisions of each round),
the descriptors and futures (``descriptor``), and the thread driver (``thread``)."""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from _fluent_executors.durable import check_lease, check_limit, check_store
from _fluent_executors.fluent import Delegate, R
from _fluent_executors.poll.descriptor import PollDescriptor, PollFuture
from _fluent_executors.poll.keeper import StoreKeeper, claimed_error
from _fluent_executors.poll.settings import PollSettings
from _fluent_executors.poll.thread import PollThread
from _fluent_executors.proxy import ProxyFuture
from _fluent_executors.retry_policy import RetryPolicy
from _fluent_executors.scheduler import retire as retire_scheduler
from _fluent_executors.tracing import InContext
from _fluent_executors.wrapper import WrapperExecutor

if TYPE_CHECKING:
    from _fluent_executors.durable import Store, StoredTask
    from _fluent_executors.stats import PollStats

__all__ = ["CancelFn", "PollDescriptor", "PollExecutor", "PollFn"]

T = TypeVar("T")

PollFn = Callable[
    [list["PollDescriptor[Any]"]], "float | Awaitable[float | None] | None"
]
"""A poll function: takes the descriptors of every future being polled and returns
the delay in seconds until the next poll, or ``None`` for the executor's default.
It may be a coroutine function (``async def``): it is then awaited on an event loop
that the poll thread runs for the executor's lifetime."""

CancelFn = Callable[[Any], object]
"""A cancel function: takes the delegate's result and returns a truthy value if the
remote work was cancelled. It may be a coroutine function (``async def``): its
coroutine is then awaited on the poll thread's event loop, and the answer is its
result (see the poll page, "Async cancel functions")."""


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
            per successful cancel and never for a future that is already done. A
            coroutine function's coroutine is awaited on the poll thread's event
            loop: ``cancel()`` waits for its answer, except on the poll thread,
            where it returns ``False`` and the future is cancelled once the answer
            is truthy.
        default_interval: seconds between polls when the poll function returns
            ``None``, raises, or returns something that is not a number.
        logger: where to log; default ``logging.getLogger("fluent_executors.poll")``.
        name: the executor's name, used in the poll thread's name and log messages.
        poll_retry_policy: keyword-only, a :class:`~fluent_executors.RetryPolicy`
            for errors of the poll function; see the poll page, "Real services".
            Default: none, an error fails the futures of that call.
        max_batch: keyword-only, at most this many descriptors (``int``, 1 or more)
            per call of the poll function; see the poll page. Default: no limit.
        poll_timeout: keyword-only, seconds a call of the poll function may take.
            A call cannot be interrupted: one that takes longer is logged at
            WARNING (once per call, while it still runs) and counted in the
            ``fluent_executors_poll_timeouts`` metric, and goes on. Give the
            poll function's requests a timeout of their own. Default: none.
        store: keyword-only, where the start calls' results are kept, so that
            the remote tasks survive a crash of the process and other processes
            take them over (:meth:`resume`; see the "Durable polling" page): a
            :class:`~fluent_executors.stores.Store`, or the path (``str`` or
            path-like) of an SQLite file, opened as a
            :class:`~fluent_executors.SQLiteStore` whose queue is ``name`` and
            closed with the executor. A future is polled once its record is
            written (by the poll thread, in one call per round); its record is
            removed once it is done. Default: none.
        lease: keyword-only, seconds (a float > 0) that this executor holds a
            record of its store without renewing it; it renews its leases every
            third of that. Once a lease has run out, any process's
            :meth:`resume` may take the task over. Default 60.0.

    Raises:
        TypeError: ``delegate`` has no ``submit`` method; ``poll_fn`` or ``cancel_fn``
            is not callable; ``default_interval`` is not a real number; ``name`` is
            not a ``str``; ``poll_retry_policy`` is not a ``RetryPolicy``;
            ``max_batch`` is not an ``int``; ``poll_timeout`` or ``lease`` is not a
            real number; ``store`` is neither a path nor a store.
        ValueError: ``default_interval`` or ``poll_timeout`` is negative or NaN;
            ``max_batch`` is below 1; ``lease`` is not finite and > 0; ``store``
            is a store object that another poll executor uses (until that one
            is shut down and its poll thread has ended): one store object
            serves one executor; ``name`` is empty with a path as ``store``.
        ~fluent_executors.stores.StoreError: the SQLite file of ``store`` cannot
            be opened.
    """

    _call_span = False  # with tracing on, each future has a task span instead

    def __init__(
        self,
        delegate: Delegate[R],
        poll_fn: PollFn,
        cancel_fn: CancelFn | None = None,
        default_interval: float = 5.0,
        logger: logging.Logger | None = None,
        name: str = "default",
        *,
        poll_retry_policy: RetryPolicy | None = None,
        max_batch: int | None = None,
        poll_timeout: float | None = None,
        store: Store | str | os.PathLike[str] | None = None,
        lease: float = 60.0,
    ) -> None:
        lease = check_lease(lease)
        super().__init__(delegate, logger=logger, name=name)
        settings = PollSettings(
            poll_fn,
            cancel_fn,
            default_interval,
            self._logger,
            name,
            poll_retry_policy=poll_retry_policy,
            max_batch=max_batch,
            poll_timeout=poll_timeout,
        )
        keeper = None
        if store is not None:
            keeper = StoreKeeper(
                *_open_store(store, name),
                lease,
                settings.default_interval,
                self._logger,
                name,
            )
        self._open_metrics("poll")
        self._poller = PollThread(settings, self._counts, keeper)
        weakref.finalize(self, self._poller.close).atexit = False

    def _submit(
        self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ProxyFuture[T]:
        future: PollFuture[T] = PollFuture(self._poller)
        counts = self._counts
        counts.adopt(future)  # before any shutdown can see it and cancel it
        try:
            self._poller.add(future)
        except BaseException:
            counts.unadopt(future)
            raise
        if isinstance(fn, InContext) and fn.span is not None:  # tracing is on
            fn = fn.task(self._name, future)
        try:
            self._submit_to_delegate_for(future, fn, args, kwargs)
        except BaseException as error:
            future.fail(error)  # counted as failed; forgotten
            raise
        return future

    def attach(self, result: T) -> ProxyFuture[T]:
        """Return a future polled as if the delegate had returned ``result``:
        nothing is submitted to the delegate.

        With it a process that stored the identifiers of its remote tasks picks
        them up again after a restart (see the poll page's "Re-attaching after a
        restart"). The future is polled, cancelled through the cancel function and
        counted in the metrics as a submitted one. Attaching a ``result`` that is
        already being polled gives a second future of the same task: both are
        passed to the poll function, each with a descriptor of its own, and each
        resolves as the poll function says. It lives on this class only: a retry
        around it would have no callable to run again; give an attached future a
        deadline with :func:`~fluent_executors.f_timeout`, or map its result with
        :func:`~fluent_executors.f_map`.

        Args:
            result: what the delegate's future would have held (type ``T``),
                typically the identifier of a remote task.

        Returns:
            A ``Future[T]`` of the library (:class:`~fluent_executors.ProxyFuture`).

        Raises:
            RuntimeError: the executor has been shut down.

        .. versionadded:: 0.2.0
        """
        self._check_open()
        future, descriptor = self._attached(result)
        self._poller.start_polling(future, descriptor)
        return future

    def _attached(self, result: T) -> tuple[PollFuture[T], PollDescriptor[T]]:
        """A future of this executor, and its descriptor of ``result``, counted
        as outstanding, not polled yet."""
        future: PollFuture[T] = PollFuture(self._poller)
        descriptor = PollDescriptor(future, result)
        # What cancel() reads from the start: a shutdown that cancels the future
        # before it is polled calls the cancel function with its result.
        future.attach(descriptor)
        self._counts.adopt(future)
        try:
            self._poller.add(future)
        except BaseException:
            self._counts.unadopt(future)
            raise
        return future, descriptor

    # (A poll layer around this one would poll a resumed task's result.)
    _passes_resumed = False

    def _polls_with_store(self) -> bool:
        return self._poller.keeper is not None

    def resume(self, limit: int | None = None) -> dict[ProxyFuture[Any], StoredTask]:
        """Take over the remote tasks of the store whose lease has run out (of a
        process that crashed, or was killed), and return a future for each,
        polled as :meth:`attach` polls: nothing is submitted to the delegate.

        The records are claimed in one call of the store, and held by this
        executor from then on (their leases renewed as its own). Those of the
        store's owner are taken back at once, lease or not: a process restarted
        under the same ``owner`` (:class:`~fluent_executors.SQLiteStore`) need
        not wait for the leases of its earlier life. A record that
        cannot be read (:attr:`StoredTask.error
        <fluent_executors.stores.StoredTask.error>`), or an intent (a start call
        that had not returned: whether the task started is unknown), gives a
        future failed with a :class:`~fluent_executors.stores.RecordError`. Like
        every future of the executor, each one's record is removed once it is
        done. A record this executor polls already (its own lease ran out
        during an outage of the store) is not polled twice, and not returned.
        Call it at start-up, and again whenever other processes may have died.
        A chain around this executor has a ``resume()`` too, whose futures are
        the chain's (see :meth:`FluentExecutor.resume
        <fluent_executors.FluentExecutor.resume>`).

        If it fails half-way (the executor shut down meanwhile, a thread that
        cannot start), the futures made so far are cancelled (here alone, their
        records not removed), every record claimed is released
        (:meth:`Store.release <fluent_executors.stores.Store.release>`) for the
        next ``resume()`` to take, and the error is raised.

        Args:
            limit: at most this many records (``int``, 1 or more); ``None``: all.

        Returns:
            ``dict[ProxyFuture[Any], StoredTask]``: each future, and the record it
            polls (its start result and key; a label only in records written
            through the store by other means), so that the program maps futures
            back to its inputs.

        Raises:
            RuntimeError: the executor was made without a store, or has been
                shut down.
            ~fluent_executors.stores.StoreError: the store failed; nothing was
                claimed.
            TypeError, ValueError: ``limit`` is not an ``int`` >= 1 or ``None``.

        .. versionadded:: 0.2.0
        """
        check_limit(limit)  # (before anything: a store of the user's may not)
        self._check_open()
        keeper = self._poller.keeper
        if keeper is None:
            raise RuntimeError(
                f"poll executor {self._name!r} has no store to resume from: "
                "PollExecutor(..., store=...)"
            )
        resumed: dict[ProxyFuture[Any], StoredTask] = {}
        made: list[tuple[PollFuture[Any], PollDescriptor[Any], StoredTask]] = []
        tasks = keeper.claim(limit)  # (without those polled here already)
        taken = 0  # tasks[taken:] have no future: let go of them if this fails
        try:
            # First a future for each (what may fail: a shutdown meanwhile),
            # then each is polled, or failed.
            for task in tasks:
                future, descriptor = self._attached(task.result)
                adopted = keeper.adopt(task, descriptor)
                taken += 1
                if adopted:
                    resumed[future] = task
                    made.append((future, descriptor, task))
                else:  # another resume() took it
                    future.cancel_now()
            for future, descriptor, task in made:
                error = claimed_error(task)  # (unreadable, or an intent)
                if error is None:
                    self._poller.start_polling(future, descriptor)
                else:
                    future.fail(error)
        except BaseException:
            keeper.release(tasks[taken:])
            self._unresume(resumed)
            raise
        finally:
            keeper.end_claim()
        return resumed

    def _unresume(self, resumed: dict[Any, StoredTask]) -> None:
        """Undo the futures of :meth:`resume` that the caller does not get (it
        failed half-way): each is cancelled here alone, its record not removed
        but released, for the next ``resume()`` to take (a future that ended
        meanwhile has its record removed as usual)."""
        keeper = self._poller.keeper
        assert keeper is not None  # (a resume() made them)
        released: list[StoredTask] = []
        for future, task in resumed.items():
            descriptor = future.descriptor
            if descriptor is not None and keeper.unadopt(descriptor):
                released.append(task)
            future.cancel_now()
        keeper.release(released)

    def _wrapper_fields(self) -> dict[str, object]:
        poller, core = self._poller, self._poller.core
        fields: dict[str, object] = {
            "poll_fn": poller.poll_fn,
            "cancel_fn": poller.cancel_fn,
            "default_interval": core.default_interval,
        }
        if core.max_batch is not None:
            fields["max_batch"] = core.max_batch
        return fields

    def stats(self) -> PollStats:
        """What this executor has done with the futures its ``submit`` (and
        :meth:`attach`) returned, and is doing now (see :meth:`FluentExecutor.stats
        <fluent_executors.FluentExecutor.stats>`), and its poll function's counts.

        Returns:
            A :class:`~fluent_executors.PollStats`.

        .. versionadded:: 0.2.0
        """
        # On first use: see _fluent_executors.stats.
        from _fluent_executors.stats import PollStats

        keeper = self._poller.keeper
        return PollStats(
            **self._counts.fields(),
            **self._poller.poll_counts(),
            polled=self._poller.polled(),
            store_errors=0 if keeper is None else keeper.errors,
        )

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
            retire_scheduler()  # the poll thread's last rounds may have used it


def _open_store(store: Store | str | os.PathLike[str], name: str) -> tuple[Store, bool]:
    """The store that ``store=`` names, and whether the executor made it (and
    closes it): a path is an SQLite file, whose queue is the executor's name.

    Raises:
        TypeError: ``store`` is neither a path nor a store.
    """
    store = check_store(store)
    if isinstance(store, (str, os.PathLike)):
        from .stores import SQLiteStore

        if not name:
            raise ValueError(
                "name must not be empty with a store path: the executor's name is "
                "its queue in the SQLite file"
            )

        return SQLiteStore(store, queue=name), True
    return store, False
