"""The async executors at the bottom of a chain (:class:`AsyncExecutors`), as
:class:`~fluent_executors.Executors` is the threaded side's."""

from __future__ import annotations

from ..fluent import SameResult
from ..public import publish
from ..wrapper import check_count
from .executor import AsyncExecutor
from .layers import Inline, ThreadPool

__all__ = ["AsyncExecutors"]


class AsyncExecutors:
    """The async executors at the bottom of a chain (see :class:`AsyncExecutor`).

    .. versionadded:: 0.2.0
    """

    @staticmethod
    def inline(name: str = "default") -> AsyncExecutor[SameResult]:
        """Run the function in the task that calls ``run``: a coroutine function
        is awaited, a plain function called. Starts no thread.

        Args:
            name: the executor's name, in log messages and ``stats()``.

        Returns:
            An ``AsyncExecutor[SameResult]``.
        """
        return AsyncExecutor(None, name, Inline())

    @staticmethod
    def thread_pool(
        max_workers: int, name: str = "default"
    ) -> AsyncExecutor[SameResult]:
        """Run plain functions in worker threads (``anyio.to_thread.run_sync``),
        at most ``max_workers`` at once.

        Args:
            max_workers: an ``int`` >= 1.
            name: the executor's name, in log messages and ``stats()``.

        Returns:
            An ``AsyncExecutor[SameResult]``.

        Raises:
            TypeError: ``max_workers`` is not an ``int``. ValueError: below 1.
        """
        check_count("max_workers", max_workers)
        return AsyncExecutor(None, name, ThreadPool(max_workers))


publish("fluent_executors.aio", AsyncExecutors)
