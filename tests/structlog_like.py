"""A logger that is not a :class:`logging.Logger` but has its methods, as a structlog
logger has: the library accepts any such object as ``logger``."""

from __future__ import annotations

from typing import Any


class Logger:
    """Records each call as ``(method, message)``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def _record(self, method: str, message: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append((method, message % args if args else message))

    def debug(self, message: str, *args: Any, **kwargs: Any) -> None:
        self._record("debug", message, *args)

    def info(self, message: str, *args: Any, **kwargs: Any) -> None:
        self._record("info", message, *args)

    def warning(self, message: str, *args: Any, **kwargs: Any) -> None:
        self._record("warning", message, *args)

    def error(self, message: str, *args: Any, **kwargs: Any) -> None:
        self._record("error", message, *args)

    def exception(self, message: str, *args: Any, **kwargs: Any) -> None:
        self._record("exception", message, *args)
