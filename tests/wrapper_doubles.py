"""Test doubles for the wrapper executors' tests: delegates the test controls."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, InvalidStateError
from typing import Any

TIMEOUT = 10.0  # seconds: a generous bound for anything that should happen "now"


class ManualExecutor(Executor):
    """A delegate that runs nothing: each ``submit`` returns a pending future that
    the test resolves by hand, so tests decide when delegate work ends, no thread
    involved.

    ``fail_submits`` makes the next that many ``submit`` calls raise ``OSError``;
    ``done_after`` makes every ``submit`` after the first ``done_after`` ones return
    an already resolved future (the callable is called inline, as a synchronous
    executor would).
    """

    def __init__(self, done_after: int | None = None) -> None:
        self.calls: list[tuple[Callable[..., Any], tuple[Any, ...], Future[Any]]] = []
        self.submit_times: list[float] = []  # time.monotonic() at each submit
        self.shutdowns: list[tuple[bool, bool]] = []
        self.fail_submits = 0
        self.done_after = done_after
        self._lock = threading.Lock()

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> Future[Any]:
        now = time.monotonic()
        with self._lock:
            self.submit_times.append(now)
            if self.fail_submits:
                self.fail_submits -= 1
                raise OSError("the delegate refuses work")
            future: Future[Any] = Future()
            inline = self.done_after is not None and len(self.calls) >= self.done_after
            self.calls.append((fn, args, future))
        if inline:
            future.set_result(fn(*args, **kwargs))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.shutdowns.append((wait, cancel_futures))

    @property
    def futures(self) -> list[Future[Any]]:
        with self._lock:
            return [future for _, _, future in self.calls]

    @property
    def arguments(self) -> list[tuple[Any, ...]]:
        with self._lock:
            return [args for _, args, _ in self.calls]

    def finish(self, index: int) -> None:
        """Run call ``index`` and resolve its future with the outcome."""
        fn, args, future = self.calls[index]
        try:
            result = fn(*args)
        except Exception as error:
            future.set_exception(error)
        else:
            future.set_result(result)


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
