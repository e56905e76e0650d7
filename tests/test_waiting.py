"""as_completed and wait with an inactivity timeout (docs/futures.rst, Waiting)."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import (
    ALL_COMPLETED,
    FIRST_COMPLETED,
    FIRST_EXCEPTION,
    Future,
)
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluent_executors import Executors, as_completed, f_return, wait
from fluent_executors.testing import VirtualClock, virtual_time

TIMEOUT = 10.0  # real seconds a test waits for a thread


def in_thread(fn: Callable[[], Any]) -> Future[Any]:
    """Run ``fn()`` in a new thread; its outcome in the returned future."""
    outcome: Future[Any] = Future()

    def run() -> None:
        try:
            outcome.set_result(fn())
        except BaseException as error:
            outcome.set_exception(error)

    threading.Thread(target=run, name="test-waiting").start()
    return outcome


class Watched(Future[int]):
    """A future that tells when a done callback is added to it: by then, the
    function waiting for it has read the time it starts counting from."""

    def __init__(self) -> None:
        super().__init__()
        self.watched = threading.Event()

    def add_done_callback(self, fn: Callable[[Future[int]], object]) -> None:
        super().add_done_callback(fn)
        self.watched.set()


def watched(count: int) -> list[Watched]:
    return [Watched() for _ in range(count)]


def until_watched(futures: list[Watched]) -> None:
    for future in futures:
        assert future.watched.wait(TIMEOUT)


@pytest.fixture
def clock() -> Iterator[VirtualClock]:
    with virtual_time() as clock:
        yield clock


def test_as_completed_yields_done_futures_first_then_in_finishing_order() -> None:
    done, first, second = f_return("done"), Future[str](), Future[str]()
    iterator = as_completed([first, done, second, done])

    assert next(iterator) is done
    second.set_result("second")
    assert next(iterator) is second
    first.set_result("first")
    assert next(iterator) is first
    with pytest.raises(StopIteration):
        next(iterator)


def test_an_idle_timeout_restarts_whenever_a_future_finishes(
    clock: VirtualClock,
) -> None:
    # Ten minutes of idleness allowed; the batch takes 25 minutes in all.
    futures = watched(3)
    yielded = in_thread(lambda: list(as_completed(futures, idle_timeout=600.0)))
    until_watched(futures)

    for n, future in enumerate(futures):
        clock.advance(500.0)
        future.set_result(n)

    assert yielded.result(timeout=TIMEOUT) == futures


def test_an_idle_timeout_raises_naming_the_futures_still_pending(
    clock: VirtualClock,
) -> None:
    futures = [Future[int]() for _ in range(3)]
    iterator = as_completed(futures, idle_timeout=600.0)
    futures[0].set_result(0)
    assert next(iterator) is futures[0]
    remaining = in_thread(lambda: list(iterator))

    clock.advance(599.0)
    assert not remaining.done()  # the idle time counts from the first one's end
    clock.advance(2.0)

    error = remaining.exception(timeout=TIMEOUT)
    assert isinstance(error, concurrent.futures.TimeoutError)
    assert str(error) == "2 (of 3) futures unfinished after 600.0 s with none finishing"


def test_the_whole_timeout_still_holds_while_futures_keep_finishing(
    clock: VirtualClock,
) -> None:
    futures = watched(4)
    yielded: list[Future[int]] = []

    def consume() -> None:
        for future in as_completed(futures, timeout=1000.0, idle_timeout=600.0):
            yielded.append(future)

    consumer = in_thread(consume)
    until_watched(futures)
    for n, future in enumerate(futures[:2]):
        clock.advance(400.0)
        future.set_result(n)
    clock.advance(201.0)  # 1,001 s in all; 201 s since the last one finished

    error = consumer.exception(timeout=TIMEOUT)
    assert isinstance(error, concurrent.futures.TimeoutError)
    assert str(error) == "2 (of 4) futures unfinished"
    assert yielded == futures[:2]


def test_wait_returns_what_is_done_once_nothing_finished_for_the_idle_timeout(
    clock: VirtualClock,
) -> None:
    futures = watched(3)
    result = in_thread(lambda: wait(futures, idle_timeout=60.0))
    until_watched(futures)

    clock.advance(30.0)
    futures[0].set_result(0)
    clock.advance(59.0)
    assert not result.done()  # 59 s since the last one finished
    clock.advance(2.0)

    done, not_done = result.result(timeout=TIMEOUT)
    assert done == {futures[0]}
    assert not_done == set(futures[1:])


def test_wait_with_an_idle_timeout_returns_at_once_when_all_are_done() -> None:
    futures = [f_return(n) for n in range(3)]

    assert wait(futures, idle_timeout=0.0) == (set(futures), set())


@pytest.mark.parametrize("return_when", [FIRST_COMPLETED, FIRST_EXCEPTION])
def test_wait_returns_at_the_first_finish_or_failure_as_asked(
    return_when: str,
) -> None:
    ok, failing, other = Future[int](), Future[int](), Future[int]()
    result = in_thread(
        lambda: wait([ok, failing, other], return_when=return_when, idle_timeout=60)
    )
    ok.set_result(1)
    if return_when == FIRST_EXCEPTION:
        failing.set_exception(ValueError("no"))

    done, not_done = result.result(timeout=TIMEOUT)
    assert ok in done
    assert other in not_done
    assert (failing in done) is (return_when == FIRST_EXCEPTION)


@given(
    states=st.lists(st.sampled_from(["pending", "result", "error", "cancelled"])),
    return_when=st.sampled_from([FIRST_COMPLETED, FIRST_EXCEPTION, ALL_COMPLETED]),
)
def test_wait_answers_as_the_standard_one_does(
    states: list[str], return_when: str
) -> None:
    futures = []
    for state in states:
        future = Future[int]()
        if state == "result":
            future.set_result(1)
        elif state == "error":
            future.set_exception(ValueError())
        elif state == "cancelled":
            future.cancel()
            # As an executor does; the standard wait counts the future done only
            # then (ours at once: docs/futures.rst, Waiting).
            future.set_running_or_notify_cancel()
        futures.append(future)

    ours = wait(futures, timeout=0, return_when=return_when, idle_timeout=60.0)
    standard = concurrent.futures.wait(futures, timeout=0, return_when=return_when)

    assert ours == standard


def test_futures_of_the_library_and_of_the_standard_pool_mix() -> None:
    with (
        Executors.thread_pool(max_workers=2) as ours,
        concurrent.futures.ThreadPoolExecutor(max_workers=2) as standard,
    ):
        futures = [ours.submit(pow, 2, 3), standard.submit(pow, 3, 2)]
        results = {f.result() for f in as_completed(futures, idle_timeout=TIMEOUT)}
    assert results == {8, 9}


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"idle_timeout": -1}, ValueError, "idle_timeout must be >= 0, got -1"),
        ({"idle_timeout": "60"}, TypeError, "idle_timeout must be a real number"),
        ({"timeout": float("nan")}, ValueError, "timeout must be >= 0, got nan"),
    ],
)
def test_bad_timeouts_are_refused_naming_the_argument(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        next(as_completed([Future()], **kwargs))
    with pytest.raises(error, match=message):
        wait([Future()], **kwargs)


def test_wait_refuses_an_unknown_return_when() -> None:
    with pytest.raises(ValueError, match="return_when must be FIRST_COMPLETED"):
        wait([], return_when="SOMETIME")


def test_a_negative_timeout_has_passed_already_as_for_the_standard_function() -> None:
    with pytest.raises(concurrent.futures.TimeoutError):
        next(as_completed([Future()], timeout=-1))
    assert wait([pending := Future[int]()], timeout=-1) == (set(), {pending})
