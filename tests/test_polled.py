"""The descriptors being polled and the list a poll function is given in each round
(``_fluent_executors.poll.rounds.Polled``): every round's list holds exactly the
descriptors whose futures are pending, in order of arrival, and a poll function may
change or keep its list as if it were a fresh one (docs/poll.rst, "The list of
descriptors")."""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import queue
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from wrapper_doubles import TIMEOUT

from _fluent_executors.poll.rounds import MAX_RUNS, Polled
from fluent_executors import ExceptionRetryPolicy, Executors, PollDescriptor


class FakeDescriptor:
    """What ``Polled`` reads of a descriptor."""

    __slots__ = ("_gone", "_slot", "name")

    def __init__(self, name: int) -> None:
        self.name = name
        self._slot = -1
        self._gone = False

    def __repr__(self) -> str:
        return f"D{self.name}"


class Descriptors:
    """A ``Polled`` and every descriptor made for it, which its ``recover`` reads
    as the executor reads the futures outstanding."""

    def __init__(self) -> None:
        self.made: list[Any] = []
        self.polled = Polled(self.recover)

    def recover(self) -> list[Any]:
        return [d for d in self.made if d._slot >= 0 and not d._gone]

    def arrive(self, count: int) -> list[Any]:
        """``count`` new descriptors, taken in."""
        new = [FakeDescriptor(len(self.made) + i) for i in range(count)]
        for descriptor in new:
            self.polled.add(descriptor)  # type: ignore[arg-type]
        self.made += new
        return new

    def done(self, *descriptors: Any) -> None:
        for descriptor in descriptors:
            self.polled.discard(descriptor)

    def round(
        self, poll: Callable[[list[Any]], object] = lambda batch: None
    ) -> list[Any]:
        """A round: what the poll function was given (a copy), after it ran."""
        polled = self.polled
        batch = polled.begin_round()
        given = list(batch)
        poll(batch)
        del batch  # as a driver lets go of the list before the round ends
        polled.end_round()
        return given


# -- the list of a round ----------------------------------------------------------


def test_a_round_gives_the_descriptors_in_order_of_arrival() -> None:
    descriptors = Descriptors()
    made = descriptors.arrive(5)

    assert descriptors.round() == made
    assert len(descriptors.polled) == 5


def test_done_descriptors_leave_the_next_round() -> None:
    descriptors = Descriptors()
    made = descriptors.arrive(6)
    descriptors.done(made[0], made[3], made[5])

    assert descriptors.round() == [made[1], made[2], made[4]]
    assert len(descriptors.polled) == 3


def test_descriptors_done_during_a_round_leave_the_next_one() -> None:
    descriptors = Descriptors()
    made = descriptors.arrive(10)

    descriptors.round(lambda batch: descriptors.done(*batch[:4]))

    assert descriptors.round() == made[4:]


def test_more_runs_than_max_runs_make_a_new_list_with_the_same_descriptors() -> None:
    descriptors = Descriptors()
    made = descriptors.arrive(4 * MAX_RUNS)
    descriptors.done(*made[::2])  # 2 * MAX_RUNS runs of one

    assert descriptors.round() == made[1::2]


def test_the_list_of_a_round_is_not_changed_while_the_poll_function_holds_it() -> None:
    descriptors = Descriptors()
    made = descriptors.arrive(4)
    batch = descriptors.polled.begin_round()

    descriptors.done(made[1])
    descriptors.arrive(2)

    assert batch == made
    descriptors.polled.end_round()


def test_a_descriptor_dropped_before_it_was_taken_in_is_ignored() -> None:
    descriptors = Descriptors()
    descriptors.polled.discard(FakeDescriptor(0))  # type: ignore[arg-type]

    assert len(descriptors.polled) == 0
    assert descriptors.round() == []


def test_the_first_drop_after_a_round_asks_for_a_tidy_and_a_tidy_cuts_it_out() -> None:
    descriptors = Descriptors()
    made = descriptors.arrive(4)
    descriptors.round()

    asks = [descriptors.polled.discard(d) for d in made[:2]]
    descriptors.polled.tidy()

    assert asks == [True, False]
    assert descriptors.polled._round == made[2:]


def test_a_drop_during_a_round_asks_for_no_tidy() -> None:
    descriptors = Descriptors()
    made = descriptors.arrive(2)
    asks: list[bool] = []

    descriptors.round(lambda batch: asks.append(descriptors.polled.discard(made[0])))

    assert asks == [False]
    assert descriptors.polled._round == made[1:]


def test_the_last_drop_lets_go_of_every_descriptor() -> None:
    descriptors = Descriptors()
    made = descriptors.arrive(3)
    descriptors.round()

    descriptors.done(*made)

    assert descriptors.polled._round == []
    assert list(descriptors.polled) == []


# -- a poll function that changes or keeps its list --------------------------------


def _set_first(batch: list[Any]) -> None:
    batch[0] = batch[-1]


def _delete_two(batch: list[Any]) -> None:
    del batch[:2]


def _add_first(batch: list[Any]) -> None:
    batch += batch[:1]


def _double(batch: list[Any]) -> None:
    batch *= 2


CHANGES: dict[str, Callable[[list[Any]], object]] = {
    "clear": lambda batch: batch.clear(),
    "pop": lambda batch: batch.pop(),
    "remove": lambda batch: batch.remove(batch[0]),
    "sort": lambda batch: batch.sort(key=lambda d: -d.name),
    "reverse": lambda batch: batch.reverse(),
    "append": lambda batch: batch.append(batch[0]),
    "extend": lambda batch: batch.extend(batch[:2]),
    "insert": lambda batch: batch.insert(0, batch[-1]),
    "batch[0] = x": _set_first,
    "del batch[:2]": _delete_two,
    "+=": _add_first,
    "*=": _double,
}

# Changes that the list's own methods do not see: found out by the length, or by a
# descriptor out of its place when one is cut out.
BEHIND: dict[str, Callable[[list[Any]], object]] = {
    "list.pop": lambda batch: list.pop(batch, 0),
    "list.sort": lambda batch: list.sort(batch, key=lambda d: -d.name),
    "list.clear": lambda batch: list.clear(batch),
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_list_the_poll_function_changes_does_not_change_the_next_round(
    change: Callable[[list[Any]], object],
) -> None:
    descriptors = Descriptors()
    made = descriptors.arrive(5)

    descriptors.round(change)

    assert descriptors.round() == made


@pytest.mark.parametrize("change", BEHIND.values(), ids=BEHIND.keys())
def test_a_list_changed_behind_its_methods_is_made_anew_with_every_descriptor(
    change: Callable[[list[Any]], object],
) -> None:
    descriptors = Descriptors()
    made = descriptors.arrive(5)

    descriptors.round(change)
    descriptors.done(made[2])

    assert descriptors.round() == [made[0], made[1], made[3], made[4]]
    assert len(descriptors.polled) == 4


def test_a_list_the_poll_function_keeps_is_not_changed_by_later_rounds() -> None:
    descriptors = Descriptors()
    made = descriptors.arrive(5)
    kept: list[list[Any]] = []
    descriptors.round(kept.append)

    descriptors.done(made[0])
    descriptors.arrive(1)
    descriptors.round()

    assert kept[0] == made


@pytest.mark.skipif(
    sys.implementation.name != "cpython", reason="a list per round elsewhere"
)
def test_a_list_nothing_refers_to_at_the_end_of_its_round_is_the_next_rounds() -> None:
    descriptors = Descriptors()
    made = descriptors.arrive(4)
    lists: list[int] = []
    descriptors.round(lambda batch: lists.append(id(batch)))
    descriptors.done(made[0])
    descriptors.arrive(1)

    descriptors.round(lambda batch: lists.append(id(batch)))

    assert lists[0] == lists[1]


@pytest.mark.skipif(
    sys.implementation.name != "cpython", reason="a list per round elsewhere"
)
def test_the_poll_thread_passes_the_same_list_from_round_to_round() -> None:
    # Made anew each round, it would touch every descriptor twice per round (the
    # list's references to them, as it is made and freed).
    lists: list[int] = []

    def poll(descriptors: list[PollDescriptor[int]]) -> float:
        lists.append(id(descriptors))
        if len(lists) == 3:
            for descriptor in descriptors:
                descriptor.yield_result(descriptor.result)
        return 0.0

    with Executors.thread_pool(1).with_poll(poll) as executor:
        assert executor.submit(int).result(timeout=TIMEOUT) == 0
    assert lists == [lists[0]] * 3


def test_a_round_after_a_kept_list_gives_every_descriptor_polled() -> None:
    descriptors = Descriptors()
    made = descriptors.arrive(3)
    kept: list[list[Any]] = []
    descriptors.round(kept.append)
    descriptors.done(made[1])

    assert descriptors.round() == [made[0], made[2]]


class PolledMachine(RuleBasedStateMachine):
    """``Polled`` against a model (a dict in order of arrival), through arrivals,
    futures done between and during rounds, tidies, and poll functions that change
    or keep their list, through its methods or behind them."""

    def __init__(self) -> None:
        super().__init__()
        self.descriptors = Descriptors()
        self.model: dict[int, Any] = {}
        self.kept: list[tuple[list[Any], list[Any]]] = []  # (list, as it was left)
        # A change behind the list's methods that keeps its length (list.sort)
        # keeps every descriptor, but their order only from the next rebuild.
        self.in_order = True

    @rule(count=st.integers(min_value=1, max_value=40))
    def arrive(self, count: int) -> None:
        for descriptor in self.descriptors.arrive(count):
            self.model[descriptor.name] = descriptor

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def done_between_rounds(self, data: st.DataObject) -> None:
        names = data.draw(st.sets(st.sampled_from(sorted(self.model))))
        self.descriptors.done(*(self.model.pop(name) for name in sorted(names)))

    @rule()
    def tidy(self) -> None:
        self.descriptors.polled.tidy()

    @rule(
        data=st.data(),
        change=st.sampled_from([None, *CHANGES, *BEHIND]),
        keep=st.booleans(),
    )
    def poll_round(self, data: st.DataObject, change: str | None, keep: bool) -> None:
        polled = self.descriptors.polled
        batch = polled.begin_round()
        self.check(batch)
        done: set[int] = set()
        if batch:
            done = data.draw(st.sets(st.sampled_from(sorted(self.model))))
        arrivals = data.draw(st.integers(min_value=0, max_value=5))

        def poll(given: list[Any]) -> None:
            as_given = list(given)
            for name in sorted(done):  # resolved by the poll function, or meanwhile
                polled.discard(self.model.pop(name))
            if arrivals:
                self.arrive(arrivals)
            if change is not None and given:
                {**CHANGES, **BEHIND}[change](given)
                self.in_order = self.in_order and change not in BEHIND
            if keep:
                self.kept.append((given, list(given) if change else as_given))

        poll(batch)
        del batch  # as a driver lets go of the list before the round ends
        polled.end_round()

    def check(self, descriptors: list[Any]) -> None:
        """``descriptors`` are those of the model, in its order while promised."""
        expected = list(self.model.values())
        if self.in_order:
            assert descriptors == expected
        else:
            assert sorted(descriptors, key=lambda d: d.name) == expected

    @invariant()
    def counts_what_is_polled(self) -> None:
        assert len(self.descriptors.polled) == len(self.model)
        self.check(list(self.descriptors.polled))

    @invariant()
    def kept_lists_stay_as_the_poll_function_left_them(self) -> None:
        for kept, as_left in self.kept:
            assert kept == as_left


def test_polled_against_a_model() -> None:
    run_state_machine_as_test(
        PolledMachine,
        settings=settings(
            max_examples=150,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


# -- through the executor ------------------------------------------------------------


def changing_poll(
    change: Callable[[list[PollDescriptor[int]]], object],
) -> tuple[Callable[[list[PollDescriptor[int]]], float], queue.Queue[list[int]]]:
    """A poll function that reports the tasks of each call, then ``change`` s its
    list, and returns 1 ms; and the queue of its reports."""
    rounds: queue.Queue[list[int]] = queue.Queue()

    def poll(descriptors: list[PollDescriptor[int]]) -> float:
        rounds.put([d.result for d in descriptors])
        change(descriptors)
        return 0.001

    return poll, rounds


def every_round_has_all(rounds: queue.Queue[list[int]], tasks: list[int]) -> None:
    """Wait for a call that is given every task, then check the next one is too."""
    while sorted(rounds.get(timeout=TIMEOUT)) != tasks:
        pass
    assert sorted(rounds.get(timeout=TIMEOUT)) == tasks


def test_a_poll_function_that_keeps_and_changes_its_lists_still_gets_every_future() -> (
    None
):
    """The same as with a fresh list per call (more-executors): what a poll
    function keeps stays as it left it, and its changes lose no future."""
    kept: list[tuple[list[PollDescriptor[int]], list[PollDescriptor[int]]]] = []

    def change(descriptors: list[PollDescriptor[int]]) -> None:
        descriptors.reverse()
        descriptors.pop()
        kept.append((descriptors, list(descriptors)))

    poll, rounds = changing_poll(change)
    executor = Executors.thread_pool(2).with_poll(poll)
    futures = [executor.submit(int, i) for i in range(6)]

    every_round_has_all(rounds, list(range(6)))

    executor.shutdown(cancel_futures=True)
    assert all(f.cancelled() for f in futures)
    assert all(descriptors == as_left for descriptors, as_left in kept)


def test_a_poll_function_that_changes_its_list_behind_its_methods_loses_no_future(
    caplog: pytest.LogCaptureFixture,
) -> None:
    poll, rounds = changing_poll(lambda descriptors: list.pop(descriptors, 0))
    executor = Executors.thread_pool(2).with_poll(poll, name="pop")
    futures = [executor.submit(int, i) for i in range(6)]

    with caplog.at_level(logging.WARNING, logger="fluent_executors.poll"):
        every_round_has_all(rounds, list(range(6)))

    executor.shutdown(cancel_futures=True)
    assert all(f.cancelled() for f in futures)
    warnings = [r for r in caplog.records if "changed its list" in r.getMessage()]
    assert len(warnings) == 1  # once per executor
    assert "'pop'" in warnings[0].getMessage()


def test_the_warning_of_a_changed_list_is_logged_outside_the_executors_lock() -> None:
    """A logging handler may call the executor (here stats(), which takes the
    poller's lock): it runs, and polling goes on."""
    poll, rounds = changing_poll(lambda descriptors: list.pop(descriptors, 0))
    executor = Executors.thread_pool(2).with_poll(poll)
    polled_seen: queue.Queue[int] = queue.Queue()

    class StatsHandler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            polled_seen.put(executor.stats().polled)

    handler = StatsHandler(logging.WARNING)
    logger = logging.getLogger("fluent_executors.poll")
    logger.addHandler(handler)
    try:
        futures = [executor.submit(int, i) for i in range(6)]
        assert polled_seen.get(timeout=TIMEOUT) <= 6
        every_round_has_all(rounds, list(range(6)))
    finally:
        logger.removeHandler(handler)

    executor.shutdown(cancel_futures=True)
    assert all(f.cancelled() for f in futures)


def test_a_list_changed_with_max_batch_above_the_futures_polled_loses_none() -> None:
    poll, rounds = changing_poll(lambda descriptors: descriptors.clear())
    executor = Executors.thread_pool(2).with_poll(poll, max_batch=100)
    futures = [executor.submit(int, i) for i in range(6)]

    every_round_has_all(rounds, list(range(6)))

    executor.shutdown(cancel_futures=True)
    assert all(f.cancelled() for f in futures)


def test_an_async_poll_function_that_changes_its_list_loses_no_future() -> None:
    rounds: queue.Queue[list[int]] = queue.Queue()

    async def poll(descriptors: list[PollDescriptor[int]]) -> float:
        await asyncio.sleep(0)
        rounds.put([d.result for d in descriptors])
        descriptors.clear()
        return 0.001

    executor = Executors.thread_pool(2).with_poll(poll)
    futures = [executor.submit(int, i) for i in range(6)]

    every_round_has_all(rounds, list(range(6)))

    executor.shutdown(cancel_futures=True)
    assert all(f.cancelled() for f in futures)


def test_a_poll_error_whose_traceback_holds_the_list_loses_no_future() -> None:
    """With a poll retry policy, the futures stay pending; the error's traceback
    refers to the list, which is then left to it."""
    rounds: queue.Queue[list[int]] = queue.Queue()
    errors: list[BaseException] = []

    def poll(descriptors: list[PollDescriptor[int]]) -> float:
        rounds.put([d.result for d in descriptors])
        try:
            raise ConnectionError("the service is down")
        except ConnectionError as error:
            errors.append(error)  # kept: its traceback refers to this frame
            raise

    retry = ExceptionRetryPolicy(max_attempts=10**9, sleep=0.001, max_sleep=0.001)
    executor = Executors.thread_pool(2).with_poll(poll, poll_retry_policy=retry)
    futures = [executor.submit(int, i) for i in range(6)]

    every_round_has_all(rounds, list(range(6)))

    executor.shutdown(cancel_futures=True)
    assert all(f.cancelled() for f in futures)


class Result:
    """A result whose release a test can see through a weak reference."""


def released(refs: list[weakref.ref[Result]]) -> bool:
    gc.collect()
    return all(ref() is None for ref in refs)


def test_futures_resolved_in_a_round_are_let_go_at_its_end() -> None:
    def poll(descriptors: list[PollDescriptor[Result | int]]) -> float:
        for descriptor in descriptors:
            if isinstance(descriptor.result, Result):
                descriptor.yield_result()
        return math.inf  # the one left waits, with the list of the last round

    executor = Executors.thread_pool(2).with_poll(poll)
    pending = executor.submit(int, 1)
    results = [Result() for _ in range(3)]
    refs = [weakref.ref(r) for r in results]
    futures = [executor.submit(lambda r=r: r) for r in results]
    for future in futures:
        future.result(TIMEOUT)
    del futures, results, future

    assert released(refs)
    assert not pending.done()
    executor.shutdown(cancel_futures=True)


def test_futures_resolved_between_rounds_are_let_go_before_the_next_round() -> None:
    """Resolved by another thread (an event, a cancel) while the poll function
    waits: the poll thread wakes up and cuts them out, without polling."""
    given: queue.Queue[list[PollDescriptor[Result | int]]] = queue.Queue()
    calls = 0

    def poll(descriptors: list[PollDescriptor[Result | int]]) -> float:
        nonlocal calls
        calls += 1
        given.put(list(descriptors))
        return math.inf  # no round until notify() or a new future

    tidied = threading.Event()
    tidy, end_round = Polled.tidy, Polled.end_round
    rounds_ended = threading.Semaphore(0)

    def tidy_and_tell(polled: Polled) -> None:
        cutting = bool(polled._gone)
        tidy(polled)
        if cutting:
            tidied.set()

    def end_round_and_tell(polled: Polled) -> None:
        end_round(polled)
        rounds_ended.release()

    executor = Executors.thread_pool(2).with_poll(poll)
    results = [Result() for _ in range(3)]
    refs = [weakref.ref(r) for r in results]
    with mock.patch.object(Polled, "end_round", end_round_and_tell):
        pending = executor.submit(int, 1)
        futures = [executor.submit(lambda r=r: r) for r in results]
        seen: dict[int, PollDescriptor[Result | int]] = {}
        while len(seen) < 4:  # every future is polled, in one call or more
            seen |= {id(d): d for d in given.get(timeout=TIMEOUT)}
        polls = calls
        for _ in range(polls):  # the poll thread is out of its last round
            assert rounds_ended.acquire(timeout=TIMEOUT)
    descriptors = [d for d in seen.values() if isinstance(d.result, Result)]
    with mock.patch.object(Polled, "tidy", tidy_and_tell):
        for descriptor in descriptors:
            descriptor.yield_result()  # from this thread: an event
        assert tidied.wait(TIMEOUT)
    for future in futures:
        future.result(TIMEOUT)
    while not given.empty():  # lists of descriptors, which hold the futures
        given.get_nowait()
    del futures, results, future, descriptors, descriptor, seen

    assert released(refs)
    assert calls == polls  # without a poll
    assert not pending.done()
    executor.shutdown(cancel_futures=True)
