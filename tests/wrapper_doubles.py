"""Test doubles for the wrapper executors' tests: delegates the test controls."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Executor, Future, InvalidStateError
from typing import Any

from fluent_executors import Executors, PollDescriptor, f_return
from fluent_executors.testing import ManualExecutor

__all__ = [
    "EXAMPLES",
    "TIMEOUT",
    "BrokenSubmitExecutor",
    "ManualExecutor",
    "examples",
    "invalid_state_errors",
    "raise_",
    "resolve_all",
    "same",
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


def resolve_all(descriptors: list[PollDescriptor[Any]]) -> None:
    """A poll function that resolves every future with its delegate's result."""
    for descriptor in descriptors:
        descriptor.yield_result()


def same(value: object) -> object:
    """The function of a map that changes nothing."""
    return value


# One way to build each wrapper on a delegate, by its kind (its chain method is
# with_<kind>), for the tests that run every wrapper: the keyword arguments given
# (logger=, name=) are passed on. tests/test_signatures.py checks that it has every
# wrapper class, so a new one is tested by them all.
EXAMPLES: dict[str, Callable[..., Any]] = {
    "poll": lambda d, **kw: Executors.with_poll(d, resolve_all, **kw),
    "retry": lambda d, **kw: Executors.with_retry(d, sleep=0.001, **kw),
    "timeout": lambda d, **kw: Executors.with_timeout(d, 60.0, **kw),
    "map": lambda d, **kw: Executors.with_map(d, same, **kw),
    "flat_map": lambda d, **kw: Executors.with_flat_map(d, f_return, **kw),
    "throttle": lambda d, **kw: Executors.with_throttle(d, 2, **kw),
    "rate_limit": lambda d, **kw: Executors.with_rate_limit(d, 100, **kw),
    "cancel_on_shutdown": lambda d, **kw: Executors.with_cancel_on_shutdown(d, **kw),
    "asyncio": lambda d, **kw: Executors.with_asyncio(d, **kw),
}


def examples(*, concurrent: bool = False) -> dict[str, Callable[..., Any]]:
    """:data:`EXAMPLES`; with ``concurrent``, only the wrappers whose futures are
    :class:`concurrent.futures.Future` objects (not asyncio's, whose wrapper
    ``BoundCallable`` has no method for)."""
    return {k: v for k, v in EXAMPLES.items() if k != "asyncio" or not concurrent}
