"""The ``Executors`` facade: one place to build every executor of the library."""

from __future__ import annotations

import logging
from concurrent.futures import Executor
from typing import Any

from .poll import CancelFn, PollExecutor, PollFn
from .pools import ProcessPoolExecutor, ThreadPoolExecutor
from .sync import SyncExecutor

__all__ = ["Executors"]


class Executors:
    """Builds executors: base executors, and wrappers around any executor.

    Every executor returned here has the chainable ``with_*`` methods of
    :class:`~fluent_executors.FluentExecutor`, so these two lines are the same::

        Executors.with_poll(Executors.thread_pool(max_workers=4), poll_tasks)
        Executors.thread_pool(max_workers=4).with_poll(poll_tasks)

    The ``with_*`` methods take any :class:`concurrent.futures.Executor` (a thread
    pool, a process pool, a Dask client's executor) as the delegate, and return a
    new executor; the delegate is left as it was. Shutting down the new executor, or
    leaving its ``with`` block, shuts down the delegate too.

    .. versionadded:: 0.1.0
    """

    @staticmethod
    def thread_pool(
        max_workers: int | None = None, *args: Any, name: str = "default", **kwargs: Any
    ) -> ThreadPoolExecutor:
        """Return a new :class:`~fluent_executors.ThreadPoolExecutor`.

        Arguments other than ``name`` are those of
        :class:`concurrent.futures.ThreadPoolExecutor`.

        Raises:
            TypeError: ``name`` is not a ``str``.
            ValueError: ``max_workers`` is not positive.

        .. versionadded:: 0.1.0
        """
        return ThreadPoolExecutor(max_workers, *args, name=name, **kwargs)

    @staticmethod
    def process_pool(
        max_workers: int | None = None, *args: Any, name: str = "default", **kwargs: Any
    ) -> ProcessPoolExecutor:
        """Return a new :class:`~fluent_executors.ProcessPoolExecutor`.

        Arguments other than ``name`` are those of
        :class:`concurrent.futures.ProcessPoolExecutor`.

        Raises:
            TypeError: ``name`` is not a ``str``.
            ValueError: ``max_workers`` is not positive.

        .. versionadded:: 0.1.0
        """
        return ProcessPoolExecutor(max_workers, *args, name=name, **kwargs)

    @staticmethod
    def sync(name: str = "default") -> SyncExecutor:
        """Return a new :class:`~fluent_executors.SyncExecutor`, which runs each
        callable in the thread that submits it.

        Raises:
            TypeError: ``name`` is not a ``str``.

        .. versionadded:: 0.1.0
        """
        return SyncExecutor(name=name)

    @staticmethod
    def with_poll(
        executor: Executor,
        poll_fn: PollFn,
        cancel_fn: CancelFn | None = None,
        default_interval: float = 5.0,
        logger: logging.Logger | None = None,
    ) -> PollExecutor:
        """Wrap ``executor`` in a :class:`~fluent_executors.PollExecutor`.

        The new executor's futures are resolved by ``poll_fn`` once their callable
        has returned on ``executor``. It takes ``executor``'s ``name`` if it has one.

        Args:
            executor: the delegate, any :class:`concurrent.futures.Executor`.
            poll_fn: the poll function; see :class:`~fluent_executors.PollExecutor`.
            cancel_fn: the cancel function, or ``None``.
            default_interval: seconds between polls unless the poll function says
                otherwise.
            logger: where to log; default the ``fluent_executors.poll`` logger.

        Raises:
            TypeError: ``executor`` has no ``submit`` method; ``poll_fn`` or
                ``cancel_fn`` is not callable; ``default_interval`` is not a number.
            ValueError: ``default_interval`` is negative or NaN.

        .. versionadded:: 0.1.0
        """
        name = getattr(executor, "name", "default")
        return PollExecutor(
            executor,
            poll_fn,
            cancel_fn,
            default_interval,
            logger,
            name=name if isinstance(name, str) else "default",
        )
