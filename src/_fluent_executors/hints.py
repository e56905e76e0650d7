"""Server-hinted delays: how long a failure says to wait before the next try.

:func:`retry_after` reads the hint where HTTP clients and SDKs put it: a
``retry_after`` attribute of the exception, or the ``Retry-After`` header of its
``response`` (requests' ``HTTPError``, httpx's ``HTTPStatusError``) or of the
exception itself (``urllib.error.HTTPError``), without importing any of those
libraries. :class:`DelayHint` asks such a function on behalf of a retry policy or
a rate limit, and turns a hint that makes no sense into no hint, logged once.
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Callable

from .logging import Once
from .public import publish
from .wrapper import check_callable, check_non_negative

__all__ = ["DelayHint", "retry_after"]

logger = logging.getLogger("fluent_executors._hints")


def retry_after(error: BaseException) -> float | None:
    """Return the delay in seconds that ``error`` asks for, or ``None``.

    Looks, in order, at:

    - ``error.retry_after``: a number of seconds, a ``datetime.timedelta``, or
      a string read like the header (SDKs such as discord.py and
      python-telegram-bot raise exceptions with it);
    - the ``Retry-After`` header of ``error.response.headers`` (requests'
      ``HTTPError``, httpx's ``HTTPStatusError``), else of ``error.headers``
      (``urllib.error.HTTPError``, aiohttp's ``ClientResponseError``). The header
      holds seconds in ASCII digits (``"120"``; RFC 9110 allows no other form)
      or an HTTP date (``"Wed, 21 Oct 2026 07:28:00 GMT"``), read against the
      wall clock; a date already past is 0 seconds.

    Args:
        error: the exception of a failed call.

    Returns:
        Seconds, a finite ``float`` >= 0; ``None`` if ``error`` carries no hint.

    Raises:
        TypeError: ``error.retry_after`` is neither a number, a timedelta nor a
            string.
        ValueError: ``error`` carries a hint that is not a finite number of
            seconds >= 0 nor an HTTP date (a negative number, NaN, an unreadable
            header).

    .. versionadded:: 0.2.0
    """
    value = getattr(error, "retry_after", None)
    if value is None:
        response = getattr(error, "response", None)
        headers = getattr(response, "headers", None)
        if headers is None:
            headers = getattr(error, "headers", None)
        value = _header(headers)
        if value is None:
            return None
    if isinstance(value, (str, bytes)):
        return _parse(value)
    total_seconds = getattr(value, "total_seconds", None)  # a timedelta
    if callable(total_seconds):
        value = total_seconds()
    return check_non_negative("the Retry-After hint", value, finite=True)


def _header(headers: object) -> object:
    """The ``Retry-After`` value of a mapping of headers (case-insensitive ones
    such as requests', httpx's and email's, or a plain ``dict``), or ``None``."""
    get = getattr(headers, "get", None)
    if not callable(get):
        return None
    for name in ("Retry-After", "retry-after"):
        value = get(name)
        if value is not None:
            return value
    return None


def _parse(value: str | bytes) -> float:
    """Seconds from a ``Retry-After`` header value: seconds (RFC 9110's
    delay-seconds, ASCII digits only: not ``"1.5"``, ``"1_000"`` nor digits of
    other scripts, which ``float`` reads) or an HTTP date."""
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    text = text.strip(" \t")  # HTTP's optional whitespace
    if text.isascii() and text.isdigit():
        return check_non_negative("the Retry-After hint", float(text), finite=True)
    import email.utils  # here: only a date needs it
    import time

    try:
        if not text.isascii():  # (the date parser reads any script's digits)
            raise ValueError(text)
        date = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        raise ValueError(
            f"the Retry-After hint must be seconds or an HTTP date, got {text!r}"
        ) from None
    if date.tzinfo is None:  # "-0000": UTC, as HTTP dates are
        import datetime

        date = date.replace(tzinfo=datetime.timezone.utc)
    return max(date.timestamp() - time.time(), 0.0)


class DelayHint:
    """Asks a ``delay_hint`` function (``error -> seconds | None``) about failures.

    What the function returns is checked: ``None`` is no hint, a number >= 0 and
    finite is the hint in seconds. Anything else, or an exception raised by the
    function, is no hint either; the first such case is logged at ``WARNING``
    (with its traceback), the later ones at ``DEBUG``, so that a service sending
    nonsense does not flood the log.

    Args:
        function: the ``delay_hint`` function.
        owner: what asks (``"retry policy"``, ``"rate limit executor 'api'"``),
            for the log message.

    Raises:
        TypeError: ``function`` is not callable.
    """

    __slots__ = ("_failed", "_function", "_owner")

    def __init__(
        self, function: Callable[[BaseException], float | None], owner: str
    ) -> None:
        check_callable("delay_hint", function)
        self._function = function
        self._owner = owner
        self._failed = Once()  # warned about: later failures are logged at DEBUG

    @property
    def function(self) -> Callable[[BaseException], float | None]:
        """The ``delay_hint`` function."""
        return self._function

    def __call__(self, error: BaseException) -> float | None:
        """The delay in seconds that ``error`` asks for, or ``None``; never
        raises."""
        try:
            hint = self._function(error)
            if hint is None:
                return None
            if not isinstance(hint, numbers.Real) or isinstance(hint, bool):
                raise TypeError(f"not a number of seconds: {hint!r}")
            seconds = float(hint)
            if not (math.isfinite(seconds) and seconds >= 0):
                raise ValueError(f"not a finite number of seconds >= 0: {hint!r}")
        except BaseException:  # a user's callable: contained
            level = logging.WARNING if self._failed.first() else logging.DEBUG
            logger.log(
                level,
                "delay hint %r of %s failed on %r; ignoring the hint (warned once)",
                self._function,
                self._owner,
                error,
                exc_info=True,
            )
            return None
        return seconds

    def __repr__(self) -> str:
        return repr(self._function)


publish("fluent_executors", retry_after)
