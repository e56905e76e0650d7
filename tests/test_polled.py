"""The descriptors being polled and the list a poll function is given in each round
(``_polled.Polled``): every round's list holds exactly the descriptors whose futures
are pending, in order of arrival, and a poll function may change or keep its list
as if it were a fresh one (docs/poll.rst, "The list of descriptors")."""

from __future__ import annotations

import gc
import math
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any

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

from fluent_executors import Executors, PollDescriptor
from fluent_executors._polled import MAX_RUNS, Polled


class FakeDescriptor:
    """What ``Polled`` reads of a descriptor."""

    __slots__ = ("_gone", "_slot", "name")

    def __init__(self, name: int) -> None:
        self.name = name
        self._slot = -1
        self._gone = False

    def __repr__(self) -> str:
        return f"D{self.name}"


def fakes(polled: Polled, count: int, first: int = 0) -> list[Any]:
    """``count`` new descriptors, taken in."""
    made = [FakeDescriptor(first + i) for i in range(count)]
    for descriptor in made:
        polled.add(descriptor)  # type: ignore[arg-type]
    return made


def one_round(
    polled: Polled, poll: Callable[[list[Any]], object] = lambda batch: None
) -> list[Any]:
    """A round: what the poll function was given (a copy), after it ran."""
    batch = polled.begin_round()
    given = list(batch)
    polled.lend(poll, batch)
    polled.end_round()
    return given


# -- the list of a round ---------------------------------------------------------------


def test_a_round_gives_the_descriptors_in_order_of_arrival() -> None:
    polled = Polled()
    descriptors = fakes(polled, 5)

    assert one_round(polled) == descriptors
    assert len(polled) == 5


def test_done_descriptors_leave_the_next_round() -> None:
    polled = Polled()
    descriptors = fakes(polled, 6)
    for done in (descriptors[0], descriptors[3], descriptors[5]):
        polled.discard(done)  # type: ignore[arg-type]

    assert one_round(polled) == [descriptors[1], descriptors[2], descriptors[4]]
    assert len(polled) == 3


def test_descriptors_done_during_a_round_leave_the_next_one() -> None:
    polled = Polled()
    descriptors = fakes(polled, 10)

    def poll(batch: list[Any]) -> None:
        for descriptor in batch[:4]:
            polled.discard(descriptor)

    one_round(polled, poll)

    assert one_round(polled) == descriptors[4:]


def test_more_runs_than_max_runs_make_a_new_list_with_the_same_descriptors() -> None:
    polled = Polled()
    descriptors = fakes(polled, 4 * MAX_RUNS)
    for done in descriptors[::2]:  # 2 * MAX_RUNS runs of one
        polled.discard(done)  # type: ignore[arg-type]

    assert one_round(polled) == descriptors[1::2]


def test_the_list_of_a_round_is_not_changed_while_the_poll_function_holds_it() -> None:
    polled = Polled()
    descriptors = fakes(polled, 4)
    batch = polled.begin_round()

    polled.discard(descriptors[1])  # type: ignore[arg-type]
    fakes(polled, 2, first=4)  # arrivals

    assert batch == descriptors
    polled.end_round()


def test_a_descriptor_dropped_before_it_was_taken_in_is_ignored() -> None:
    polled = Polled()
    polled.discard(FakeDescriptor(0))  # type: ignore[arg-type]

    assert len(polled) == 0
    assert one_round(polled) == []


# -- a poll function that changes or keeps its list ------------------------------------

CHANGES: dict[str, Callable[[list[Any]], object]] = {
    "clear": lambda batch: batch.clear(),
    "del": lambda batch: batch.__delitem__(slice(0, 2)),
    "pop": lambda batch: batch.pop(),
    "remove": lambda batch: batch.remove(batch[0]),
    "sort": lambda batch: batch.sort(key=lambda d: -d.name),
    "reverse": lambda batch: batch.reverse(),
    "setitem": lambda batch: batch.__setitem__(0, batch[-1]),
    "append": lambda batch: batch.append(batch[0]),
    "extend": lambda batch: batch.extend(batch[:2]),
    "insert": lambda batch: batch.insert(0, batch[-1]),
    "+=": lambda batch: batch.__iadd__(batch[:1]),
    "*=": lambda batch: batch.__imul__(2),
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_list_the_poll_function_changes_does_not_change_the_next_round(
    change: Callable[[list[Any]], object],
) -> None:
    polled = Polled()
    descriptors = fakes(polled, 5)

    one_round(polled, change)

    assert one_round(polled) == descriptors


def test_a_list_the_poll_function_keeps_is_not_changed_by_later_rounds() -> None:
    polled = Polled()
    descriptors = fakes(polled, 5)
    kept: list[list[Any]] = []
    one_round(polled, kept.append)

    polled.discard(descriptors[0])  # type: ignore[arg-type]
    fakes(polled, 1, first=5)
    one_round(polled)

    assert kept[0] == descriptors


def test_a_round_after_a_kept_list_gives_every_descriptor_polled() -> None:
    polled = Polled()
    descriptors = fakes(polled, 3)
    kept: list[list[Any]] = []
    one_round(polled, kept.append)
    polled.discard(descriptors[1])  # type: ignore[arg-type]

    assert one_round(polled) == [descriptors[0], descriptors[2]]


class PolledMachine(RuleBasedStateMachine):
    """``Polled`` against a model (a dict in order of arrival), through arrivals,
    futures done between and during rounds, and poll functions that change or keep
    their list."""

    def __init__(self) -> None:
        super().__init__()
        self.polled = Polled()
        self.model: dict[int, Any] = {}
        self.made = 0
        self.kept: list[tuple[list[Any], list[Any]]] = []  # (list, as it was given)

    @rule(count=st.integers(min_value=1, max_value=40))
    def arrive(self, count: int) -> None:
        for descriptor in fakes(self.polled, count, first=self.made):
            self.model[descriptor.name] = descriptor
        self.made += count

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def done_between_rounds(self, data: st.DataObject) -> None:
        names = data.draw(st.sets(st.sampled_from(sorted(self.model))))
        for name in names:
            self.polled.discard(self.model.pop(name))

    @rule(
        data=st.data(),
        change=st.sampled_from([None, *CHANGES]),
        keep=st.booleans(),
    )
    def poll_round(self, data: st.DataObject, change: str | None, keep: bool) -> None:
        batch = self.polled.begin_round()
        assert batch == list(self.model.values())
        done = (
            data.draw(st.sets(st.sampled_from(sorted(self.model)))) if batch else set()
        )
        arrivals = data.draw(st.integers(min_value=0, max_value=5))

        def poll(given: list[Any]) -> None:
            as_given = list(given)
            for name in done:  # resolved by the poll function, or meanwhile
                self.polled.discard(self.model.pop(name))
            if arrivals:
                self.arrive(arrivals)
            if change is not None and given:
                CHANGES[change](given)
            if keep:
                self.kept.append((given, list(given) if change else as_given))

        self.polled.lend(poll, batch)
        self.polled.end_round()

    @invariant()
    def counts_what_is_polled(self) -> None:
        assert len(self.polled) == len(self.model)
        assert list(self.polled) == list(self.model.values())

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


# -- through the executor --------------------------------------------------------------


def test_a_poll_function_that_keeps_and_changes_its_lists_still_gets_every_future() -> (
    None
):
    """The same as with a fresh list per round (more-executors): what a poll
    function keeps stays as it left it, and its changes lose no future."""
    kept: list[tuple[list[PollDescriptor[int]], list[PollDescriptor[int]]]] = []
    rounds: queue.Queue[list[int]] = queue.Queue()
    release = threading.Event()

    def poll(descriptors: list[PollDescriptor[int]]) -> float:
        rounds.put([d.result for d in descriptors])
        if release.is_set():
            for descriptor in descriptors:
                descriptor.yield_result()
        descriptors.reverse()
        descriptors.pop()
        kept.append((descriptors, list(descriptors)))
        return 0.001

    executor = Executors.thread_pool(2).with_poll(poll)
    futures = [executor.submit(int, i) for i in range(6)]
    while sorted(rounds.get(timeout=TIMEOUT)) != list(range(6)):
        pass
    assert sorted(rounds.get(timeout=TIMEOUT)) == list(range(6))  # none lost
    release.set()

    assert [f.result(TIMEOUT) for f in futures] == list(range(6))
    executor.shutdown()
    assert all(descriptors == as_left for descriptors, as_left in kept)


def test_resolved_futures_and_results_are_not_held_by_the_executor() -> None:
    """The list that lives from round to round drops the descriptors of futures
    that are done, and with them their futures and results, at the end of the
    round in which they are resolved."""

    class Result:
        pass

    def poll(descriptors: list[PollDescriptor[Result | int]]) -> float:
        for descriptor in descriptors:
            if isinstance(descriptor.result, Result):
                descriptor.yield_result()
        return math.inf  # the one left waits, with the list of the last round

    executor = Executors.thread_pool(2).with_poll(poll)
    kept_pending = executor.submit(int, 1)
    results = [Result() for _ in range(3)]
    futures = [executor.submit(lambda r=r: r) for r in results]
    refs = [weakref.ref(r) for r in results]
    for future in futures:
        future.result(TIMEOUT)
    del futures, results, future
    gc.collect()

    assert [ref() for ref in refs] == [None, None, None]
    assert not kept_pending.done()
    executor.shutdown(wait=False, cancel_futures=True)
    executor.shutdown()
