"""The exceptions of the library that are its own."""

from __future__ import annotations

from concurrent.futures import CancelledError

from .public import publish

__all__ = ["TimeoutCancelledError"]


def install_hint(extra: str) -> str:
    """How to install the optional extra ``extra``, for an ``ImportError`` (``str``):
    the package is installed from a checkout of its repository or a wheel built from
    one, not from an index."""
    return (
        f"install the '{extra}' extra: pip install '.[{extra}]' in a checkout of "
        f"fluent-executors, or pip install '<the built wheel>[{extra}]'"
    )


class TimeoutCancelledError(CancelledError):
    """What a future ended by a timeout raises: it was cancelled because its time
    was up.

    A subclass of :class:`concurrent.futures.CancelledError`, so ``except
    CancelledError`` still catches it and ``future.cancelled()`` is ``True``; the
    message says that the future timed out, after how many seconds, and where
    (the timeout executor's name, or ``f_timeout``).

    Args:
        timeout: the timeout that ran out, in seconds (``float``).
        source: what timed the future out: the name of a
            :class:`~fluent_executors.TimeoutExecutor`, or ``"f_timeout"``.

    .. versionadded:: 0.2.0
    """

    def __init__(self, timeout: float, source: str) -> None:
        super().__init__(f"timed out after {timeout:g} seconds ({source})")
        self.timeout = timeout
        """The timeout that ran out, in seconds (``float``)."""
        self.source = source
        """The name of the timeout executor, or ``"f_timeout"`` (``str``)."""

    def __reduce__(self) -> tuple[type[TimeoutCancelledError], tuple[float, str]]:
        # Copied (each result() raises a copy) and pickled with its own arguments.
        return type(self), (self.timeout, self.source)


publish("fluent_executors", TimeoutCancelledError)
