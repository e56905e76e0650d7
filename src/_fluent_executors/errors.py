"""The exceptions of the library that are its own."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import CancelledError
from typing import Any, TypeVar

from .public import publish

__all__ = ["TimeoutCancelledError"]

T = TypeVar("T")

# How Python's TypeError for a call's arguments goes on after ``<name>() ``.
_ARGUMENT_ERRORS = (
    "got an unexpected keyword argument ",
    "got multiple values for argument ",
    "missing ",
)


def called_as(method: str, build: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``build(*args, **kwargs)``, for the method ``method`` (``str``, for example
    ``"Executors.with_retry"``) that a user called.

    A method of the facade or a ``with_*`` method passes its arguments on to a
    constructor, whose own name Python's ``TypeError`` for a wrong, missing or
    repeated keyword argument would give (``ExceptionRetryPolicy.__init__() got an
    unexpected keyword argument``): the ``TypeError`` raised instead names
    ``method``, the call the user wrote. Any other exception passes unchanged.

    Raises:
        TypeError: an argument that ``build`` (or a constructor it calls) does not
            take, or a missing one, named as an argument of ``method``.
    """
    try:
        return build(*args, **kwargs)
    except TypeError as error:
        callee, found, problem = str(error).partition("() ")
        if not (
            found
            and callee.endswith("__init__")
            and " " not in callee
            and problem.startswith(_ARGUMENT_ERRORS)
        ):
            raise
        raise TypeError(f"{method}() {problem}") from None


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
