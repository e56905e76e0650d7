"""What the library takes from CPython beyond its documented API, in one place.

Contract: a module of the library that reads a private name of
:mod:`concurrent.futures` or :mod:`threading`, checks the Python version, or takes
a step without a lock because the GIL makes it safe, asks this module first: the
private names are imported from here, and each fast path is taken only where the
flag beside it says so. Two flags decide, once, at import:

- :data:`OWN_POOL_ITEMS`: the library's thread pool queues work items of its own
  (one future per submit instead of the standard future and a proxy that follows
  it) only on the CPython versions whose pool code tests/test_pools.py checks,
  3.10 to 3.13; on any other version it takes the standard ``submit``.
- :data:`LOCK_FREE`: the steps that the GIL makes atomic (a counter's increment,
  a dict's ``pop`` beside a ``list()`` of it, a field set and read across
  threads: ``Outstanding.discard``, the end of a queueing wrapper's dispatch, the
  retry future's phase, a deadline queue's count of done items) go without their
  lock only where a GIL runs the threads one at a time.

Both are off in the *portable* mode: on a free-threaded build
(``sys._is_gil_enabled()`` false), on a Python version the library does not know,
and wherever the environment variable ``FLUENT_EXECUTORS_PORTABLE=1`` is set when
the library is imported; ``nox -s tests-portable`` runs the whole suite so
(docs/contributing.rst). What each fast path gains, measured, is said beside it.

Still read directly, each beside a test that parses the standard library's
source for it: the fields of :class:`~concurrent.futures.Future` that
:class:`~fluent_executors.ProxyFuture` keeps (``_state``, ``_result``,
``_exception``, ``_waiters``, ``_condition``; tests/test_future.py) and the
fields of the standard pool that the library's pool shares with it
(tests/test_pools.py).
"""

from __future__ import annotations

import os
import sys

# The names of concurrent.futures' states, and wait()'s named tuple, which the
# package does not export; unchanged from 3.10 to 3.13, and read where a future's
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

__all__ = [
    "CANCELLED",
    "CANCELLED_AND_NOTIFIED",
    "FINISHED",
    "GIL",
    "KNOWN_VERSIONS",
    "LOCK_FREE",
    "OWN_POOL_ITEMS",
    "PENDING",
    "PORTABLE",
    "PORTABLE_SWITCH",
    "RUNNING",
    "DoneAndNotDoneFutures",
    "Waiter",
    "interpreter_exiting",
]

PORTABLE_SWITCH = "FLUENT_EXECUTORS_PORTABLE"
"""The environment variable that, set to ``1`` at import, selects the portable
mode."""

KNOWN_VERSIONS = ((3, 10), (3, 13))
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
0.48x-0.59x the CPU per future of a bare ``ThreadPoolExecutor`` (100,000 futures,
``max_workers=8``) against 2.12x-2.24x on the standard submit
(bench/fast_paths.py)."""


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
