"""What the executors that hand callables to another system (Dask, Ray) share.

Such a system reports a task's end on a thread of its own (Dask's event loop or its
callback thread, Ray's I/O thread), where a blocking callback stalls, or deadlocks,
the whole client. So the proxy futures of these executors are never resolved there:
the system's callback only hands the task over to a small pool of threads owned by
the executor (the *resolvers*), which fetch the outcome and resolve the proxy; the
done callbacks of the proxy, and of every wrapper built on it, run in a resolver.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from abc import ABCMeta, abstractmethod
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any, Generic, ParamSpec, TypeVar

from .counts import open_counts
from .fluent import FluentExecutor
from .logging import ContainedLogger
from .outstanding import Outstanding
from .proxy import ProxyFuture
from .tracing import InContext
from .wrapper import check_logger, check_name, check_submittable

T = TypeVar("T")
P = ParamSpec("P")
H = TypeVar("H")  # the other system's handle of one task

logger = ContainedLogger(logging.getLogger("fluent_executors._remote"))

# Which executor's resolver the current thread is, if any.
_resolver_of = threading.local()


def _mark_resolver(token: object) -> None:
    _resolver_of.token = token


# Resolvers fetch results (a network round trip each) and run done callbacks; a few
# let a slow fetch or a callback that blocks for a while not hold up the others.
RESOLVER_THREADS = 4


class RemoteFuture(ProxyFuture[T], Generic[T, H]):
    """The future of one task on another system, resolved by a resolver thread.

    ``cancel()`` asks the system to cancel the task and succeeds unless the future
    is already done or the system refuses. A task that the system ends on its own
    with a cancellation error (not asked for here) fails the future with that error.
    """

    def __init__(self, executor: RemoteExecutor[H]) -> None:
        super().__init__()
        self._executor = executor
        self._handle: H | None = None  # held until resolved, so the task is kept
        self._cancel_requested = False

    def _attach(self, handle: H) -> None:
        """Start following ``handle``, the system's handle of the submitted task."""
        with self._lock:
            cancelled = self.cancelled()  # by a shutdown racing with submit
            if not cancelled:
                self._handle = handle
        if cancelled:
            self._cancel_hook_for(handle)
            return
        self._executor._add_done_callback(handle, self._hand_over)

    def _hand_over(self) -> None:
        """Called on the system's thread once the task has ended: resolve elsewhere."""
        if self.done():
            self._release()
            return
        try:
            self._executor._resolvers.submit(self._resolve)
        except RuntimeError:  # resolvers shut down (interpreter exit): resolve here
            self._resolve()

    def _resolve(self) -> None:
        """Fetch the task's outcome and resolve this future; in a resolver thread."""
        with self._lock:
            handle = self._handle
        if handle is None or self.done():
            self._release()
            return
        try:
            result = self._executor._fetch(handle)
        except BaseException as error:
            if self._cancel_requested:
                self._try_cancel()
            else:
                self._try_set_exception(error)
        else:
            self._try_set_result(result)
        finally:
            self._release()

    def _release(self) -> None:
        """Drop the handle: the system may forget the task and its result."""
        with self._lock:
            self._handle = None

    def _cancel_hook(self) -> bool:
        with self._lock:
            handle = self._handle
            self._cancel_requested = True
        if handle is None:  # not submitted yet (a racing shutdown) or resolved
            return True
        return self._cancel_hook_for(handle)

    def _cancel_hook_for(self, handle: H) -> bool:
        """Ask the system to cancel the task of ``handle``; never raises."""
        try:
            return self._executor._cancel_remote(handle)
        except Exception:
            self._executor._logger.warning(
                "%s %r could not cancel a task; the future is left to finish",
                type(self._executor).__name__,
                self._executor.name,
                exc_info=True,
            )
            with self._lock:
                self._cancel_requested = False
            return False

    def _is_running(self) -> bool:
        return False  # the other system does not tell when a task starts


class RemoteExecutor(FluentExecutor, Generic[H], metaclass=ABCMeta):
    """Base of the executors that run callables on another system.

    Subclasses implement the ``_submit_remote``, ``_add_done_callback``, ``_fetch``,
    ``_cancel_remote`` and ``_close_resources`` hooks; this class keeps the futures,
    the resolver threads and the shutdown state.

    Type parameters:
        H: the other system's handle of one task.
    """

    def __init__(self, name: str, kind: str, logger: logging.Logger | None) -> None:
        check_name(name)
        check_logger(logger)
        self._name = name
        self._logger = ContainedLogger(
            logger or logging.getLogger(type(self).__module__)
        )
        self._lock = threading.Lock()
        self._outstanding = Outstanding()
        self._closed = False
        # A token rather than self: the resolver threads must not keep the executor
        # alive, so that one nobody references is collected and its threads end.
        self._token = object()
        self._resolvers = concurrent.futures.ThreadPoolExecutor(
            RESOLVER_THREADS,
            thread_name_prefix=f"fluent-executors-{kind}-{name}",
            initializer=_mark_resolver,
            initargs=(self._token,),
        )
        self._kind = kind

    def _shut_down(self) -> bool:
        return self._closed

    def _open_metrics(self) -> None:
        """Start counting, for :meth:`stats` and the metrics; called at the end of
        the subclass's ``__init__``, once connected, so that a failed connection is
        not counted."""
        self._counts = open_counts(self, self._kind, self._name)

    # -- what subclasses define ------------------------------------------------------

    @abstractmethod
    def _submit_remote(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> H:
        """Start ``fn(*args, **kwargs)`` on the system; return its handle.

        Raises:
            Exception: the system refuses the task; the caller of ``submit`` gets it.
        """

    @abstractmethod
    def _add_done_callback(self, handle: H, callback: Callable[[], None]) -> None:
        """Have ``callback()`` called, on any thread, once the task has ended."""

    @abstractmethod
    def _fetch(self, handle: H) -> Any:
        """Return the ended task's result, or raise its exception; may block."""

    @abstractmethod
    def _cancel_remote(self, handle: H) -> bool:
        """Ask the system to cancel the task; ``False`` if it refuses."""

    def _close_resources(self) -> None:
        """Release what the executor owns (a cluster, a runtime); called once."""

    # -- the executor -----------------------------------------------------------------

    def submit(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> Future[T]:
        """Run ``fn(*args, **kwargs)`` on the other system.

        Returns:
            A ``Future[T]`` resolved with the task's outcome.

        Raises:
            TypeError: ``fn`` is not callable.
            RuntimeError: the executor has been shut down.
            Exception: whatever the other system raises when it refuses the task.
        """
        if isinstance(fn, InContext):  # from a wrapper: the callable alone runs there
            fn = fn.fn
        check_submittable(fn)
        future: RemoteFuture[T, H] = RemoteFuture(self)
        counts = self._counts
        counts.adopt(future)  # before a racing shutdown can see it and cancel it
        try:
            self._outstanding.add(future)
        except BaseException:
            counts.unadopt(future)
            raise
        try:
            handle = self._submit_remote(fn, args, kwargs)
        except BaseException as error:
            future._try_set_exception(error)  # counted as failed
            self._outstanding.discard(future)
            raise
        future._attach(handle)
        # Done, it is dropped; the last one after shutdown(wait=False) closes.
        future.add_done_callback(self._outstanding.discard)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting work; release what the executor owns once it is idle.

        Args:
            wait: if ``True``, return once every future is done and the resources
                are released; if ``False``, return at once, and let the last future
                to finish release them.
            cancel_futures: if ``True``, first cancel every future not done.

        Calling it more than once is harmless. New submits raise ``RuntimeError``.
        """
        pending = self._outstanding.close()
        if self._counts.metrics is not None:
            self._counts.metrics.close()
        if cancel_futures:
            for future in pending:
                future.cancel()
        # A done callback (running in a resolver) that waited here would wait for
        # itself: from there, the last future to finish closes the executor.
        waiting = wait and not self._in_resolver()
        self._outstanding.finish(waiting, partial(self._close, waiting))

    def _in_resolver(self) -> bool:
        return getattr(_resolver_of, "token", None) is self._token

    def _close(self, wait: bool) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._resolvers.shutdown(wait=wait)
        self._close_resources()
