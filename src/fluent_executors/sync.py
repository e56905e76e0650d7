"""SyncExecutor: runs each callable at once, in the thread that submits it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from _fluent_executors.counts import open_counts
from _fluent_executors.fluent import FluentExecutor, SameResult
from _fluent_executors.proxy import ProxyFuture
from _fluent_executors.wrapper import check_logger, check_name, check_submittable

__all__ = ["SyncExecutor"]

T = TypeVar("T")
P = ParamSpec("P")


class SyncExecutor(FluentExecutor[SameResult]):
    """An executor that runs each callable inside ``submit``, in the calling thread.

    ``submit`` returns a future that is already done: it holds the callable's return
    value, or the ``Exception`` it raised. A ``BaseException`` that is not an
    ``Exception`` (``KeyboardInterrupt``, ``SystemExit``) propagates to the caller of
    ``submit``, since it is the caller's own thread that runs the callable.

    Useful in tests and as the innermost executor of a chain whose work is cheap.
    It starts no thread.

    A ``FluentExecutor[SameResult]`` (see :ref:`guide-result-types`).

    Args:
        logger: accepted for compatibility with more-executors; nothing is logged.
        name: the executor's name.

    Raises:
        TypeError: ``name`` is not a ``str``; ``logger`` is not a logger.
    """

    def __init__(
        self, logger: logging.Logger | None = None, name: str = "default"
    ) -> None:
        check_name(name)
        check_logger(logger)
        self._name = name
        self._is_shutdown = False
        self._counts = open_counts(self, "sync", name)

    def submit(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> ProxyFuture[T]:
        """Run ``fn(*args, **kwargs)`` now and return its outcome as a done future.

        Returns:
            A done ``Future[T]``.

        Raises:
            TypeError: ``fn`` is not callable, or is a coroutine function.
            RuntimeError: the executor has been shut down.
        """
        check_submittable(fn)
        if self._is_shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")
        future: ProxyFuture[T] = ProxyFuture()
        self._counts.adopt(future)  # running until resolved
        try:
            result = fn(*args, **kwargs)
        except BaseException as error:
            future._try_set_exception(error)  # counted as failed
            if not isinstance(error, Exception):
                raise
        else:
            future._try_set_result(result)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Refuse further submits. There is nothing to wait for or cancel.

        Calling it more than once is harmless.
        """
        self._is_shutdown = True
        if self._counts.metrics is not None:
            self._counts.metrics.close()
