"""Retry policies: when to try a callable again, and after how long.

:class:`RetryPolicy` is the interface; :class:`ExceptionRetryPolicy` the policy of
``with_retry()``, with exponential backoff and jitter. Both are public in
``fluent_executors`` and ``fluent_executors.retry``; the poll executor asks one
about failed polls (``poll_retry_policy``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future
from typing import TYPE_CHECKING, Any

from .hints import DelayHint, retry_after
from .proxy import outcome
from .public import publish
from .wrapper import check_callable, check_non_negative

if TYPE_CHECKING:
    import random

__all__ = [
    "ExceptionRetryPolicy",
    "RetryPolicy",
    "ask_policy",
    "check_policy",
    "policy_of",
    "success_is_final",
]


class RetryPolicy:
    """Decides whether a finished attempt is retried, and after how long.

    This base class never retries. Subclass it and override :meth:`should_retry`
    and :meth:`sleep_time` (the more-executors interface), or :meth:`next_delay` for
    a decision that also depends on the time spent so far.
    :class:`ExceptionRetryPolicy` is the ready-made one.

    A policy may be shared by many executors and futures; its methods are called
    from the threads that finish attempts, possibly at the same time, so they must
    be thread-safe and quick. If one raises, the error is logged with its
    traceback and the future ends with the attempt's own outcome (its exception,
    or its result), as in more-executors: no further attempt is made.
    """

    def should_retry(self, attempt: int, future: Future[Any]) -> bool:
        """Decide whether to try again.

        Args:
            attempt: how many times the callable has been attempted so far, counting
                from 1: ``1`` after the first attempt.
            future: the delegate's future of the latest attempt; done. It is
                cancelled if something between this executor and the work cancelled
                the attempt (a timeout executor inside this one): its
                ``exception()`` then raises :class:`~concurrent.futures.CancelledError`,
                which is read as "do not retry".

        Returns:
            ``True`` to retry; ``False`` to resolve the executor's future like
            ``future``.
        """
        return False

    def sleep_time(self, attempt: int, future: Future[Any]) -> float:
        """Return the delay in seconds before the next attempt.

        Called only when :meth:`should_retry` returned ``True``, with the same
        arguments.
        """
        return 0.0

    def next_delay(
        self, attempt: int, future: Future[Any], elapsed: float
    ) -> float | None:
        """Return the delay before the next attempt, or ``None`` not to retry.

        This is what :class:`RetryExecutor` calls after each attempt (but one that
        succeeded under an :class:`ExceptionRetryPolicy` without
        ``retry_on_result``, which could not retry it, unless one of its methods
        is replaced on it or on its class). By default it returns
        ``sleep_time(attempt, future)`` if ``should_retry(attempt, future)``, else
        ``None``.

        Args:
            attempt: how many times the callable has been attempted, counting from 1.
            future: the delegate's future of the latest attempt; done, and
                cancelled if a wrapper inside this executor cancelled it.
            elapsed: seconds since the first attempt was submitted.

        Returns:
            A number of seconds >= 0 (``math.inf``: never, so the future waits
            until cancelled), or ``None``.
        """
        if not self.should_retry(attempt, future):
            return None
        return self.sleep_time(attempt, future)


class ExceptionRetryPolicy(RetryPolicy):
    """Retries attempts that raise one of some exception types, with exponential
    backoff.

    An attempt is retried if it raised an instance of ``exception_base`` (or
    returned a value for which ``retry_on_result`` is true), fewer than
    ``max_attempts`` attempts have been made, and the next attempt would start
    within ``max_duration`` seconds of the first one. The delay after attempt *n*
    (``n = 1, 2, ...``) is::

        min(sleep * exponent ** (n - 1), max_sleep)

    so the defaults wait 1 s, then 2 s, then 4 s, ... up to 120 s. With ``jitter``
    the delay is instead drawn uniformly between 0 and that value ("full jitter"),
    which spreads out the retries of many clients that failed together.

    A failure may say itself how long to wait: a ``429 Too Many Requests`` or a
    ``503`` with a ``Retry-After`` header. ``delay_hint`` reads that hint from the
    attempt's exception; when it gives one, the delay is the hint (at most
    ``max_sleep``, without jitter) instead of the backoff. A hinted delay that
    would start the next attempt beyond ``max_duration`` ends the retries then, as
    a backoff delay does. See the retry page, "Server-hinted delays".

    When no retry is left, the executor's future resolves like the last attempt: it
    fails with the last exception, or holds the last result.

    Args:
        max_attempts: the most attempts, the first one included; ``1`` never retries.
        exponent: the factor by which the delay grows after each attempt.
        sleep: the delay in seconds after the first attempt.
        max_sleep: the longest delay in seconds.
        exception_base: the exception type, or a tuple or list of types, to retry;
            any other exception fails the future at once.
        jitter: draw each delay uniformly from ``[0, delay]``, from a random
            number generator of the library's own (the global ``random``
            state, which a program may have seeded, is left alone).
        max_duration: if not ``None``, the seconds after the first attempt's submit
            beyond which no attempt is started. An attempt under way at that time
            is not stopped: the future resolves with its outcome.
        retry_on_result: if not ``None``, ``retry_on_result(result) -> bool`` is
            called with the result of an attempt that succeeds; true retries it.
        before_sleep: if not ``None``, called as ``before_sleep(attempt, future,
            delay)`` before each wait for a retry (for example to log it), with
            the attempt number, the attempt's future and the delay in seconds.
        delay_hint: keyword-only; ``delay_hint(exception) -> float | None``, the
            seconds that the exception of a failed attempt asks to wait, or
            ``None`` for none (then the backoff applies). The default,
            :func:`~fluent_executors.retry_after`, reads a ``retry_after``
            attribute or a ``Retry-After`` header (seconds or an HTTP date) of
            the exception's ``response``. ``None`` ignores hints. A function
            that raises, or returns something other than ``None`` or a finite
            number >= 0, gives no hint: the backoff applies, and the first such
            case is logged at ``WARNING``.

            .. versionadded:: 0.2.0

    Raises:
        TypeError: an argument has the wrong type: ``max_attempts`` is not an
            ``int``; ``jitter`` is not a ``bool``; a number is not a real number;
            ``exception_base`` is not an exception type or a tuple or list of
            them; a hook or ``delay_hint`` is not callable.
        ValueError: ``max_attempts`` is below 1; a number is negative or NaN;
            ``sleep`` or ``exponent`` is infinite.
    """

    def __init__(
        self,
        max_attempts: int = 3,
        exponent: float = 2.0,
        sleep: float = 1.0,
        max_sleep: float = 120.0,
        exception_base: type[BaseException] | Sequence[type[BaseException]] = Exception,
        *,
        jitter: bool = False,
        max_duration: float | None = None,
        retry_on_result: Callable[[Any], object] | None = None,
        before_sleep: Callable[[int, Future[Any], float], object] | None = None,
        delay_hint: Callable[[BaseException], float | None] | None = retry_after,
    ) -> None:
        if not isinstance(max_attempts, int) or isinstance(max_attempts, bool):
            raise TypeError(
                f"max_attempts must be an int, got {type(max_attempts).__name__}"
            )
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts!r}")
        self._max_attempts = max_attempts
        self._exponent = check_non_negative("exponent", exponent, finite=True)
        self._sleep = check_non_negative("sleep", sleep, finite=True)
        self._max_sleep = check_non_negative("max_sleep", max_sleep)
        self._exception_base = _exception_types(exception_base)
        if not isinstance(jitter, bool):
            raise TypeError(f"jitter must be a bool, got {type(jitter).__name__}")
        self._jitter = jitter
        self._max_duration = (
            None
            if max_duration is None
            else check_non_negative("max_duration", max_duration)
        )
        if retry_on_result is not None:
            check_callable("retry_on_result", retry_on_result)
        if before_sleep is not None:
            check_callable("before_sleep", before_sleep)
        self._retry_on_result = retry_on_result
        self._before_sleep = before_sleep
        self._delay_hint = (
            None if delay_hint is None else DelayHint(delay_hint, "a retry policy")
        )

    def should_retry(self, attempt: int, future: Future[Any]) -> bool:
        """Return ``True`` if the attempt's outcome calls for a retry and fewer than
        ``max_attempts`` attempts have been made."""
        if attempt >= self._max_attempts:
            return False
        # An attempt cancelled inside this executor (a timeout) failed with
        # CancelledError, an Exception: retried unless exception_base says otherwise.
        cancelled, exception, result = outcome(future)
        if cancelled:
            exception = CancelledError()
        if exception is not None:
            return isinstance(exception, self._exception_base)
        return self._retry_on_result is not None and bool(self._retry_on_result(result))

    def sleep_time(self, attempt: int, future: Future[Any]) -> float:
        """Return the delay after attempt ``attempt``: the hint of its exception
        if ``delay_hint`` gives one (at most ``max_sleep``), else the backoff (see
        the class)."""
        hint = self._hint(future)
        if hint is not None:
            return min(hint, self._max_sleep)
        try:
            delay = min(self._sleep * self._exponent ** (attempt - 1), self._max_sleep)
        except OverflowError:  # a huge attempt count: the cap applies, unless sleep=0
            delay = self._max_sleep if self._sleep else 0.0
        if not self._jitter:
            return delay
        return _jitter_random().uniform(0.0, delay)

    def _hint(self, future: Future[Any]) -> float | None:
        """The delay that the failed attempt ``future`` asks for, or ``None`` (also
        for a future not done: ``sleep_time`` may be asked about any future)."""
        if self._delay_hint is None or not future.done():
            return None
        cancelled, exception, _ = outcome(future)
        if cancelled or exception is None:
            return None
        return self._delay_hint(exception)

    def next_delay(
        self, attempt: int, future: Future[Any], elapsed: float
    ) -> float | None:
        """Like :meth:`RetryPolicy.next_delay`, within ``max_duration``, and
        calling ``before_sleep`` when it retries."""
        delay = super().next_delay(attempt, future, elapsed)
        if delay is None:
            return None
        if self._max_duration is not None and elapsed + delay > self._max_duration:
            return None
        if self._before_sleep is not None:
            self._before_sleep(attempt, future, delay)
        return delay

    def __repr__(self) -> str:
        return (
            f"ExceptionRetryPolicy(max_attempts={self._max_attempts}, "
            f"exponent={self._exponent}, sleep={self._sleep}, "
            f"max_sleep={self._max_sleep}, exception_base={self._exception_base}, "
            f"jitter={self._jitter}, max_duration={self._max_duration}"
            f"{self._delay_hint_repr()})"
        )

    def _delay_hint_repr(self) -> str:
        """``delay_hint`` for the repr, unless it is the default."""
        if self._delay_hint is None:
            return ", delay_hint=None"
        if self._delay_hint.function is retry_after:
            return ""
        return f", delay_hint={self._delay_hint!r}"


# The methods an ExceptionRetryPolicy runs to decide about an attempt, as defined.
_DECIDERS = (
    RetryPolicy.next_delay,
    ExceptionRetryPolicy.next_delay,
    ExceptionRetryPolicy.should_retry,
)


def success_is_final(policy: RetryPolicy) -> bool:
    """Whether ``policy`` would never retry an attempt that succeeded, so that the
    retry executor may resolve its future with the result without asking it (the
    common case, with a lock and a few calls less): an
    :class:`ExceptionRetryPolicy` (not a subclass, which may decide otherwise)
    without ``retry_on_result``, whose deciding methods are its class's own,
    unreplaced on it or on its class (a test's spy sees every call)."""
    return (
        type(policy) is ExceptionRetryPolicy
        and policy._retry_on_result is None
        and "next_delay" not in policy.__dict__
        and "should_retry" not in policy.__dict__
        and (
            RetryPolicy.next_delay,
            ExceptionRetryPolicy.next_delay,
            ExceptionRetryPolicy.should_retry,
        )
        == _DECIDERS
    )


def ask_policy(
    policy: RetryPolicy, attempt: int, future: Future[Any], elapsed: float
) -> float | None:
    """Ask ``policy`` about the failed attempt ``future``, as the retry executor and
    the poll thread both do: :meth:`RetryPolicy.next_delay`, its delay checked.

    Returns:
        The seconds before the next attempt (``math.inf``: never), or ``None`` for
        no retry.

    Raises:
        TypeError, ValueError: the policy gave a delay that is not a number >= 0.
        BaseException: whatever the policy raised.
    """
    delay = policy.next_delay(attempt, future, elapsed)
    if delay is None:
        return None
    return check_non_negative("the retry delay", delay)


def _exception_types(exception_base: object) -> tuple[type[BaseException], ...]:
    candidates = (
        exception_base
        if isinstance(exception_base, (tuple, list))
        else [exception_base]
    )
    types: list[type[BaseException]] = []
    for candidate in candidates:
        if not (isinstance(candidate, type) and issubclass(candidate, BaseException)):
            raise TypeError(
                "exception_base must be an exception type or a tuple or list of "
                f"them, got {exception_base!r}"
            )
        types.append(candidate)
    return tuple(types)


def policy_of(retry_policy: object, kwargs: dict[str, Any]) -> RetryPolicy:
    """The policy of a retry executor (threaded or async): ``retry_policy``, or
    without one an :class:`ExceptionRetryPolicy` built from ``kwargs``.

    Raises:
        TypeError: ``retry_policy`` is not a :class:`RetryPolicy`; ``kwargs`` are
            given with it, or are not :class:`ExceptionRetryPolicy` arguments.
        ValueError: a policy argument is out of range.
    """
    if retry_policy is None:
        return ExceptionRetryPolicy(**kwargs)
    if kwargs:
        raise TypeError(
            "policy arguments cannot be given with retry_policy, got "
            + ", ".join(sorted(kwargs))
        )
    check_policy(retry_policy)
    assert isinstance(retry_policy, RetryPolicy)  # (checked)
    return retry_policy


def check_policy(policy: object) -> None:
    """Raise ``TypeError`` naming ``retry_policy`` unless ``policy`` is a
    :class:`RetryPolicy`."""
    if not isinstance(policy, RetryPolicy):
        raise TypeError(
            f"retry_policy must be a RetryPolicy, got {type(policy).__name__}"
        )


@functools.cache
def _jitter_random() -> random.Random:
    """The generator that jitter is drawn from, made on first use (importing
    ``random`` costs import time). The library's own: delays are drawn from
    its threads at any moment, and drawing them from the global ``random``
    state would change what a program that seeded it draws next. A forked child
    makes a new one, as ``random`` reseeds its global state there: children of
    one parent must not all draw the same delays."""
    import random

    return random.Random()


if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_jitter_random.cache_clear)


publish("fluent_executors", RetryPolicy, ExceptionRetryPolicy)
