"""What every wrapper executor shares: its delegate, name, logger and shutdown state."""

from __future__ import annotations

import inspect
import logging
import threading
from concurrent.futures import Executor

from ._chain import FluentExecutor


def check_delegate(delegate: object) -> None:
    """Raise ``TypeError`` unless ``delegate`` looks like an executor."""
    if not callable(getattr(delegate, "submit", None)):
        raise TypeError(
            "delegate must be an executor with a submit() method, "
            f"got {type(delegate).__name__}"
        )


def check_name(name: object) -> None:
    """Raise ``TypeError`` unless ``name`` is a string."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")


def check_callable(argument: str, value: object) -> None:
    """Raise ``TypeError`` naming ``argument`` unless ``value`` is callable."""
    if not callable(value):
        raise TypeError(f"{argument} must be callable, got {type(value).__name__}")


def shutdown_delegate(delegate: Executor, wait: bool, cancel_futures: bool) -> None:
    """Shut down ``delegate`` with the same arguments, as far as it accepts them.

    Some executors (Dask's ``ClientExecutor``, executors written before Python 3.9)
    have no ``cancel_futures`` parameter; they are shut down with ``wait`` alone.
    """
    if cancel_futures and _accepts_cancel_futures(delegate):
        delegate.shutdown(wait=wait, cancel_futures=True)
    else:
        delegate.shutdown(wait=wait)


def _accepts_cancel_futures(delegate: Executor) -> bool:
    try:
        parameters = inspect.signature(delegate.shutdown).parameters.values()
    except (TypeError, ValueError):  # no signature to read: assume the standard one
        return True
    return any(
        p.name == "cancel_futures" or p.kind is inspect.Parameter.VAR_KEYWORD
        for p in parameters
    )


class WrapperExecutor(FluentExecutor):
    """Base of the wrapper executors: holds the delegate and the shutdown state.

    ``shutdown()`` is idempotent, refuses new submits with ``RuntimeError`` and shuts
    down the delegate with the same arguments.
    """

    def __init__(
        self, delegate: Executor, *, logger: logging.Logger | None, name: str
    ) -> None:
        check_delegate(delegate)
        check_name(name)
        self._delegate = delegate
        self._name = name
        self._logger = logger
        self._shutdown_lock = threading.Lock()
        self._is_shutdown = False

    @property
    def delegate(self) -> Executor:
        """The executor this one submits to (:class:`~concurrent.futures.Executor`)."""
        return self._delegate

    def _check_open(self) -> None:
        """Raise ``RuntimeError`` if the executor has been shut down."""
        if self._is_shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Shut down this executor and its delegate.

        Args:
            wait: if ``True``, return only once the delegate's work is done.
            cancel_futures: if ``True``, cancel the futures that have not started.

        Calling it more than once is harmless.
        """
        with self._shutdown_lock:
            self._is_shutdown = True
        shutdown_delegate(self._delegate, wait, cancel_futures)
