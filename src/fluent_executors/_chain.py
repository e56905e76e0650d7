"""The chainable ``with_*`` methods that every executor of this library has."""

from __future__ import annotations

import logging
from concurrent.futures import Executor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .poll import CancelFn, PollExecutor, PollFn


class FluentExecutor(Executor):
    """An :class:`~concurrent.futures.Executor` with chainable ``with_*`` methods.

    Every executor that :class:`~fluent_executors.Executors` returns is one, so a chain
    reads from the innermost executor outwards::

        Executors.thread_pool(max_workers=4).with_poll(poll_tasks)

    Each ``with_*`` method returns a *new* executor that wraps this one (its
    *delegate*) and leaves this one untouched; shutting down the new executor shuts
    down this one too. The new executor takes this one's :attr:`name`.

    .. versionadded:: 0.1.0
    """

    @property
    def name(self) -> str:
        """The executor's name (``str``), used in thread names and log messages."""
        return getattr(self, "_name", "default")

    def with_poll(
        self,
        poll_fn: PollFn,
        cancel_fn: CancelFn | None = None,
        default_interval: float = 5.0,
        logger: logging.Logger | None = None,
    ) -> PollExecutor:
        """Wrap this executor in a :class:`~fluent_executors.PollExecutor`.

        Same as ``Executors.with_poll(self, ...)``; see
        :meth:`Executors.with_poll <fluent_executors.Executors.with_poll>`.

        .. versionadded:: 0.1.0
        """
        from .executors import Executors

        return Executors.with_poll(self, poll_fn, cancel_fn, default_interval, logger)
