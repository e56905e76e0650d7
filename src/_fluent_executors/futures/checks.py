"""What the combinators share: the checks of their arguments, and reading and
cancelling their inputs."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future
from typing import Any


def _check_future(argument: str, value: object) -> Future[Any]:
    """Return ``value`` if it is a future; else raise ``TypeError`` naming
    ``argument``."""
    if not isinstance(value, Future):
        raise TypeError(
            f"{argument} must be a concurrent.futures.Future, "
            f"got {type(value).__name__}"
        )
    return value


def _checked_futures(argument: str, values: Iterable[object]) -> list[Future[Any]]:
    """Return ``values`` as a list, or raise ``TypeError`` naming the first bad one."""
    return [
        _check_future(f"{argument}[{index}]", value)
        for index, value in enumerate(values)
    ]


def _check_iterable(argument: str, value: object) -> None:
    if not isinstance(value, Iterable):
        raise TypeError(f"{argument} must be iterable, got {type(value).__name__}")


def _succeeded(future: Future[Any]) -> bool:
    """Whether the done ``future`` holds a result (is neither cancelled nor failed)."""
    return not future.cancelled() and future.exception() is None


def _cancel_pending(futures: list[Future[Any]]) -> bool:
    """Cancel every future of ``futures`` not yet done; ``True`` if any of them was
    cancelled."""
    cancelled = False
    for future in futures:
        if not future.done() and future.cancel():
            cancelled = True
    return cancelled
