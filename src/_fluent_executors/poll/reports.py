"""What every poll driver tells its log, and does, after the poll function's call:
a failed call settled as the core decided, a delay that is not a number, a list
changed behind its methods. The thread driver and the async driver share these,
so that their messages and their handling of a failure are one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..logging import ContainedLogger
    from .core import PollCore
    from .descriptor import PollDescriptor

__all__ = ["settle_failed_poll", "warn_bad_delay", "warn_list_changed"]


def settle_failed_poll(
    core: PollCore[PollDescriptor[Any]],
    batch: list[PollDescriptor[Any]],
    error: BaseException,
    now: float,
    logger: ContainedLogger,
    name: str,
) -> None:
    """After the poll function raised ``error`` for ``batch`` at ``now`` (in the
    ``except`` block: the record carries its traceback): leave
    the futures of ``batch`` pending if the core says so (its poll retry policy),
    else fail them with ``error``; log either way.

    Args:
        core: the driver's core.
        batch: the descriptors the call was given.
        error: what it raised.
        now: the driver's time.
        logger: where to log.
        name: the executor's name, in the messages.
    """
    failure = core.raised(batch, error, now)
    if failure.policy_error is not None:
        logger.exception(
            "poll retry policy %r of poll executor %r raised; failing the "
            "futures of the poll",
            core.poll_retry_policy,
            name,
            exc_info=failure.policy_error,
        )
    if failure.retry_in is not None:
        logger.warning(
            "poll function of poll executor %r raised (%d in a row); the %d "
            "futures it was given stay pending, next poll in %s s",
            name,
            failure.failures,
            len(batch),
            failure.retry_in,
            exc_info=True,
        )
        return
    logger.warning(
        "poll function of poll executor %r raised; failing the %d futures it was given",
        name,
        len(batch),
        exc_info=True,
    )
    for descriptor in batch:
        descriptor.yield_exception(error)


def warn_bad_delay(
    logger: ContainedLogger, name: str, returned: object, interval: float
) -> None:
    """Log that the poll function returned ``returned``, not a number of seconds
    (the driver warns once)."""
    logger.warning(
        "poll function of poll executor %r returned %r, which is not a "
        "number of seconds; polling every %s s instead (warned once)",
        name,
        returned,
        interval,
    )


def warn_list_changed(logger: ContainedLogger, name: str) -> None:
    """Log that the poll function changed its list behind its methods (the core
    says so once)."""
    logger.warning(
        "poll function of poll executor %r changed its list of descriptors "
        "other than through the list's methods (list.sort(descriptors), "
        "C code); the executor makes its own list anew "
        "each time it finds that out (see the poll page, 'The list of "
        "descriptors'; warned once)",
        name,
    )
