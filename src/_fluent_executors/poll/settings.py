"""What a poll executor, threaded or async, is given: its arguments checked once,
each error naming its argument, and the poll core they make
(:class:`PollSettings`). ``PollExecutor`` and the async ``with_poll`` check
theirs here, and hand them to their drivers, which make their cores of them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from ..wrapper import check_callable, check_count, check_non_negative
from .core import PollCore, PollEntry

if TYPE_CHECKING:
    from ..logging import ContainedLogger
    from ..retry_policy import RetryPolicy

__all__ = ["PollSettings"]

E = TypeVar("E", bound="PollEntry[Any]")


class PollSettings:
    """The checked arguments of a poll executor, threaded or async.

    Args:
        poll_fn: the poll function (plain or coroutine function).
        cancel_fn: the cancel function (plain or coroutine function), or ``None``.
        default_interval: seconds between polls when the poll function returns
            ``None``, raises, or returns something that is not a number.
        logger: where the driver logs (the executor has made its default).
        name: the executor's name, in log messages (likewise).
        poll_retry_policy: asked after a failed call whether its futures stay
            pending (``None``: they fail).
        max_batch: at most this many descriptors per call (``None``: no limit).
        poll_timeout: seconds a call of the poll function may take (``None``: no
            limit).

    Raises:
        TypeError: ``poll_fn`` or ``cancel_fn`` is not callable; ``default_interval``
            or ``poll_timeout`` is not a real number; ``poll_retry_policy`` is not a
            ``RetryPolicy``; ``max_batch`` is not an ``int``.
        ValueError: ``default_interval`` or ``poll_timeout`` is negative or NaN;
            ``max_batch`` is below 1.
    """

    __slots__ = (
        "cancel_fn",
        "default_interval",
        "logger",
        "max_batch",
        "name",
        "poll_fn",
        "poll_retry_policy",
        "poll_timeout",
    )

    def __init__(
        self,
        poll_fn: Callable[[list[Any]], object],
        cancel_fn: Callable[[Any], object] | None,
        default_interval: float,
        logger: ContainedLogger,
        name: str,
        *,
        poll_retry_policy: RetryPolicy | None,
        max_batch: int | None,
        poll_timeout: float | None,
    ) -> None:
        from ..retry_policy import RetryPolicy  # (the core imports it as it needs it)

        check_callable("poll_fn", poll_fn)
        if cancel_fn is not None:
            check_callable("cancel_fn", cancel_fn)
        self.poll_fn, self.cancel_fn = poll_fn, cancel_fn
        self.default_interval = check_non_negative("default_interval", default_interval)
        self.logger, self.name = logger, name
        policy: object = poll_retry_policy
        if policy is not None and not isinstance(policy, RetryPolicy):
            raise TypeError(
                f"poll_retry_policy must be a RetryPolicy, got {type(policy).__name__}"
            )
        self.poll_retry_policy = poll_retry_policy
        self.max_batch = (
            None if max_batch is None else check_count("max_batch", max_batch)
        )
        self.poll_timeout = (
            None
            if poll_timeout is None
            else check_non_negative("poll_timeout", poll_timeout)
        )

    def core(self, recover: Callable[[], Iterable[E]]) -> PollCore[E]:
        """A poll core of these settings (see :class:`~.core.PollCore`).

        Args:
            recover: the descriptors of every future outstanding, from which the
                core makes its list anew if the poll function changed it.
        """
        return PollCore(
            self.default_interval,
            max_batch=self.max_batch,
            poll_retry_policy=self.poll_retry_policy,
            recover=recover,
        )
