"""The counts of an executor (``_fluent_executors.counts``): exact under threads
that count at once, with a lock in every change where no GIL makes an increment
atomic (a free-threaded build, and the portable mode, which tests that path)."""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from typing import Any

import pytest
from test_init import run_python
from wrapper_doubles import TIMEOUT

from _fluent_executors.counts import (
    Counts,
    EventCount,
    LockedCounts,
    LockedEventCount,
    event_count,
    open_counts,
)
from _fluent_executors.stdlib_compat import GIL, LOCK_FREE

THREADS = 8
EACH = 20_000


@pytest.fixture
def switching_often() -> Iterator[None]:
    """Threads switched every microsecond: a lost increment would show."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def in_threads(work: Callable[[], object]) -> None:
    """Run ``work`` in ``THREADS`` threads at once; return once all are done."""
    start = threading.Barrier(THREADS)

    def run() -> None:
        start.wait(TIMEOUT)
        work()

    threads = [threading.Thread(target=run) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    assert not any(thread.is_alive() for thread in threads)


def test_the_counts_take_a_lock_exactly_where_no_gil_makes_increments_atomic() -> None:
    counts = open_counts(Executor(), "threadpool", "n")
    assert type(counts) is (Counts if LOCK_FREE else LockedCounts)
    assert type(event_count()) is (EventCount if LOCK_FREE else LockedEventCount)


def test_the_portable_mode_counts_under_a_lock() -> None:
    code = (
        "from concurrent.futures import Executor\n"
        "from _fluent_executors.counts import event_count, open_counts\n"
        "print(type(open_counts(Executor(), 'retry', 'n')).__name__,\n"
        "      type(event_count()).__name__)"
    )
    assert run_python(code, FLUENT_EXECUTORS_PORTABLE="1") == (
        "LockedCounts LockedEventCount"
    )


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(
            Counts, marks=pytest.mark.skipif(not GIL, reason="lock-free needs a GIL")
        ),
        LockedCounts,
    ],
)
def test_no_count_is_lost_by_threads_counting_at_once(
    make: type[Counts], switching_often: None
) -> None:
    counts = make("retry", "n", None)
    events = EventCount() if make is Counts else LockedEventCount()

    def work() -> None:
        for i in range(EACH):
            counts.ended(i % 3 == 1, i % 3 == 2)
            counts.running_changed(1)
            counts.pending_changed(1)
            events.add()
            counts.running_changed(-1)

    in_threads(work)

    total = THREADS * EACH
    assert counts.done == total
    assert counts.failed == THREADS * len(range(1, EACH, 3))
    assert counts.cancelled == THREADS * len(range(2, EACH, 3))
    assert counts.pending == events.value == total
    assert counts.running == 0


def test_a_locked_count_of_a_future_done_already_counts_it_at_once() -> None:
    # track() adds the done callback under the lock; it runs at once, inside.
    counts = LockedCounts("processpool", "n", None)
    future: Future[int] = Future()
    future.set_exception(ValueError())

    counts.track(future)

    assert (counts.submitted, counts.done, counts.failed) == (1, 1, 1)


def changes_a_field(function: Callable[..., Any]) -> bool:
    """Whether ``function`` assigns to a field of ``self`` itself."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    return any(
        isinstance(node, (ast.Assign, ast.AugAssign))
        and any(
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            for target in (
                node.targets if isinstance(node, ast.Assign) else [node.target]
            )
        )
        for node in ast.walk(tree)
    )


def test_every_method_that_changes_a_count_holds_the_lock_when_locked() -> None:
    # A method added to Counts that changes a field, without its locked twin in
    # LockedCounts, would lose counts on a free-threaded build.
    changing = {
        name
        for name, function in vars(Counts).items()
        if inspect.isfunction(function)
        and name != "__init__"
        and changes_a_field(function)
    }
    assert changing  # the check reads what it should
    assert changing <= set(vars(LockedCounts))
    assert "add" in vars(LockedEventCount)
