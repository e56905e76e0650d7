"""Helpers for the tests of code that uses the library (see ``docs/testing.rst``).

- :class:`ManualExecutor`, an executor that runs nothing: each ``submit`` returns a
  pending future that the test resolves by hand, so the test decides when work ends.
- :func:`virtual_time`, a context manager that puts the library on a virtual clock:
  the shared scheduler (retry backoff, timeouts, rate limits, ``f_timeout``) and
  the poll threads wait on it, and time moves only when the test calls
  :meth:`VirtualClock.advance`, so 60 seconds of backoff take milliseconds.
- :func:`library_threads`, the library's threads alive now; the pytest plugin's
  fixture ``no_leaked_threads`` fails a test that leaves one behind.

.. versionadded:: 0.2.0
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from typing import Any

from _fluent_executors import clock as _clock
from _fluent_executors import scheduler as _scheduler
from _fluent_executors.stdlib_compat import condition_waiters
from _fluent_executors.wrapper import check_non_negative

__all__ = [
    "ManualExecutor",
    "VirtualClock",
    "library_threads",
    "virtual_time",
]

_POLL_PREFIX = "fluent-executors-poll-"
_RECHECK = 0.05  # real seconds: how often a virtual wait looks at the clock again


def library_threads() -> list[threading.Thread]:
    """The library's threads alive now: poll threads, the shared scheduler thread
    and its workers.

    .. versionadded:: 0.2.0
    """
    return [
        thread
        for thread in threading.enumerate()
        if thread.name.startswith((_POLL_PREFIX, _scheduler.THREAD_NAME))
    ]


class ManualExecutor(Executor):
    """An executor that runs nothing: each :meth:`submit` returns a pending
    :class:`~concurrent.futures.Future` that the test resolves by hand (with
    :meth:`finish`, or ``set_result``/``set_exception`` on one of :attr:`futures`),
    so the test decides when each call ends, with no thread involved. Use it as
    the delegate of the wrappers under test, e.g.
    ``Executors.with_retry(ManualExecutor(), policy)``.

    Args:
        done_after: if given, every ``submit`` after the first ``done_after`` ones
            calls the function inline and returns an already resolved future, as a
            synchronous executor would.

    Attributes:
        calls: ``(fn, args, future)`` of each submit, in order.
        submit_times: the library's clock (seconds; virtual under
            :func:`virtual_time`) at each submit.
        shutdowns: ``(wait, cancel_futures)`` of each :meth:`shutdown` call.
        fail_submits: the next that many ``submit`` calls raise :class:`OSError`.

    Raises:
        ValueError: ``done_after`` is not a non-negative ``int`` or ``None``.

    .. versionadded:: 0.2.0
    """

    def __init__(self, done_after: int | None = None) -> None:
        if done_after is not None and (
            isinstance(done_after, bool)
            or not isinstance(done_after, int)
            or done_after < 0
        ):
            raise ValueError(
                f"done_after must be a non-negative int or None, got {done_after!r}"
            )
        self.calls: list[tuple[Callable[..., Any], tuple[Any, ...], Future[Any]]] = []
        self.submit_times: list[float] = []
        self.shutdowns: list[tuple[bool, bool]] = []
        self.fail_submits = 0
        self.done_after = done_after
        self._lock = threading.Lock()

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> Future[Any]:
        """Record the call and return its future (pending, unless ``done_after``).

        Raises:
            OSError: while :attr:`fail_submits` is positive (it counts down).
        """
        now = _clock.monotonic()
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
        """Record the call; pending futures stay pending."""
        self.shutdowns.append((wait, cancel_futures))

    @property
    def futures(self) -> list[Future[Any]]:
        """The future of each submit, in order."""
        with self._lock:
            return [future for _, _, future in self.calls]

    @property
    def arguments(self) -> list[tuple[Any, ...]]:
        """The positional arguments of each submit, in order."""
        with self._lock:
            return [args for _, args, _ in self.calls]

    def finish(self, index: int) -> None:
        """Run call ``index`` (0 is the first submit) now, in this thread, and
        resolve its future with the outcome (an :class:`Exception` it raises
        becomes the future's exception).

        Raises:
            IndexError: there is no such call.
        """
        fn, args, future = self.calls[index]
        try:
            result = fn(*args)
        except Exception as error:
            future.set_exception(error)
        else:
            future.set_result(result)


class VirtualClock:
    """The library's clock while :func:`virtual_time` is installed: it stands still
    until :meth:`advance` moves it. Times are seconds, on the scale of
    ``time.monotonic()`` (the virtual time starts at the real one).

    .. versionadded:: 0.2.0
    """

    def __init__(self, start: float, settle_timeout: float = 10.0) -> None:
        self._now = float(start)
        self._settle_timeout = settle_timeout
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        # Threads in a virtual wait: thread -> (its condition, deadline or None).
        self._waiting: dict[
            threading.Thread, tuple[threading.Condition, float | None]
        ] = {}

    def monotonic(self) -> float:
        """The virtual time, in seconds."""
        return self._now

    def _wait(self, condition: threading.Condition, timeout: float | None) -> bool:
        # The virtual counterpart of _fluent_executors.clock.wait. The deadline is
        # on this clock; the real wait is cut short now and then so that a thread
        # that computed its deadline just before a step of advance() looks again
        # (the callers loop).
        if timeout is not None and timeout <= 0:
            return False
        thread = threading.current_thread()
        with self._lock:
            deadline = None if timeout is None else self._now + timeout
            self._waiting[thread] = (condition, deadline)
            self._changed.notify_all()
        try:
            condition.wait(_RECHECK)
        finally:
            with self._lock:
                del self._waiting[thread]
        return deadline is None or self._now < deadline

    def advance(self, seconds: float) -> None:
        """Move the time forward by ``seconds`` and return once every callback and
        poll due by then has run: it steps through the deadlines the library's
        threads wait for, in order, waking them at each step and waiting until
        they are idle again.

        Raises:
            TypeError: ``seconds`` is not a real number.
            ValueError: ``seconds`` is negative, infinite, NaN or beyond a float
                (``10**400``).
            TimeoutError: the library's threads are still busy after
                ``settle_timeout`` real seconds (a poll function or callback that
                blocks, e.g. on a future that the test resolves later).
        """
        target = self._now + check_non_negative("seconds", seconds, finite=True)
        while True:
            self._settle()
            with self._lock:
                due = [
                    deadline
                    for _, deadline in self._waiting.values()
                    if deadline is not None and deadline <= target
                ]
            step = min(due, default=None)
            if step is None:
                if self._now >= target:
                    return
                step = target
            self._now = max(self._now, step)
            for _ in range(2):  # twice: for a deadline computed just before the step
                self._wake_all()
                self._settle()

    def _wake_all(self) -> None:
        with self._lock:
            conditions = {id(c): c for c, _ in self._waiting.values()}
        for condition in conditions.values():
            with condition:
                condition.notify_all()

    def _busy(self) -> list[str]:
        """Names of the library's threads that are not idle (caller holds
        ``_lock``): running, or woken and not yet back in a wait."""
        blocked: dict[int, int] = {}  # id(condition) -> threads registered on it
        for condition, _ in self._waiting.values():
            blocked[id(condition)] = blocked.get(id(condition), 0) + 1
        busy = []
        for thread in library_threads():
            if thread.name == _scheduler.WORKER_THREAD_NAME:
                continue
            entry = self._waiting.get(thread)
            if entry is None:
                busy.append(thread.name)
                continue
            # Notified (by anyone) and not yet returned, a waiter is no longer in
            # the condition's queue of waiters.
            waiters = condition_waiters(entry[0])
            if waiters is not None and waiters < blocked[id(entry[0])]:
                busy.append(thread.name)
        workers = _scheduler._workers
        with workers._lock:
            if workers._queue or workers._idle < workers._threads:
                busy.append(_scheduler.WORKER_THREAD_NAME)
        return busy

    def _settle(self) -> None:
        """Wait until every library thread waits on this clock (or has ended), and
        the scheduler's workers are idle."""
        give_up = time.monotonic() + self._settle_timeout
        with self._lock:
            # A thread that ends or a worker that goes idle tells no one: look
            # again every millisecond as well as at each new wait.
            while busy := self._busy():
                if time.monotonic() > give_up:
                    raise TimeoutError(
                        f"threads still busy after {self._settle_timeout} s: {busy}"
                    )
                self._changed.wait(0.001)


def _wake_scheduler() -> None:
    scheduler = _scheduler._scheduler
    with scheduler._cond:
        scheduler._cond.notify_all()


_installed: VirtualClock | None = None
_install_lock = threading.Lock()


@contextlib.contextmanager
def virtual_time(settle_timeout: float = 10.0) -> Iterator[VirtualClock]:
    """Put the library on a virtual clock for the ``with`` block.

    Inside the block, every deadline of the library (retry backoff and deadlines,
    timeouts, ``f_timeout``, rate limits, poll intervals) is on the yielded
    :class:`VirtualClock`, which moves only when the test calls
    :meth:`VirtualClock.advance`. Create the executors inside the block: a poll
    thread already waiting on the real clock notices the virtual one at its next
    wake-up only. On exit, the real clock resumes from the virtual time reached (it
    never goes back), so timers set inside the block fire later on the real clock.

    Args:
        settle_timeout: real seconds :meth:`VirtualClock.advance` waits for the
            library's threads to be idle before it raises :class:`TimeoutError`.

    Raises:
        RuntimeError: a virtual clock is already installed.

    Example::

        with virtual_time() as clock:
            future = Executors.sync().with_retry(policy).submit(flaky)
            clock.advance(60.0)  # returns once the retries due by then have run

    .. versionadded:: 0.2.0
    """
    global _installed
    with _install_lock:
        if _installed is not None:
            raise RuntimeError("a virtual clock is already installed")
        clock = VirtualClock(_clock.monotonic(), settle_timeout)
        _installed = clock
        _clock._install(clock.monotonic, clock._wait)
    _wake_scheduler()
    try:
        yield clock
    finally:
        with _install_lock:
            _clock._restore(clock._now)
            _installed = None
        clock._wake_all()
        _wake_scheduler()
