"""Outstanding: the futures an executor returned and has yet to see done, and the
shutdown deferred until none is left. discard() takes no lock but for the last
future after a close: these tests put another thread's step between its two
steps (dropping the future, then reading whether it was the last one)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _fluent_executors.outstanding import Outstanding
from _fluent_executors.stdlib_compat import LOCK_FREE


class StepBetween(dict[Future[Any], None]):
    """The futures of an Outstanding, which runs ``step`` once, right after the
    next future is dropped: as another thread would, inside discard()."""

    def __init__(self, futures: dict[Future[Any], None], step: Callable[[], object]):
        super().__init__(futures)
        self.step: Callable[[], object] | None = step

    def pop(self, future: Future[Any], default: None = None) -> None:
        popped = super().pop(future, default)
        step, self.step = self.step, None
        if step is not None:
            step()
        return popped


def test_a_future_added_then_discarded_is_no_longer_outstanding() -> None:
    outstanding = Outstanding()
    future: Future[int] = Future()

    outstanding.add(future)
    assert len(outstanding) == 1
    outstanding.discard(future)

    assert len(outstanding) == 0
    assert outstanding.close() == []


def test_add_after_close_raises_and_leaves_nothing_outstanding() -> None:
    outstanding = Outstanding()
    outstanding.close()

    with pytest.raises(RuntimeError, match="after shutdown"):
        outstanding.add(Future())

    assert len(outstanding) == 0


def with_one_left() -> tuple[Outstanding, Future[int]]:
    """An Outstanding with one future, and that future."""
    outstanding = Outstanding()
    last: Future[int] = Future()
    outstanding.add(last)
    return outstanding, last


@pytest.mark.skipif(not LOCK_FREE, reason="discard takes the lock here")
@pytest.mark.parametrize("wait", [False, True])
def test_a_shutdown_between_the_last_discards_two_steps_runs_its_action_once(
    wait: bool,
) -> None:
    # The future is dropped, then the executor shuts down (close, finish), then
    # discard() reads that it was the last: finish() saw none left and acted.
    outstanding, last = with_one_left()
    action = mock.Mock()

    def shut_down() -> None:
        outstanding.close()
        outstanding.finish(wait, action)

    outstanding._futures = StepBetween(outstanding._futures, shut_down)
    outstanding.discard(last)

    action.assert_called_once_with()


def test_the_last_discard_after_a_finish_without_wait_runs_the_action() -> None:
    outstanding, last = with_one_left()
    outstanding.close()
    action = mock.Mock()
    outstanding.finish(False, action)  # deferred: one future is left
    action.assert_not_called()

    outstanding.discard(last)

    action.assert_called_once_with()


def test_the_last_discard_wakes_a_finish_that_waits() -> None:
    outstanding, last = with_one_left()
    outstanding.close()
    finished = threading.Event()
    waiting = threading.Thread(
        target=outstanding.finish, args=(True, finished.set), daemon=True
    )
    waiting.start()

    outstanding.discard(last)

    assert finished.wait(5)
    waiting.join(5)
    assert not waiting.is_alive()


@settings(max_examples=25, deadline=None)
@given(
    per_thread=st.lists(st.integers(0, 200), min_size=1, max_size=4),
    wait=st.booleans(),
)
def test_threads_adding_and_discarding_while_closed_leave_the_action_run_once(
    per_thread: list[int], wait: bool
) -> None:
    outstanding = Outstanding()
    ran: list[None] = []
    start = threading.Barrier(len(per_thread) + 1)

    def submitter(count: int) -> None:
        start.wait()
        for _ in range(count):
            future: Future[int] = Future()
            try:
                outstanding.add(future)
            except RuntimeError:  # closed
                continue
            outstanding.discard(future)

    def shutdown() -> None:
        start.wait()
        outstanding.close()
        outstanding.finish(wait, lambda: ran.append(None))

    threads = [
        threading.Thread(target=submitter, args=(n,), daemon=True) for n in per_thread
    ]
    threads.append(threading.Thread(target=shutdown, daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)  # a finish() that missed the last discard waits forever
        assert not thread.is_alive()

    assert len(outstanding) == 0
    assert ran == [None]
