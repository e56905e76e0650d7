"""Test doubles for the wrapper executors' tests: delegates the test controls."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Executor, Future, InvalidStateError
from typing import Any

from fluent_executors.testing import ManualExecutor

__all__ = [
    "TIMEOUT",
    "BrokenSubmitExecutor",
    "ManualExecutor",
    "invalid_state_errors",
    "raise_",
]

TIMEOUT = 10.0  # seconds: a generous bound for anything that should happen "now"


class BrokenSubmitExecutor(Executor):
    """A delegate whose ``submit`` always raises ``error``."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error or OSError("the delegate is broken")
        self.shutdowns: list[tuple[bool, bool]] = []

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> Future[Any]:
        raise self.error

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.shutdowns.append((wait, cancel_futures))


def raise_(error: BaseException) -> Any:
    """Raise ``error``: a submitted callable that fails."""
    raise error


def invalid_state_errors(records: list[logging.LogRecord]) -> list[str]:
    """The messages of the log records that report an ``InvalidStateError``."""
    return [
        record.getMessage()
        for record in records
        if "InvalidStateError" in record.getMessage()
        or (record.exc_info and record.exc_info[0] is InvalidStateError)
    ]
