"""What the library takes from CPython beyond its documented API, in one place.

Contract: a module of the library that reads a private name of
:mod:`concurrent.futures` or :mod:`threading`, checks the Python version, or takes
a step without a lock because the GIL makes it safe, asks this module first: the
private names are imported from here, and each fast path is taken only where the
flag beside it says so. Three flags decide, once, at import:

- :data:`OWN_POOL_ITEMS`: the library's thread pool queues work items of its own
  (one future per submit instead of the standard future and a proxy that follows
  it) only on the CPython versions whose pool code tests/test_pools.py checks,
  3.10 to 3.15; on any other version it takes the standard ``submit``.
- :data:`LIGHT_FUTURES`: :class:`~fluent_executors.ProxyFuture` keeps lighter
  fields (its lock as its ``_condition``, its ``_waiters`` without a list, a
  :class:`LightCondition` made on the first blocking wait), and a done standard
  future is read without its lock (:func:`done_failure`, :func:`done_outcome`),
  only on those versions; elsewhere a proxy future has a standard Condition and
  a list, and a standard future is asked through its methods.
- :data:`LOCK_FREE`: the steps that the GIL makes atomic (a counter's increment,
  a dict's ``pop`` beside a ``list()`` of it, a field set and read across
  threads: ``Outstanding.discard``, the end of a queueing wrapper's dispatch, a
  throttle's count of the futures under way, the retry future's phase, a deadline
  queue's count of done items) go without their lock only where a GIL runs the
  threads one at a time.

All are off in the *portable* mode: on a free-threaded build
(``sys._is_gil_enabled()`` false), on a Python version the library does not know,
and wherever the environment variable ``FLUENT_EXECUTORS_PORTABLE=1`` is set when
the library is imported; ``nox -s tests-portable`` runs the whole suite so
(docs/contributing.rst). What each fast path gains, measured, is said beside it.

Each fast path is checked by a test that parses the standard library's source
or compares fields on objects (tests/test_pools.py for the pool's fields,
tests/test_future.py for the proxy future's). Read in either mode: the fields of
:class:`~concurrent.futures.Future` that :func:`~concurrent.futures.wait` and
:func:`~concurrent.futures.as_completed` read of any future (``_state``,
``_condition``, ``_waiters``; a proxy future sets them itself, without
``Future.__init__``), and a Condition's queue of waiters, for the virtual clock of
:mod:`fluent_executors.testing` (:func:`condition_waiters`).
"""

from __future__ import annotations

import _thread
import collections
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError, Future

# The names of concurrent.futures' states, and wait()'s named tuple, which the
# package does not export; unchanged from 3.10 to 3.15, and read where a future's
# state is compared (a string comparison, cheaper than a method call per future).
from concurrent.futures._base import (
    CANCELLED,
    CANCELLED_AND_NOTIFIED,
    FINISHED,
    PENDING,
    RUNNING,
    DoneAndNotDoneFutures,
)
from concurrent.futures._base import _Waiter as Waiter  # what wait() appends
from typing import Any, TypeVar, cast

__all__ = [
    "CANCELLED",
    "CANCELLED_AND_NOTIFIED",
    "FINISHED",
    "GIL",
    "KNOWN_VERSIONS",
    "LIGHT_FUTURES",
    "LOCK_FREE",
    "OWN_POOL_ITEMS",
    "PENDING",
    "PORTABLE",
    "PORTABLE_SWITCH",
    "RUNNING",
    "DoneAndNotDoneFutures",
    "LightCondition",
    "RLock",
    "Waiter",
    "condition_waiters",
    "done_failure",
    "done_outcome",
    "interpreter_exiting",
]

T = TypeVar("T")

PORTABLE_SWITCH = "FLUENT_EXECUTORS_PORTABLE"
"""The environment variable that, set to ``1`` at import, selects the portable
mode."""

KNOWN_VERSIONS = ((3, 10), (3, 15))
"""The first and last CPython versions whose private fields the fast paths read."""


def _gil_enabled() -> bool:
    is_gil_enabled = getattr(sys, "_is_gil_enabled", None)  # 3.13 and later
    return True if is_gil_enabled is None else bool(is_gil_enabled())


GIL = _gil_enabled()
"""Whether a GIL runs this interpreter's threads one at a time (``False`` on a
free-threaded build, such as 3.14t, with the GIL off)."""

_KNOWN = (
    sys.implementation.name == "cpython"
    and KNOWN_VERSIONS[0] <= sys.version_info[:2] <= KNOWN_VERSIONS[1]
)

PORTABLE = os.environ.get(PORTABLE_SWITCH) == "1" or not GIL or not _KNOWN
"""Whether the library takes no fast path that depends on CPython's version or on
its GIL (see the module's docstring)."""

LOCK_FREE = GIL and os.environ.get(PORTABLE_SWITCH) != "1"
"""Whether the steps that the GIL makes atomic go without their lock. On a Python
the library does not know but with a GIL, they still do: they rely on the GIL, not
on private fields. Gain, measured: ``thread_pool(8).with_throttle(64)
.with_timeout(60).with_retry()`` costs 1.15x the CPU per future with these steps
locked (bench/fast_paths.py; 100,000 futures, on a loaded 2-core machine)."""

OWN_POOL_ITEMS = not PORTABLE
"""Whether the library's thread pool queues work items of its own (see the
module's docstring). Gain, measured: one future per submit instead of two, and
0.51x-0.76x the CPU per future of a bare ``ThreadPoolExecutor`` (100,000 futures,
``max_workers=8``) against 2.95x-3.23x in the portable mode, on the standard
submit and with :data:`LIGHT_FUTURES` off too (``PYTHONPATH=src python
bench/fast_paths.py``, two runs); on 3.14 0.37x against 3.24x, on 3.15 0.42x
against 3.35x (``bench/fast_paths.py --pool`` in either mode, one run each)."""


RLock: Callable[[], threading.RLock] = getattr(_thread, "RLock", threading.RLock)
"""The re-entrant lock type that :func:`threading.RLock` returns, made without
that function's Python call (CPython's C ``_thread.RLock``, 3.10 to 3.15; where
``_thread`` has none, ``threading.RLock`` itself): a future of the library makes
one per instance. Taken in either mode: a public type of the interpreter, not a
private field, and the same object ``threading.RLock()`` makes."""


def interpreter_exiting() -> bool:
    """Whether the interpreter is exiting: its exit hook has shut the standard
    pools down (they refuse new work from then on: the private flags of
    :mod:`concurrent.futures.thread` and :mod:`concurrent.futures.process`, read
    if present), or it is finalizing."""
    if sys.is_finalizing():
        return True
    pools = sys.modules.get("concurrent.futures.thread")
    processes = sys.modules.get("concurrent.futures.process")
    return bool(
        getattr(pools, "_shutdown", False)
        or getattr(processes, "_global_shutdown", False)
    )


LIGHT_FUTURES = not PORTABLE
"""Whether :class:`~fluent_executors.ProxyFuture` keeps lighter fields than a
standard future's (``resolvable.py``): its ``RLock`` as its ``_condition``
(:func:`~concurrent.futures.wait` and :func:`~concurrent.futures.as_completed`
only acquire, release and enter it), a view holding at most one waiter without a
list as its ``_waiters`` (they only append and remove), a :class:`LightCondition`
made on a thread's first blocking wait; and whether a done standard future is
read without its lock (:func:`done_failure`, :func:`done_outcome`). Portable
twin: a standard ``threading.Condition`` over the future's ``RLock`` as
``_condition`` (made when first asked for) and a list as ``_waiters``; the
public methods. Gain, measured: CPU per future, portable / light, 1.49x-1.67x
through ``thread_pool(8).with_map(str).with_map(len)`` and 1.54x for
``thread_pool(8)`` on the standard ``submit`` (``PYTHONPATH=src python
bench/fast_paths.py``, two runs; 100,000 futures, on a loaded 2-core machine)."""


_CONDITION_LOCKED = sys.version_info >= (3, 14)  # Condition.locked, its lock's


class LightCondition(threading.Condition):
    """A ``threading.Condition`` over a proxy future's ``RLock``, made quickly
    (only where :data:`LIGHT_FUTURES`): ``Condition.__init__`` looks each of the
    lock's methods up in a try statement; this sets the fields that Condition's
    methods read directly, as Condition binds them (3.10 to 3.15: ``locked``
    from 3.14 on; tests/test_future.py fails if a version's Condition has other
    fields)."""

    def __init__(self, lock: Any) -> None:  # instead of Condition.__init__
        self._lock = lock
        self.acquire = lock.acquire  # type: ignore[method-assign]
        self.release = lock.release  # type: ignore[method-assign]
        if _CONDITION_LOCKED:
            self.locked = lock.locked
        self._release_save = lock._release_save
        self._acquire_restore = lock._acquire_restore
        self._is_owned = lock._is_owned
        self._waiters: Any = collections.deque()


def done_failure(future: Future[Any]) -> tuple[bool, BaseException | None]:
    """Return ``(cancelled, exception)`` of the done ``future`` (``exception`` is
    ``None`` if it succeeded or is cancelled).

    Where :data:`LIGHT_FUTURES`, a standard :class:`~concurrent.futures.Future` is
    read without its lock (a done future never changes); any other future, and
    every one in the portable mode, through ``exception()`` (one call, which takes
    its Condition).
    """
    if LIGHT_FUTURES and type(future) is Future:
        state = future._state
        if state == FINISHED:
            return False, future._exception
        if state in (CANCELLED, CANCELLED_AND_NOTIFIED):
            return True, None
    try:
        return False, future.exception()
    except CancelledError:
        return True, None


def done_outcome(future: Future[T]) -> tuple[bool, BaseException | None, T]:
    """Return ``(cancelled, exception, result)`` of the done ``future``; ``result``
    is ``None`` if it is cancelled or failed. Read as :func:`done_failure` reads
    it, and its result where it succeeded (``result()``, in the portable mode)."""
    if LIGHT_FUTURES and type(future) is Future and future._state == FINISHED:
        # The common case in one call; _result is a T unless there is an _exception
        return False, future._exception, future._result  # type: ignore[return-value]
    cancelled, exception = done_failure(future)
    if cancelled or exception is not None:
        return cancelled, exception, cast("T", None)
    return False, None, future.result()


def condition_waiters(condition: threading.Condition) -> int | None:
    """How many threads wait on ``condition`` and have not been notified (its
    queue of waiters, CPython's ``Condition._waiters``); ``None`` where a Python
    keeps no such field. Read in either mode: the virtual clock of
    :mod:`fluent_executors.testing` has no other way to see a thread notified by
    another, and takes a thread it cannot see so as idle."""
    waiters = getattr(condition, "_waiters", None)
    return None if waiters is None else len(waiters)
