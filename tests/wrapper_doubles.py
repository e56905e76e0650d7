"""Test doubles for the wrapper executors' tests: delegates the test controls."""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable
from concurrent.futures import Executor, Future, InvalidStateError
from typing import Any

import fluent_executors
from fluent_executors import BoundCallable, FluentExecutor
from fluent_executors.testing import ManualExecutor

__all__ = [
    "TIMEOUT",
    "BrokenSubmitExecutor",
    "ManualExecutor",
    "WrittenUnderLock",
    "examples",
    "invalid_state_errors",
    "raise_",
    "wrapper_classes",
]

TIMEOUT = 10.0  # seconds: a generous bound for anything that should happen "now"


class WrittenUnderLock:
    """A field whose writes a test checks, set on a subclass of the class under
    test (``class Spy(ThrottleExecutor): _running = spy``): once :attr:`armed`,
    each value written while the instance's ``_lock`` is free goes into
    :attr:`unlocked`. (A test in one thread reads a lock that is held as held by
    itself.)"""

    def __init__(self) -> None:
        self.armed = False
        self.unlocked: list[object] = []
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = f"_spied{name}"

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        return self if instance is None else instance.__dict__[self.name]

    def __set__(self, instance: Any, value: object) -> None:
        if self.armed and not instance._lock.locked():
            self.unlocked.append(value)
        instance.__dict__[self.name] = value


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


def wrapper_classes() -> dict[str, type[Any]]:
    """Every wrapper class, by its kind: its chain method is ``with_<kind>`` on
    ``FluentExecutor``, and the class is what that method returns."""
    return {
        name.removeprefix("with_"): getattr(
            fluent_executors,
            inspect.signature(getattr(FluentExecutor, name)).return_annotation[:-3],
        )
        for name in sorted(vars(FluentExecutor))
        if name.startswith("with_")
    }


def examples(*, concurrent: bool = False) -> dict[str, Callable[..., Any]]:
    """One way to build each wrapper on a delegate, by its kind, for the tests that
    run every wrapper: ``example_<kind>(delegate, **kwargs)`` of the wrapper's test
    module, ``tests/test_<module>.py`` for a class defined in
    ``fluent_executors.<module>``; the keyword arguments (``logger=``, ``name=``)
    are passed on. With ``concurrent``, only the wrappers ``BoundCallable`` has a
    method for: those whose futures are :class:`concurrent.futures.Future` objects.

    Raises:
        LookupError: a wrapper has no example, so the tests of every wrapper would
            miss it.
    """
    found = {}
    for kind, cls in wrapper_classes().items():
        module = "test_" + cls.__module__.rpartition(".")[2]
        try:
            build = getattr(importlib.import_module(module), f"example_{kind}")
        except (ModuleNotFoundError, AttributeError) as error:
            raise LookupError(
                f"tests/{module}.py has no example_{kind}(delegate, **kwargs): one "
                f"way to build {cls.__name__}, which the tests of every wrapper run "
                "(docs/contributing.rst, Adding a wrapper)"
            ) from error
        if not concurrent or hasattr(BoundCallable, f"with_{kind}"):
            found[kind] = build
    return found
