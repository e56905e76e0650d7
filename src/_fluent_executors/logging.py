"""How the library logs: every record through a :class:`ContainedLogger`, and
per-future records at the ``TRACE`` level, below ``DEBUG``, unless the
``MORE_EXECUTORS_DEBUG`` environment variable of more-executors is set.

The library logs from its own threads (the poll thread, the scheduler's) and on
paths that must go on whatever happens (a future is failed next, a thread serves
every executor): a handler, filter, formatter or ``logger`` object of the user's
that raises there, even a ``BaseException``, loses its record and nothing else.

What happens to each future (a retry scheduled, a map function that raised, a
timeout that fired) is logged at ``TRACE``, so that logging configured at ``DEBUG``
for everything shows none of it; a logger set to ``TRACE`` (or lower) opts in.
With ``MORE_EXECUTORS_DEBUG=1`` in the environment these records are logged at
``DEBUG`` instead, as more-executors logs its own per-future records.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

__all__ = ["TRACE", "ContainedLogger", "Once", "trace"]

# The level of the per-future records, public as fluent_executors.TRACE (documented
# in docs/api/index.rst).
TRACE = 5

# The name shown for the level ("%(levelname)s"), unless the program named it.
if logging.getLevelName(TRACE) == f"Level {TRACE}":
    logging.addLevelName(TRACE, "TRACE")


def trace(
    logger: ContainedLogger, message: str, *args: object, exc_info: bool = False
) -> None:
    """Log a per-future record to ``logger``: at ``DEBUG`` if the environment has
    ``MORE_EXECUTORS_DEBUG=1`` (read at each record, so a test may set it at any
    time), else at :data:`TRACE` if ``logger`` is enabled for it. A logger without
    levels (a structlog logger) gets the ``DEBUG`` records only."""
    if os.environ.get("MORE_EXECUTORS_DEBUG") == "1":
        logger.emit(logging.DEBUG, "debug", message, args, 3, exc_info=exc_info)
    elif logger.isEnabledFor(TRACE):
        logger.emit(TRACE, None, message, args, 3, exc_info=exc_info)


class Once:
    """Whether something is done for the first time, asked by any thread: what a
    warning logged once (per executor, per outage...) asks. :meth:`first` is
    ``True`` for one call only, until :meth:`reset`; its check and its set are
    one step, under a lock (without a GIL, two threads could both find the flag
    unset)."""

    __slots__ = ("_done", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done = False

    def first(self) -> bool:
        """``True`` for the first call since construction or :meth:`reset`."""
        with self._lock:
            first, self._done = not self._done, True
        return first

    def reset(self) -> None:
        """Make the next :meth:`first` ``True`` again."""
        self._done = False

    def __reduce__(self) -> tuple[type[Once], tuple[()]]:
        # Copied or pickled with what holds it (a retry policy's delay hint), as
        # a new flag: its lock cannot be, and a copy warns for itself.
        return (Once, ())


class ContainedLogger:
    """A logger whose calls never raise: each forwards to the wrapped logger (a
    :class:`logging.Logger`, a :class:`logging.LoggerAdapter`, a structlog logger:
    anything with ``debug``, ``info``, ``warning``, ``error`` and ``exception``
    methods) and drops the record if that raises.

    Thread-safe as the wrapped logger is; costs one Python call per record.
    """

    __slots__ = ("_standard", "wrapped")

    def __init__(self, logger: Any) -> None:
        self.wrapped: Any = logger
        """The logger the records go to."""
        # A Logger's records then name the library's line that logs (stacklevel),
        # not one of this class's.
        self._standard = isinstance(logger, logging.Logger)

    def emit(
        self,
        level: int,
        method: str | None,
        message: str,
        args: tuple[object, ...],
        depth: int,
        **kw: Any,
    ) -> None:
        """Log ``message % args`` at ``level``, ``depth`` calls below the library's
        line that logs (2: called by a method of this class, called by it); drop
        the record if the wrapped logger raises. A logger other than a
        :class:`logging.Logger` gets it through its method ``method`` (``debug``,
        ..., ``exception``), or for ``None`` through ``log``, or without ``log``
        (structlog) the method of the nearest standard level at or below."""
        try:
            if self._standard:
                if method == "exception":
                    kw.setdefault("exc_info", True)
                self.wrapped.log(level, message, *args, stacklevel=depth, **kw)
            elif method is not None:
                getattr(self.wrapped, method)(message, *args, **kw)
            elif callable(getattr(self.wrapped, "log", None)):
                self.wrapped.log(level, message, *args, **kw)
            else:
                name = next((m for t, m in _METHODS if level >= t), "debug")
                getattr(self.wrapped, name)(message, *args, **kw)
        except BaseException:  # the user's logging code: lose this record only
            pass

    def debug(self, message: str, *args: object, **kw: Any) -> None:
        self.emit(logging.DEBUG, "debug", message, args, 3, **kw)

    def info(self, message: str, *args: object, **kw: Any) -> None:
        self.emit(logging.INFO, "info", message, args, 3, **kw)

    def warning(self, message: str, *args: object, **kw: Any) -> None:
        self.emit(logging.WARNING, "warning", message, args, 3, **kw)

    def error(self, message: str, *args: object, **kw: Any) -> None:
        self.emit(logging.ERROR, "error", message, args, 3, **kw)

    def exception(self, message: str, *args: object, **kw: Any) -> None:
        """An ``error`` record with the traceback of the exception being handled."""
        self.emit(logging.ERROR, "exception", message, args, 3, **kw)

    def log(self, level: int, message: str, *args: object, **kw: Any) -> None:
        self.emit(level, None, message, args, 3, **kw)

    def isEnabledFor(self, level: int) -> bool:
        """Whether the wrapped logger takes records of ``level``; ``False`` for a
        logger without levels (structlog) or one that raises."""
        try:
            return bool(self.wrapped.isEnabledFor(level))
        except BaseException:
            return False


_METHODS = (
    (logging.ERROR, "error"),
    (logging.WARNING, "warning"),
    (logging.INFO, "info"),
)
