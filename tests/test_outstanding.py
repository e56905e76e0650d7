"""Outstanding: the futures an executor returned and has yet to see done, and the
shutdown deferred until none is left. add() and discard() take no lock: these
tests put the other thread's step between their two steps."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluent_executors._outstanding import Outstanding


class StepBetween(dict[Future[Any], None]):
    """The futures of an Outstanding, which runs ``step`` once, right after the
    next future is added: as another thread would, between add()'s two steps."""

    def __init__(self, futures: dict[Future[Any], None], step: Callable[[], object]):
        super().__init__(futures)
        self.step: Callable[[], object] | None = step

    def __setitem__(self, future: Future[Any], value: None) -> None:
        super().__setitem__(future, value)
        step, self.step = self.step, None
        if step is not None:
            step()


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


def test_a_close_between_the_add_and_its_check_refuses_the_future() -> None:
    outstanding = Outstanding()
    closed: list[list[Future[Any]]] = []
    outstanding._futures = StepBetween({}, lambda: closed.append(outstanding.close()))
    future: Future[int] = Future()

    with pytest.raises(RuntimeError, match="after shutdown"):
        outstanding.add(future)

    assert closed == [[future]]  # listed (a shutdown may cancel it: never returned)
    assert len(outstanding) == 0


def closed_with_one_left() -> tuple[Outstanding, Future[int]]:
    """A closed Outstanding, and the one future it still has."""
    outstanding = Outstanding()
    last: Future[int] = Future()
    outstanding.add(last)
    outstanding.close()
    return outstanding, last


def refuse_an_add_while_discarding(outstanding: Outstanding, last: Future[int]) -> None:
    """add() a future, refused; ``last`` is discarded between its two steps, with
    the refused future in the dict: that discard leaves the wake-up to add()."""
    outstanding._futures = StepBetween(
        outstanding._futures, lambda: outstanding.discard(last)
    )
    with pytest.raises(RuntimeError, match="after shutdown"):
        outstanding.add(Future())


def test_the_last_discard_between_a_refused_add_and_its_check_runs_the_action() -> None:
    outstanding, last = closed_with_one_left()
    action = mock.Mock()
    outstanding.finish(False, action)  # deferred: one future is left

    refuse_an_add_while_discarding(outstanding, last)

    action.assert_called_once_with()


def test_finish_with_wait_returns_once_a_refused_add_has_left() -> None:
    outstanding, last = closed_with_one_left()
    finished = threading.Event()
    waiting = threading.Thread(
        target=outstanding.finish, args=(True, finished.set), daemon=True
    )
    waiting.start()

    refuse_an_add_while_discarding(outstanding, last)

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
