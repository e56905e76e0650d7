"""CancelOnShutdownExecutor: shutdown() cancels every future not yet done."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from _fluent_executors.fluent import Delegate, R
from _fluent_executors.outstanding import Outstanding
from _fluent_executors.proxy import ProxyFuture
from _fluent_executors.wrapper import WrapperExecutor

__all__ = ["CancelOnShutdownExecutor"]

T = TypeVar("T")


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
    """

    def __init__(
        self,
        delegate: Delegate[R],
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None:
        super().__init__(delegate, logger=logger, name=name)
        self._outstanding = Outstanding()
        self._open_metrics("cancel_on_shutdown")

    def _submit(
        self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ProxyFuture[T]:
        self._check_open()
        return self._tracked(self._submit_to_delegate(fn, args, kwargs))

    def _resumed(self, future: ProxyFuture[Any]) -> ProxyFuture[Any]:
        return self._tracked(future)

    def _tracked(self, upstream: Future[T]) -> ProxyFuture[T]:
        """A future of this executor following ``upstream``, the delegate's,
        cancelled at shutdown if not done by then."""
        future: ProxyFuture[T] = ProxyFuture()
        self._counts.adopt(future)
        future._follow(upstream)
        try:
            self._outstanding.add(future)
            closed = False
        except RuntimeError:  # shutdown() ran during the delegate's submit
            closed = True
        if closed:
            future.cancel()
        else:
            future.add_done_callback(self._outstanding.discard)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Cancel every future not yet done; shut down the delegate.

        Args:
            wait: if ``True``, return only once the delegate's work is done.
            cancel_futures: passed on to the delegate's ``shutdown``.

        Calling it more than once is harmless. New submits raise ``RuntimeError``.
        """
        with self._shutdown_lock:
            self._is_shutdown = True
        for future in self._outstanding.close():
            future.cancel()
        super().shutdown(wait, cancel_futures=cancel_futures)
