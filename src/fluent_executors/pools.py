"""Thread and process pools with the chainable ``with_*`` methods and a name."""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.thread as _thread
import contextvars
import functools
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from _fluent_executors.counts import open_counts
from _fluent_executors.handoff import Handoff
from _fluent_executors.library_pool import LibraryPool, check_max_workers
from _fluent_executors.proxy import ProxyFuture
from _fluent_executors.stdlib_compat import OWN_POOL_ITEMS
from _fluent_executors.tracing import InContext, tracer
from _fluent_executors.work_item import FutureItem, WorkItem
from _fluent_executors.wrapper import NO_KWARGS, check_name, check_submittable

__all__ = ["ThreadPoolExecutor"]  # and ProcessPoolExecutor, imported on first use

T = TypeVar("T")
P = ParamSpec("P")


# The standard thread pool's submit makes a standard Future and a _WorkItem, whose
# run() resolves it, and queues the item for its worker threads. The library's pool
# does the same under the same locks and checks, but queues a work item of its own
# (_fluent_executors.work_item) that resolves the library's future: one future per
# submit, not a standard one and a proxy that follows it. What it relies on (the
# pool's _shutdown_lock, _broken, _shutdown, _work_queue, _threads, _max_workers
# and _adjust_thread_count (which starts a thread only below _max_workers), the
# module's _global_shutdown_lock and _shutdown, and that workers call run() on
# what they take, shutdown(cancel_futures=True) calls future.cancel() and a failed
# initializer future.set_exception(); and that the pool's _idle_semaphore is only
# released by workers and tried by _adjust_thread_count, which _IdleWorkers stands
# in for) is the same from Python 3.10 to 3.15, which tests/test_pools.py checks.
# From 3.14 a worker passes its WorkerContext to run(), which runs the standard
# item's task through it; the context that the standard prepare_context makes (the
# library's pool keeps it) runs a task as fn(*args, **kwargs), which the
# library's item does itself. On any other version, and in the portable mode, the
# pool takes the standard submit and follows its future, and keeps its standard
# Semaphore (see _fluent_executors.stdlib_compat.OWN_POOL_ITEMS).
_OWN_WORK_ITEMS = OWN_POOL_ITEMS
_STANDARD_ADJUST = concurrent.futures.ThreadPoolExecutor._adjust_thread_count


def _runs_tasks_itself(cls: type[concurrent.futures.ThreadPoolExecutor]) -> bool:
    """Whether the workers of the pool class ``cls`` run a task as ``fn(*args,
    **kwargs)`` in their own thread, as the library's work item does: always before
    3.14; from 3.14, where ``cls`` keeps the standard ``prepare_context`` (a
    subclass may make contexts that run tasks elsewhere, as the standard
    ``InterpreterPoolExecutor`` does)."""
    standard: Any = getattr(
        concurrent.futures.ThreadPoolExecutor, "prepare_context", None
    )
    prepare: Any = getattr(cls, "prepare_context", None)
    return standard is None or prepare.__func__ is standard.__func__


class _IdleWorkers:
    """The count of the thread pool's idle workers, which the standard pool's code
    keeps in a :class:`threading.Semaphore`, its ``_idle_semaphore``: this stands in
    for it.

    That code makes two calls on it, and only these (``tests/test_pools.py`` checks
    its source, 3.10 to 3.15): a worker calls ``release()`` after each work item it
    ran (3.10 and 3.11) or each time it finds the queue empty (3.12 and later), and
    ``submit`` calls ``acquire(timeout=0)``, which says whether an idle worker will
    take the new item or a thread must be started (up to ``max_workers``). Here
    each is one operation on a deque of tokens, atomic without a lock. A Semaphore
    takes the lock of its Condition in Python code: a worker that holds it when the
    interpreter switches threads makes the submitting thread and the other workers
    queue up on it, and each one woken is a switch between threads (see the
    performance page, ``docs/performance.rst``).
    """

    __slots__ = ("release", "tokens")

    def __init__(self) -> None:
        tokens: deque[None] = deque()
        # One per idle worker; taken by acquire(), or by the pool's _queue.
        self.tokens = tokens
        # The deque's own append, with its argument bound: no Python frame at all.
        self.release: Callable[[], None] = functools.partial(tokens.append, None)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take an idle worker's token if there is one, at once, as a Semaphore's
        ``acquire(timeout=0)`` does; return whether one was taken (``bool``).

        Raises:
            ValueError: asked to wait (``blocking`` with a ``timeout`` other than
                0): the standard pool never does.
        """
        if blocking and timeout != 0:
            raise ValueError("the idle workers of a pool cannot be waited for")
        try:
            self.tokens.pop()
        except IndexError:
            return False
        return True


class ThreadPoolExecutor(LibraryPool, concurrent.futures.ThreadPoolExecutor):
    """The standard :class:`concurrent.futures.ThreadPoolExecutor`, with a name and
    the chainable ``with_*`` methods of :class:`~fluent_executors.FluentExecutor`.

    A ``FluentExecutor[SameResult]`` (see :ref:`guide-result-types`). Its futures
    are the library's (:class:`~fluent_executors.ProxyFuture`), resolved by the
    pool's worker threads directly, with no standard future behind them; as with
    the standard pool, a future is ``running()`` once a worker has started its
    callable, and can no longer be cancelled then.

    Every argument but ``name`` goes to the standard class unchanged, as the caller
    gave it (positional arguments stay positional, keywords stay keywords, and
    nothing is added), with one exception: if the caller gives no
    ``thread_name_prefix``, the keyword ``thread_name_prefix="fluent-executors-<name>"``
    is added, so the pool's threads carry the executor's name.

    Args:
        max_workers: the most threads it runs at once; default as in the standard
            library (``min(32, os.cpu_count() + 4)``).
        thread_name_prefix: the prefix of its threads' names; default
            ``fluent-executors-<name>``.
        initializer: called with ``initargs`` at the start of each worker thread.
        initargs: the arguments of ``initializer``.
        name: the executor's name, passed down the chains built on it.

    Raises:
        TypeError: ``name`` is not a ``str``, or ``max_workers`` is not an ``int``
            (nor ``None``); see the standard class for the rest.
        ValueError: ``max_workers`` is less than 1.
    """

    # Whether submit queues the library's own work items (see _OWN_WORK_ITEMS)
    _own_items: bool
    # The idle workers' tokens that _queue takes itself (see _queue), or None
    _idle_tokens: deque[None] | None

    if TYPE_CHECKING:
        # What type checkers see; at run time the arguments pass through as given.
        def __init__(
            self,
            max_workers: int | None = None,
            thread_name_prefix: str = "",
            initializer: Callable[..., object] | None = None,
            initargs: tuple[Any, ...] = (),
            *,
            name: str = "default",
        ) -> None: ...

    else:

        def __init__(self, *args, name="default", **kwargs):
            check_name(name)
            check_max_workers(args, kwargs)
            self._name = name
            if len(args) < 2 and "thread_name_prefix" not in kwargs:
                kwargs["thread_name_prefix"] = f"fluent-executors-{name}"
            super().__init__(*args, **kwargs)
            # The versions whose pool code this knows, with the standard contexts
            self._own_items = _OWN_WORK_ITEMS and _runs_tasks_itself(type(self))
            if self._own_items:
                idle = self._idle_semaphore = _IdleWorkers()
                # Where _adjust_thread_count is the standard one, _queue takes an
                # idle worker's token itself once every worker is started.
                standard = type(self)._adjust_thread_count is _STANDARD_ADJUST
                self._idle_tokens = idle.tokens if standard else None
            self._counts = open_counts(self, "threadpool", name, counts_running=True)

    def submit(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> ProxyFuture[T]:
        """Run ``fn(*args, **kwargs)`` in a worker thread of the pool, in a copy of
        the submitter's ``contextvars`` context (see :ref:`guide-context`).

        Returns:
            A ``Future[T]`` of the library (:class:`~fluent_executors.ProxyFuture`),
            which can also be awaited in a coroutine; ``running()`` once a worker
            has started the callable, which can no longer be cancelled then.

        Raises:
            TypeError: ``fn`` is not callable, or is a coroutine function
                (``async def``: a coroutine needs an event loop).
            RuntimeError: the pool has been shut down, or the interpreter is
                shutting down, or it has no worker and could not start one
                (``can't start new thread``; the next submit tries again).
            concurrent.futures.thread.BrokenThreadPool: a worker's
                ``initializer`` failed.

        .. versionchanged:: 0.2.0
           ``fn`` runs in a copy of the submitter's context.
        """
        if isinstance(fn, InContext):  # from a wrapper, which captured its context
            return self._take_captured(fn, args, kwargs)
        check_submittable(fn)
        if tracer() is None:
            return self._submit(fn, args, kwargs, contextvars.copy_context())
        return self._submit_captured(fn, args, kwargs)

    def _take_captured(
        self, call: InContext, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ProxyFuture[Any]:
        """What :meth:`submit` does with ``call``, a callable that a wrapper
        captured, and its arguments; a wrapper around this pool calls it directly
        (see ``_fluent_executors.wrapper``)."""
        if call.span is None:  # the work item runs the callable in its context
            return self._submit(call.fn, args, kwargs, call.context)
        return self._submit(call, args, kwargs)  # runs itself, under its span

    # The submit whose work on a captured callable _take_captured does.
    _taken_by = submit

    def _take_captured_for(
        self,
        follower: ProxyFuture[Any],
        call: InContext,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        """:meth:`_take_captured`, for ``follower``, the one future of the library
        that will follow the call and nothing else (a poll, map or flat-map
        future; see ``wrapper.DelegatingExecutor._submit_to_delegate_for``): it
        follows the call's :class:`~_fluent_executors.handoff.Handoff`, the work
        item queued, which holds the outcome in place of a future of the pool.
        Where the pool takes the standard submit, it follows the pool's future."""
        if not self._own_items:
            follower._follow(self._take_captured(call, args, kwargs))
            return
        counts, kwargs = self._counts, kwargs or NO_KWARGS
        if call.span is None:  # the work item runs the callable in its context
            handoff = Handoff(follower, call.fn, args, kwargs, counts, call.context)
        else:  # it runs itself, under its span
            handoff = Handoff(follower, call, args, kwargs, counts, None)
        follower._upstream = handoff  # before any worker can run the call
        self._queue(handoff)

    def _submit(
        self,
        fn: Callable[..., T],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        context: contextvars.Context | None = None,
    ) -> ProxyFuture[T]:
        """Queue a work item of ``fn(*args, **kwargs)``, run in ``context`` (if not
        ``None``), for the workers; return its future."""
        if not self._own_items:
            if context is not None:
                fn = InContext(fn, context, None)
            return super()._submit(fn, args, kwargs)
        future: ProxyFuture[T] = ProxyFuture()
        self._queue(
            FutureItem(future, fn, args, kwargs or NO_KWARGS, self._counts, context)
        )
        return future

    def _queue(self, item: WorkItem) -> None:
        """Queue ``item`` for the workers, its future counted in the pool's stats,
        and start a worker if none is idle.

        Raises:
            RuntimeError: the pool is shut down, or the interpreter is; or no worker
                is alive and none could be started (the item's future is then
                cancelled, or its handoff withdrawn).
            concurrent.futures.thread.BrokenThreadPool: an initializer failed.
        """
        future = item.future
        with self._shutdown_lock, _thread._global_shutdown_lock:
            if self._broken:
                raise _thread.BrokenThreadPool(self._broken)
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            if _thread._shutdown:
                raise RuntimeError(
                    "cannot schedule new futures after interpreter shutdown"
                )
            counts = self._counts
            counts.adopt(future)  # refused submits are not counted
            queued: Any = item  # (the standard queue's type names its work item)
            self._work_queue.put(queued)
            try:
                # A worker, unless an idle one takes it. The standard method takes
                # an idle worker's token, else starts a thread below max_workers:
                # with every worker started, the token is taken here, without its
                # two calls per submit.
                tokens = self._idle_tokens
                if tokens is None or len(self._threads) < self._max_workers:
                    self._adjust_thread_count()
                elif tokens:  # (workers only append: under the lock, one is there)
                    tokens.pop()
            except BaseException:  # "can't start new thread": out of threads
                if self._threads:  # the workers alive run it in their turn
                    return
                # None would: the item stays queued, and a worker started by the
                # next submit skips it; this submit raises.
                counts.unadopt(future)
                if isinstance(future, Handoff):
                    future.withdraw()  # its follower fails with the error raised
                else:
                    future.cancel()
                raise


def __getattr__(name: str) -> object:
    # The process pool imports multiprocessing, which most programs never need:
    # it is defined in its own module, imported on first use (PEP 562).
    if name == "ProcessPoolExecutor":
        from _fluent_executors.process_pool import ProcessPoolExecutor

        return ProcessPoolExecutor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
