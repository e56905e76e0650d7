"""ThrottleExecutor: at most ``count`` futures of the delegate under way at once."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from _fluent_executors.fluent import Delegate, R
from _fluent_executors.logging import Once
from _fluent_executors.queueing import QueueingExecutor, _QueuedFuture
from _fluent_executors.scheduler import TimerHandle, call_later
from _fluent_executors.stdlib_compat import LOCK_FREE

__all__ = ["ThrottleCount", "ThrottleExecutor"]

T = TypeVar("T")

ThrottleCount = int | Callable[[], int | None]
"""The ``count`` of a :class:`ThrottleExecutor`: an ``int`` >= 0, or a callable
returning one (or ``None`` for no limit), read before each dispatch."""

RECHECK_INTERVAL = 1.0
"""Seconds between reads of a count callable while it says 0 and work is queued."""


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class _ThrottleFuture(_QueuedFuture[T]):
    """Frees its slot once the delegate's future is done: the first thing done
    then, before it takes on the outcome (one callback on the delegate's
    future, not two)."""

    _executor: ThrottleExecutor[Any]

    def _on_upstream_done(self, upstream: Future[Any]) -> None:
        try:
            self._executor._release()
        finally:  # (it raises only by a bug of ours)
            super()._on_upstream_done(upstream)


class ThrottleExecutor(QueueingExecutor["int | None", bool, R]):
    """An executor that limits how many futures of its delegate are under way at once.

    A callable submitted while ``count`` futures that this executor passed to the
    delegate are not yet done waits in a queue; the queue is served in submit
    order, each time one of those futures is done. No thread is involved: the
    callable is passed on to the delegate by the thread that frees the slot (the one
    that completes the delegate's future) or by ``submit`` itself.

    A count of 0 pauses: nothing is passed on until the count rises, as in
    more-executors (with a fixed ``0``, never).

    Dynamic throttling: ``count`` may be a callable, read before each callable is
    passed on, so the limit follows it: it is read again whenever a future of this
    executor finishes, and, while it says 0 and work is queued, at least every
    ``RECHECK_INTERVAL`` (1) second, from the shared scheduler (the executor has no
    thread of its own). It may return ``None`` for no limit. It is called once by
    the constructor, which raises what it raises. If it raises later, or returns
    something other than an ``int`` >= 0 or ``None``, a warning is logged (once,
    until it returns a good value again) and the last good value is used.

    With ``block=True``, ``submit`` returns only once its callable has been passed
    on to the delegate (or its future cancelled), so that a fast producer is held
    back instead of filling the queue without bound. (A ``submit`` from a done
    callback that this executor runs does not block, since that could stop the
    queue for good; nor does one from a thread of the library's own, such as a
    rate limit or a retry passing work on from the shared scheduler, which would
    hold up every other timer of the process.) A ``submit`` interrupted while it
    waits (Ctrl-C: ``KeyboardInterrupt``) cancels its future, taking the callable
    out of the queue, and raises: the callable never runs.

    Cancelling a queued future removes it from the queue at once (in O(1)) and
    returns ``True``; cancelling one passed on cancels the delegate's future. If
    the delegate's ``submit`` raises when a callable is passed on, or returns
    something that is not a :class:`~concurrent.futures.Future` (``TypeError``),
    that callable's future fails with the error, a warning is logged, and its slot
    is free again.

    Args:
        delegate: the executor that runs the submitted callables.
        count: the most futures of the delegate under way at once: an ``int`` >=
            0 (0: paused), or a callable returning one or ``None`` (no limit),
            called without arguments from any thread that submits or completes a
            future, and from the shared scheduler's threads while it says 0.
        logger: where to log; default
            ``logging.getLogger("fluent_executors.throttle")``.
        name: the executor's name, used in log messages.
        block: if ``True``, ``submit`` waits until its callable has been passed on
            to the delegate.

    Raises:
        TypeError: ``delegate`` has no ``submit`` method; ``count`` is neither an
            ``int`` nor callable; ``block`` is not a ``bool``; ``name`` is not a
            ``str``.
        ValueError: ``count`` is a negative ``int``.
        Exception: whatever a ``count`` callable raises when the constructor
            calls it.
    """

    def __init__(
        self,
        delegate: Delegate[R],
        count: ThrottleCount,
        logger: logging.Logger | None = None,
        name: str = "default",
        block: bool = False,
    ) -> None:
        super().__init__(delegate, block=block, logger=logger, name=name)
        if isinstance(count, bool) or not (isinstance(count, int) or callable(count)):
            raise TypeError(
                "count must be an int or a callable returning one, "
                f"got {type(count).__name__}"
            )
        if isinstance(count, int) and count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        self._count = count
        self._last_good: int | None = count if isinstance(count, int) else 1
        self._bad_count = Once()  # warned about, since the count's last good value
        self._running = 0  # futures passed to the delegate and not yet done
        self._recheck: TimerHandle | None = None  # reads a count callable again
        if not isinstance(count, int):
            first = count()  # raises at construction, as in more-executors
            if first is None or _is_count(first):
                self._last_good = first
        self._open_metrics("throttle")

    _future_type = _ThrottleFuture

    def _wrapper_fields(self) -> dict[str, object]:
        return {"count": self.count, "block": self.block}

    @property
    def count(self) -> ThrottleCount:
        """The limit given at construction (an ``int``, or the callable)."""
        return self._count

    @property
    def block(self) -> bool:
        """Whether ``submit`` waits until its callable is passed on (``bool``)."""
        return self._block

    def _prepare(self) -> int | None:
        count = self._count
        if isinstance(count, int):
            return count
        try:
            value = count()
        except BaseException:
            self._warn_bad_count("raised", exc_info=True)
        else:
            if value is None or _is_count(value):
                self._bad_count.reset()
                self._last_good = value
            else:
                self._warn_bad_count(f"returned {value!r}, not an int >= 0 or None")
        return self._last_good

    def _warn_bad_count(self, what: str, exc_info: bool = False) -> None:
        if not self._bad_count.first():
            return
        self._logger.warning(
            "Error evaluating throttle count via %r: the count callable of throttle "
            "executor %r %s; keeping the limit at %s (warned once until it returns a "
            "good value)",
            self._count,
            self.name,
            what,
            self._last_good,
            exc_info=exc_info,
        )

    def _admit(self, prepared: int | None) -> bool | None:
        if prepared is not None and self._running >= prepared:
            if prepared == 0 and self._recheck is None and callable(self._count):
                # Paused, and no finishing future may come to read it again.
                self._recheck = call_later(
                    RECHECK_INTERVAL, self._read_again, may_block=True
                )
            return None
        self._running += 1
        return True

    def _read_again(self) -> None:
        with self._lock:
            self._recheck = None
        self._pump()

    def _after_unqueue(self) -> tuple[bool, bool] | None:
        # Nothing left to wait for: let the scheduler thread end if it can.
        if not self._queue and self._recheck is not None:
            self._recheck.cancel()
            self._recheck = None
        return super()._after_unqueue()

    def _dispatched(self, token: bool, upstream: Future[Any] | None) -> None:
        if upstream is None:  # else the future frees the slot (_ThrottleFuture)
            self._release()

    def _release(self) -> None:
        """A future passed on is done, or its submit failed: one more may go."""
        # Without the lock (a decrement is atomic: see _fluent_executors.counts):
        # _admit, which reads it under the lock, may miss it, and then the _pump
        # below, which comes after it, admits.
        if LOCK_FREE:
            self._running -= 1
        else:  # no GIL to make the decrement atomic (see stdlib_compat)
            with self._lock:
                self._running -= 1
        self._pump()
