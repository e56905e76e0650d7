"""BoundCallable: a callable bound to an executor, customisable with ``with_*``."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar

from _fluent_executors.fluent import name_of
from _fluent_executors.wrapper import check_callable, check_delegate

from .map import FlatMapExecutor, MapExecutor

if TYPE_CHECKING:
    import os

    from _fluent_executors.durable import Store

    from .poll import CancelFn, PollFn
    from .retry import RetryPolicy
    from .throttle import ThrottleCount

__all__ = ["BoundCallable"]

T = TypeVar("T")
U = TypeVar("U")
P = ParamSpec("P")


class BoundCallable(Generic[P, T]):
    """A callable that submits a function to an executor and returns the future.

    Calling it with arguments submits the bound function with those arguments to
    the bound executor: ``bound(*args, **kwargs)`` is
    ``executor.submit(fn, *args, **kwargs)``. It is what
    :meth:`Executors.bind <fluent_executors.Executors.bind>` and
    :meth:`Executors.flat_bind <fluent_executors.Executors.flat_bind>` return.

    Its ``with_*`` methods return a new bound callable whose executor is the bound
    executor wrapped as by the executor method of the same name, so that a function
    and the way it runs can be defined together::

        fetch = Executors.bind(pool, requests.get).with_map(lambda r: r.json())
        future = fetch("https://example.com/items")  # Future of the decoded JSON

    It carries the bound function's ``__name__``, ``__doc__`` and ``__wrapped__``.
    Users get one from :class:`~fluent_executors.Executors`, never construct it.

    Type parameters:
        P: the parameters of the bound function.
        T: the result type of the futures it returns.
    """

    def __init__(self, executor: Executor, fn: Callable[P, Any]) -> None:
        check_delegate(executor)
        check_callable("fn", fn)
        functools.update_wrapper(self, fn, updated=())
        self._executor = executor
        self._fn = fn

    @property
    def executor(self) -> Executor:
        """The executor that calls submit to
        (:class:`~concurrent.futures.Executor`); shut it down when done."""
        return self._executor

    def _name(self, name: str | None) -> str:
        """The name of a wrapper around the bound executor."""
        return name_of(self._executor, name)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Submit the bound function with these arguments to the bound executor.

        Returns:
            The executor's ``Future[T]``.

        Raises:
            RuntimeError: the executor has been shut down.
            Exception: whatever the executor's ``submit`` raises.
        """
        return self._executor.submit(self._fn, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<BoundCallable {self._fn!r} on {self._executor!r}>"

    # -- the with_* methods: each wraps the executor, keeps the function ------------

    def with_map(
        self,
        fn: Callable[[T], U],
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        error_fn: Callable[[Exception], U] | None = None,
    ) -> BoundCallable[P, U]:
        """Transform the results: see
        :meth:`Executors.with_map <fluent_executors.Executors.with_map>`.
        """
        wrapped = MapExecutor(
            self._executor, fn, logger, self._name(name), error_fn=error_fn
        )
        return BoundCallable(wrapped, self._fn)

    def with_flat_map(
        self,
        fn: Callable[[T], Future[U]],
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        error_fn: Callable[[Exception], Future[U]] | None = None,
    ) -> BoundCallable[P, U]:
        """Chain a second asynchronous step: see
        :meth:`Executors.with_flat_map <fluent_executors.Executors.with_flat_map>`.
        """
        wrapped = FlatMapExecutor(
            self._executor, fn, logger, self._name(name), error_fn=error_fn
        )
        return BoundCallable(wrapped, self._fn)

    # The wrappers that keep the result type; each imports its module when called
    # (a program that binds a callable imports the wrappers it uses only).

    def with_poll(
        self,
        poll_fn: PollFn,
        cancel_fn: CancelFn | None = None,
        default_interval: float = 5.0,
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        poll_retry_policy: RetryPolicy | None = None,
        max_batch: int | None = None,
        poll_timeout: float | None = None,
        store: Store | str | os.PathLike[str] | None = None,
        lease: float = 60.0,
    ) -> BoundCallable[P, T]:
        """Resolve the futures by polling: see
        :meth:`Executors.with_poll <fluent_executors.Executors.with_poll>`.
        """
        from .poll import PollExecutor

        wrapped = PollExecutor(
            self._executor,
            poll_fn,
            cancel_fn,
            default_interval,
            logger,
            self._name(name),
            poll_retry_policy=poll_retry_policy,
            max_batch=max_batch,
            poll_timeout=poll_timeout,
            store=store,
            lease=lease,
        )
        return BoundCallable(wrapped, self._fn)

    def with_retry(
        self,
        retry_policy: RetryPolicy | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> BoundCallable[P, T]:
        """Retry failed calls: see
        :meth:`Executors.with_retry <fluent_executors.Executors.with_retry>`.
        """
        from .retry import RetryExecutor

        wrapped = RetryExecutor(
            self._executor, retry_policy, logger, self._name(name), **kwargs
        )
        return BoundCallable(wrapped, self._fn)

    def with_timeout(
        self,
        timeout: float,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> BoundCallable[P, T]:
        """Cancel calls not done within ``timeout`` seconds: see
        :meth:`Executors.with_timeout <fluent_executors.Executors.with_timeout>`.
        """
        from .timeout import TimeoutExecutor

        wrapped = TimeoutExecutor(self._executor, timeout, logger, self._name(name))
        return BoundCallable(wrapped, self._fn)

    def with_throttle(
        self,
        count: ThrottleCount,
        logger: logging.Logger | None = None,
        name: str | None = None,
        block: bool = False,
    ) -> BoundCallable[P, T]:
        """Run at most ``count`` calls at once: see
        :meth:`Executors.with_throttle <fluent_executors.Executors.with_throttle>`.
        """
        from .throttle import ThrottleExecutor

        wrapped = ThrottleExecutor(
            self._executor, count, logger, self._name(name), block
        )
        return BoundCallable(wrapped, self._fn)

    def with_rate_limit(
        self,
        max_calls: int,
        period: float = 1.0,
        logger: logging.Logger | None = None,
        name: str | None = None,
        *,
        adaptive: bool = False,
        too_many: Callable[[BaseException], object] | None = None,
        decrease_factor: float = 0.5,
        increase: float = 1.0,
        max_pause: float = 300.0,
    ) -> BoundCallable[P, T]:
        """Start at most ``max_calls`` calls per ``period`` seconds: see
        :meth:`Executors.with_rate_limit
        <fluent_executors.Executors.with_rate_limit>`.
        """
        from .rate_limit import RateLimitExecutor

        wrapped = RateLimitExecutor(
            self._executor,
            max_calls,
            period,
            logger,
            self._name(name),
            adaptive=adaptive,
            too_many=too_many,
            decrease_factor=decrease_factor,
            increase=increase,
            max_pause=max_pause,
        )
        return BoundCallable(wrapped, self._fn)

    def with_cancel_on_shutdown(
        self,
        logger: logging.Logger | None = None,
        name: str | None = None,
    ) -> BoundCallable[P, T]:
        """Cancel pending calls when the executor shuts down: see
        :meth:`Executors.with_cancel_on_shutdown
        <fluent_executors.Executors.with_cancel_on_shutdown>`.
        """
        from .cancel_on_shutdown import CancelOnShutdownExecutor

        wrapped = CancelOnShutdownExecutor(self._executor, logger, self._name(name))
        return BoundCallable(wrapped, self._fn)


def flat_bound(executor: Executor, fn: Callable[P, Any]) -> BoundCallable[P, Any]:
    """What ``flat_bind`` returns: ``fn`` bound to ``executor``, its calls' futures
    taking on the outcome of the future that ``fn`` returns."""
    return BoundCallable(executor, fn).with_flat_map(_same_future)


def _same_future(future: Future[T]) -> Future[T]:
    return future
