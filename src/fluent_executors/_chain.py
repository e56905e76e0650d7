"""The chainable ``with_*`` methods that every executor of this library has."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any, TypeVar

from typing_extensions import ParamSpec

if TYPE_CHECKING:
    import asyncio

    from .asyncio import AsyncioExecutor
    from .bind import BoundCallable
    from .cancel_on_shutdown import CancelOnShutdownExecutor
    from .map import FlatMapExecutor, MapExecutor
    from .poll import CancelFn, PollExecutor, PollFn
    from .rate_limit import RateLimitExecutor
    from .retry import RetryExecutor, RetryPolicy
    from .throttle import ThrottleCount, ThrottleExecutor
    from .timeout import TimeoutExecutor

T = TypeVar("T")
U = TypeVar("U")
P = ParamSpec("P")


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
        *,
        name: str | None = None,
    ) -> PollExecutor:
        """Wrap this executor in a :class:`~fluent_executors.PollExecutor`.

        Same as ``Executors.with_poll(self, ...)``; see
        :meth:`Executors.with_poll <fluent_executors.Executors.with_poll>`.

        .. versionadded:: 0.1.0
        """
        from .executors import Executors

        return Executors.with_poll(
            self, poll_fn, cancel_fn, default_interval, logger, name=name
        )

    def with_retry(
        self,
        retry_policy: RetryPolicy | None = None,
        logger: logging.Logger | None = None,
        *,
        name: str | None = None,
        **kwargs: Any,
    ) -> RetryExecutor:
        """Wrap this executor in a :class:`~fluent_executors.RetryExecutor`.

        Same as ``Executors.with_retry(self, ...)``; see
        :meth:`Executors.with_retry <fluent_executors.Executors.with_retry>`.

        .. versionadded:: 0.1.0
        """
        from .executors import Executors

        return Executors.with_retry(self, retry_policy, logger, name=name, **kwargs)

    def with_timeout(
        self,
        timeout: float,
        logger: logging.Logger | None = None,
        *,
        name: str | None = None,
    ) -> TimeoutExecutor:
        """Wrap this executor in a :class:`~fluent_executors.TimeoutExecutor`.

        Same as ``Executors.with_timeout(self, ...)``; see
        :meth:`Executors.with_timeout <fluent_executors.Executors.with_timeout>`.

        .. versionadded:: 0.1.0
        """
        from .executors import Executors

        return Executors.with_timeout(self, timeout, logger, name=name)

    def with_asyncio(
        self,
        loop: asyncio.AbstractEventLoop | None = None,
        logger: logging.Logger | None = None,
    ) -> AsyncioExecutor:
        """Wrap this executor in a :class:`~fluent_executors.AsyncioExecutor`.

        Same as ``Executors.with_asyncio(self, ...)``; see
        :meth:`Executors.with_asyncio <fluent_executors.Executors.with_asyncio>`.

        .. versionadded:: 0.1.0
        """
        from .executors import Executors

        return Executors.with_asyncio(self, loop, logger)

    def with_map(
        self,
        fn: Callable[[Any], U],
        error_fn: Callable[[Exception], U] | None = None,
        logger: logging.Logger | None = None,
        *,
        name: str | None = None,
    ) -> MapExecutor[U]:
        """Wrap this executor in a :class:`~fluent_executors.MapExecutor`.

        Same as ``Executors.with_map(self, ...)``; see
        :meth:`Executors.with_map <fluent_executors.Executors.with_map>`.

        .. versionadded:: 0.1.0
        """
        from .executors import Executors

        return Executors.with_map(self, fn, error_fn, logger, name=name)

    def with_flat_map(
        self,
        fn: Callable[[Any], Future[U]],
        error_fn: Callable[[Exception], Future[U]] | None = None,
        logger: logging.Logger | None = None,
        *,
        name: str | None = None,
    ) -> FlatMapExecutor[U]:
        """Wrap this executor in a :class:`~fluent_executors.FlatMapExecutor`.

        Same as ``Executors.with_flat_map(self, ...)``; see
        :meth:`Executors.with_flat_map <fluent_executors.Executors.with_flat_map>`.

        .. versionadded:: 0.1.0
        """
        from .executors import Executors

        return Executors.with_flat_map(self, fn, error_fn, logger, name=name)

    def with_throttle(
        self,
        count: ThrottleCount,
        block: bool = False,
        logger: logging.Logger | None = None,
        *,
        name: str | None = None,
    ) -> ThrottleExecutor:
        """Wrap this executor in a :class:`~fluent_executors.ThrottleExecutor`.

        Same as ``Executors.with_throttle(self, ...)``; see
        :meth:`Executors.with_throttle <fluent_executors.Executors.with_throttle>`.

        .. versionadded:: 0.1.0
        """
        from .executors import Executors

        return Executors.with_throttle(self, count, block, logger, name=name)

    def with_rate_limit(
        self,
        max_calls: int,
        period: float = 1.0,
        logger: logging.Logger | None = None,
        *,
        name: str | None = None,
    ) -> RateLimitExecutor:
        """Wrap this executor in a :class:`~fluent_executors.RateLimitExecutor`.

        Same as ``Executors.with_rate_limit(self, ...)``; see
        :meth:`Executors.with_rate_limit <fluent_executors.Executors.with_rate_limit>`.

        .. versionadded:: 0.1.0
        """
        from .executors import Executors

        return Executors.with_rate_limit(self, max_calls, period, logger, name=name)

    def with_cancel_on_shutdown(
        self, logger: logging.Logger | None = None, *, name: str | None = None
    ) -> CancelOnShutdownExecutor:
        """Wrap this executor in a
        :class:`~fluent_executors.CancelOnShutdownExecutor`.

        Same as ``Executors.with_cancel_on_shutdown(self, ...)``; see
        :meth:`Executors.with_cancel_on_shutdown
        <fluent_executors.Executors.with_cancel_on_shutdown>`.

        .. versionadded:: 0.1.0
        """
        from .executors import Executors

        return Executors.with_cancel_on_shutdown(self, logger, name=name)

    def bind(self, fn: Callable[P, T]) -> BoundCallable[P, T]:
        """Bind ``fn`` to this executor: return a callable that submits it.

        Same as ``Executors.bind(self, fn)``; see
        :meth:`Executors.bind <fluent_executors.Executors.bind>`.

        .. versionadded:: 0.1.0
        """
        from .executors import Executors

        return Executors.bind(self, fn)

    def flat_bind(self, fn: Callable[P, Future[T]]) -> BoundCallable[P, T]:
        """Bind ``fn``, which returns a future, to this executor.

        Same as ``Executors.flat_bind(self, fn)``; see
        :meth:`Executors.flat_bind <fluent_executors.Executors.flat_bind>`.

        .. versionadded:: 0.1.0
        """
        from .executors import Executors

        return Executors.flat_bind(self, fn)
