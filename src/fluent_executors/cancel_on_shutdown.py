"""CancelOnShutdownExecutor: shutdown() cancels every future not yet done."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar, overload

from typing_extensions import ParamSpec

from ._chain import FluentExecutor, R, SameResult
from ._future import ProxyFuture
from ._wrapper import WrapperExecutor, check_callable

__all__ = ["CancelOnShutdownExecutor"]

T = TypeVar("T")
P = ParamSpec("P")


class CancelOnShutdownExecutor(WrapperExecutor[R]):
    """An executor whose :meth:`shutdown` cancels every future it returned that is
    not yet done, then shuts down the delegate.

    Useful for work whose results are of no use once the program stops: queued work
    is dropped instead of run, and waiters are released at once. A future whose
    cancel is refused (for example, running on a thread pool) goes on; ``shutdown``
    with ``wait=True`` then waits for it, as the delegate's ``shutdown`` does.

    Each future is tracked from ``submit`` until it is done, in O(1).

    Args:
        delegate: the executor that runs the submitted callables.
        logger: accepted for a uniform signature; this executor logs nothing.
        name: the executor's name.

    Raises:
        TypeError: ``delegate`` has no ``submit`` method; ``name`` is not a ``str``.

    Type parameters:
        R: the result type of the futures: the delegate's, if it is a
            :class:`~fluent_executors.FluentExecutor`, else
            :class:`~fluent_executors.SameResult` (what the callable returns).

    .. versionadded:: 0.1.0
    """

    @overload
    def __init__(
        self,
        delegate: FluentExecutor[R],
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None: ...

    @overload
    def __init__(
        self: CancelOnShutdownExecutor[SameResult],
        delegate: Executor,
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None: ...

    def __init__(
        self,
        delegate: Executor,
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None:
        super().__init__(delegate, logger=logger, name=name)
        # A dict as an insertion-ordered set: O(1) add and remove.
        self._outstanding: dict[Future[Any], None] = {}
        self._open_metrics("cancel_on_shutdown")

    # Executor.submit promises a Future of the callable's result type, which an
    # executor of another result type R (around a map executor) does not keep.
    @overload  # type: ignore[override]
    def submit(
        self: CancelOnShutdownExecutor[SameResult],
        fn: Callable[P, T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> ProxyFuture[T]: ...

    @overload
    def submit(
        self, fn: Callable[P, object], /, *args: P.args, **kwargs: P.kwargs
    ) -> ProxyFuture[R]: ...

    def submit(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> ProxyFuture[T] | ProxyFuture[R]:
        """Submit ``fn(*args, **kwargs)`` to the delegate.

        Returns:
            A ``Future[T]`` for a ``fn`` returning ``T`` (a ``Future[R]`` if the
            executor's result type ``R`` is not
            :class:`~fluent_executors.SameResult`) that follows the delegate's
            future, until ``shutdown`` cancels it.

        Raises:
            TypeError: ``fn`` is not callable.
            RuntimeError: the executor has been shut down.
            Exception: whatever the delegate's ``submit`` raises.
        """
        check_callable("fn", fn)
        self._check_open()
        future: ProxyFuture[T] = ProxyFuture()
        future._follow(self._submit_to_delegate(fn, *args, **kwargs))
        with self._shutdown_lock:
            closed = self._is_shutdown  # shutdown() ran during the delegate's submit
            if not closed:
                self._outstanding[future] = None
        if self._metrics is not None:
            self._metrics.track(future)
        if closed:
            future.cancel()
        else:
            future.add_done_callback(self._forget)
        return future

    def _forget(self, future: Future[Any]) -> None:
        with self._shutdown_lock:
            self._outstanding.pop(future, None)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Cancel every future not yet done; shut down the delegate.

        Args:
            wait: if ``True``, return only once the delegate's work is done.
            cancel_futures: passed on to the delegate's ``shutdown``.

        Calling it more than once is harmless. New submits raise ``RuntimeError``.
        """
        with self._shutdown_lock:
            self._is_shutdown = True
            outstanding = list(self._outstanding)
        for future in outstanding:
            future.cancel()
        super().shutdown(wait, cancel_futures=cancel_futures)
