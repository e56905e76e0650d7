"""The poll core (``_fluent_executors.poll.core.PollCore``), driven directly: events
in, actions out, the time given by the test. No thread, no event loop, no sleep.

What the drivers do around it (the poll thread of ``PollExecutor``) is tested
through the executor in the other ``test_poll*`` files; the poll page
(docs/poll.rst) describes what the decisions mean to a user.
"""

from __future__ import annotations

import math
from concurrent.futures import Future
from typing import Any

import pytest

from _fluent_executors.poll.core import PollCore, PollEntry, PollFailure
from fluent_executors import ExceptionRetryPolicy, RetryPolicy

T0 = 1000.0  # any time: the core reads no clock


class Task:
    """What the core asks of the future of an entry: is it done; let go of the
    entry."""

    def __init__(self) -> None:
        self.finished = False
        self.let_go = False

    def done(self) -> bool:
        return self.finished

    def leave_polling(self) -> None:
        self.let_go = True


Entry = PollEntry[Task]


class Driver:
    """A driver reduced to its decisions: a core and the entries it made; each
    round answers every batch with ``returned``."""

    def __init__(self, default_interval: float = 5.0, **options: Any) -> None:
        self.made: list[Entry] = []
        self.core: PollCore[Entry] = PollCore(
            default_interval, recover=lambda: self.made, **options
        )

    def arrive(self, count: int, now: float) -> list[Entry]:
        """``count`` futures entering polling at ``now``, taken in."""
        new = [PollEntry(Task(), None) for _ in range(count)]
        for entry in new:
            self.core.arrive(entry, now)
        self.core.admit()
        self.made += new
        return new

    def round(self, now: float, returned: object = 60.0) -> list[list[Entry]]:
        """One round at ``now`` (it must be due): its batches."""
        core = self.core
        assert core.begin_round(now)
        batches = []
        while (batch := core.next_batch(now)) is not None:
            batches.append(list(batch))
            core.lending(batch)
            core.returned(batch, returned)
        core.end_round(now)
        return batches

    def fail(self, now: float, error: BaseException) -> list[PollFailure]:
        """One round at ``now`` whose every call raises ``error``."""
        core = self.core
        assert core.begin_round(now)
        failures = []
        while (batch := core.next_batch(now)) is not None:
            core.lending(batch)
            failures.append(core.raised(batch, error, now))
        core.end_round(now)
        return failures

    def finish(self, entry: Entry) -> bool:
        """The future of ``entry`` is done (as its done-callback tells the core)."""
        entry._future.finished = True
        return self.core.forget(entry)


# -- which descriptors are due, and when ------------------------------------------


def test_a_first_arrival_is_taken_in_and_polled_at_once() -> None:
    driver = Driver()
    entry = PollEntry(Task(), None)
    core = driver.core

    assert core.arrive(entry, T0)  # nothing else polled: take it in now
    assert not core.due(T0)  # not taken in yet
    assert core.admit()  # wake: a round is due
    assert core.due(T0)
    assert driver.round(T0) == [[entry]]


def test_an_arrival_while_others_wait_for_a_deadline_joins_the_next_round() -> None:
    driver = Driver()
    first = driver.arrive(1, T0)
    driver.round(T0, returned=60.0)
    core = driver.core
    second = PollEntry(Task(), None)

    assert not core.arrive(second, T0 + 1)  # others polled, deadline set: no lock
    core.take_in()  # as the driver does between rounds
    assert not core.due(T0 + 1)
    assert core.wait_timeout(T0 + 1) == 59.0
    assert core.due(T0 + 60)
    assert driver.round(T0 + 60) == [[*first, second]]


def test_with_no_deadline_an_arrival_is_polled_at_once() -> None:
    driver = Driver()
    first = driver.arrive(1, T0)
    driver.round(T0, returned=math.inf)  # "not until notified or a new future"
    core = driver.core
    assert core.wait_timeout(T0) is None
    assert not core.due(T0 + 3600)
    second = PollEntry(Task(), None)

    assert core.arrive(second, T0 + 3600)
    assert core.admit()
    assert driver.round(T0 + 3600) == [[*first, second]]


def test_notify_makes_a_round_due_at_once() -> None:
    driver = Driver()
    entries = driver.arrive(2, T0)
    driver.round(T0, returned=60.0)
    core = driver.core
    assert not core.due(T0 + 1)

    core.notify()

    assert core.due(T0 + 1)
    assert driver.round(T0 + 1) == [entries]
    assert not core.due(T0 + 1)  # the round took the notify


def test_nothing_polled_nothing_due_even_when_notified() -> None:
    core = Driver().core
    core.notify()

    assert not core.due(T0)
    assert not core.begin_round(T0)
    assert core.wait_timeout(T0) is None


def test_deferred_descriptors_are_skipped_and_set_the_next_wake_up() -> None:
    driver = Driver()
    first, second = driver.arrive(2, T0)
    driver.round(T0)
    core = driver.core
    core.defer(first, T0 + 10)
    core.notify()  # does not override a defer

    assert driver.round(T0 + 1, returned=60.0) == [[second]]
    assert core.wait_timeout(T0 + 1) == 9.0  # the deferred one's time, not 60
    assert core.due(T0 + 10)
    assert driver.round(T0 + 10, returned=60.0) == [[first, second]]


def test_a_round_with_every_descriptor_deferred_calls_nothing() -> None:
    driver = Driver()
    (entry,) = driver.arrive(1, T0)
    driver.round(T0)
    driver.core.defer(entry, math.inf)  # not again
    driver.core.notify()

    assert driver.round(T0 + 1) == []
    assert driver.core.wait_timeout(T0 + 1) is None


def test_an_arrival_after_a_round_that_called_nothing_is_polled_at_once() -> None:
    # The only descriptor is deferred to T0 + 11: the round at T0 + 10 (the
    # interval the last call asked for) calls nothing, and the next wake-up is the
    # deferred one's time. A future arriving then must not wait for it: it would
    # be polled a whole second later than the interval (the poll state machine's
    # "due tasks not polled" found it).
    driver = Driver()
    (deferred,) = driver.arrive(1, T0)
    driver.round(T0, returned=10.0)
    core = driver.core
    core.defer(deferred, T0 + 11.0)
    assert driver.round(T0 + 10.0) == []
    assert core.wait_timeout(T0 + 10.0) == 1.0

    (new,) = [PollEntry(Task(), None)]
    assert core.arrive(new, T0 + 10.5)  # take it in at once
    assert core.admit()  # and poll it

    assert core.due(T0 + 10.5)
    assert driver.round(T0 + 10.5) == [[new]]


def test_an_arrival_after_a_round_that_called_joins_the_next_round() -> None:
    driver = Driver()
    driver.arrive(1, T0)
    driver.round(T0, returned=10.0)

    assert not driver.core.arrive(PollEntry(Task(), None), T0 + 1.0)


def test_a_descriptor_deferred_during_a_call_sets_the_wake_up_of_its_round() -> None:
    driver = Driver()
    (entry,) = driver.arrive(1, T0)
    core = driver.core
    assert core.begin_round(T0)
    batch = core.next_batch(T0)
    assert batch == [entry]
    core.lending(batch)
    core.defer(entry, T0 + 3)  # by the poll function
    core.returned(batch, 60.0)
    assert core.next_batch(T0) is None
    core.end_round(T0 + 1)

    assert core.wait_timeout(T0 + 1) == 2.0


# -- batches --------------------------------------------------------------------------


def test_a_full_round_without_max_batch_passes_one_list_from_round_to_round() -> None:
    driver = Driver()
    entries = driver.arrive(3, T0)
    core = driver.core
    lists = []
    for n in range(2):
        core.notify()
        assert core.begin_round(T0 + n)
        batch = core.next_batch(T0 + n)
        assert batch == entries
        lists.append(id(batch))
        core.lending(batch)
        core.returned(batch, 60.0)
        assert core.next_batch(T0 + n) is None  # one call
        del batch  # the driver lets go of it before the round ends
        core.end_round(T0 + n)

    assert lists[0] == lists[1]  # no list made per round


def test_max_batch_splits_a_full_round_in_order_of_arrival() -> None:
    driver = Driver(max_batch=2)
    entries = driver.arrive(5, T0)

    assert driver.round(T0) == [entries[0:2], entries[2:4], entries[4:5]]


def test_max_batch_puts_those_longest_since_their_last_poll_first() -> None:
    driver = Driver(max_batch=2)
    entries = driver.arrive(5, T0)
    driver.round(T0)
    core = driver.core
    core.defer(entries[0], T0 + 100)  # rounds count per descriptor from now
    core.notify()
    assert driver.round(T0 + 1) == [entries[1:3], entries[3:5]]
    core.defer(entries[3], T0 + 100)
    core.notify()
    assert driver.round(T0 + 2) == [[entries[1], entries[2]], [entries[4]]]

    # At T0 + 100: entries[0] last polled at T0, entries[3] at T0 + 1, the
    # others at T0 + 2.
    assert core.due(T0 + 100)
    assert driver.round(T0 + 100) == [
        [entries[0], entries[3]],
        [entries[1], entries[2]],
        [entries[4]],
    ]


def test_a_batch_leaves_out_those_done_since_the_round_began() -> None:
    driver = Driver(max_batch=1)
    first, second = driver.arrive(2, T0)
    driver.round(T0)
    core = driver.core
    core.defer(first, T0)  # due: rounds count per descriptor now
    core.notify()
    assert core.begin_round(T0 + 1)
    assert core.next_batch(T0 + 1) == [first]
    driver.finish(second)  # meanwhile, by another thread

    assert core.next_batch(T0 + 1) is None
    core.end_round(T0 + 1)
    assert core.polls_of(second) == 1  # not counted for the call it missed


# -- what the poll function returned ----------------------------------------------


@pytest.mark.parametrize(
    ("returned", "number", "wait"),
    [
        (None, True, 7.0),
        (2, True, 2.0),
        (-3, True, 0.0),
        (math.inf, True, None),
        (True, False, 7.0),
        ("1", False, 7.0),
        (math.nan, False, 7.0),
    ],
)
def test_the_next_wake_up_follows_the_delay_returned(
    returned: object, number: bool, wait: float | None
) -> None:
    driver = Driver(default_interval=7.0)
    driver.arrive(1, T0)
    core = driver.core
    assert core.begin_round(T0)
    batch = core.next_batch(T0)
    assert batch is not None
    core.lending(batch)

    assert core.returned(batch, returned) is number  # False: the driver warns
    assert core.next_batch(T0) is None
    core.end_round(T0)
    assert core.wait_timeout(T0) == wait


def test_the_earliest_delay_of_a_rounds_calls_wins() -> None:
    driver = Driver(max_batch=1)
    driver.arrive(3, T0)
    core = driver.core
    assert core.begin_round(T0)
    for delay in (30.0, 10.0, 20.0):
        batch = core.next_batch(T0)
        assert batch is not None
        core.lending(batch)
        core.returned(batch, delay)
    assert core.next_batch(T0) is None
    core.end_round(T0 + 2)

    assert core.wait_timeout(T0 + 2) == 10.0  # from the end of the round


# -- failed calls and the poll retry policy -------------------------------------


def test_without_a_policy_a_failed_call_fails_its_futures() -> None:
    driver = Driver(default_interval=7.0)
    driver.arrive(2, T0)

    assert driver.fail(T0, ValueError("down")) == [PollFailure(None, 1, None)]
    assert driver.core.wait_timeout(T0) == 7.0


def test_a_policy_keeps_the_futures_pending_and_sets_the_next_poll() -> None:
    policy = ExceptionRetryPolicy(max_attempts=3, sleep=2.0, exponent=3.0)
    driver = Driver(default_interval=7.0, poll_retry_policy=policy)
    driver.arrive(1, T0)
    core = driver.core

    assert driver.fail(T0, ValueError("down")) == [PollFailure(2.0, 1, None)]
    assert core.wait_timeout(T0) == 2.0
    assert driver.fail(T0 + 2, ValueError("down")) == [PollFailure(6.0, 2, None)]
    # The third failure in a row: the policy gives up, the futures fail.
    assert driver.fail(T0 + 8, ValueError("down")) == [PollFailure(None, 3, None)]
    assert core.wait_timeout(T0 + 8) == 7.0
    # Counted from one again, as after a call that returns.
    assert driver.fail(T0 + 15, ValueError("down")) == [PollFailure(2.0, 1, None)]
    driver.round(T0 + 17)
    assert driver.fail(T0 + 77, ValueError("down")) == [PollFailure(2.0, 1, None)]


def test_a_policy_for_other_errors_lets_the_futures_fail() -> None:
    policy = ExceptionRetryPolicy(exception_base=OSError)
    driver = Driver(poll_retry_policy=policy)
    driver.arrive(1, T0)

    assert driver.fail(T0, ValueError("bug")) == [PollFailure(None, 1, None)]


class RaisingPolicy(RetryPolicy):
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def should_retry(self, attempt: int, future: Future[Any]) -> bool:
        raise self.error

    def sleep_time(self, attempt: int, future: Future[Any]) -> float:
        return 1.0


class BadDelayPolicy(RetryPolicy):
    def should_retry(self, attempt: int, future: Future[Any]) -> bool:
        return True

    def sleep_time(self, attempt: int, future: Future[Any]) -> float:
        return -1.0


@pytest.mark.parametrize("raised", [RuntimeError("policy bug"), KeyboardInterrupt()])
def test_a_policy_that_raises_is_contained_and_the_futures_fail(
    raised: BaseException,
) -> None:
    driver = Driver(poll_retry_policy=RaisingPolicy(raised))
    driver.arrive(1, T0)

    (failure,) = driver.fail(T0, ValueError("down"))

    assert failure.retry_in is None
    assert failure.policy_error is raised  # the driver logs it


def test_a_policy_giving_a_bad_delay_is_contained_and_the_futures_fail() -> None:
    driver = Driver(poll_retry_policy=BadDelayPolicy())
    driver.arrive(1, T0)

    (failure,) = driver.fail(T0, ValueError("down"))

    assert failure.retry_in is None
    assert isinstance(failure.policy_error, ValueError)


def test_the_policy_is_given_the_error_of_the_call() -> None:
    seen: list[tuple[int, BaseException | None]] = []

    class Recording(RetryPolicy):
        def should_retry(self, attempt: int, future: Future[Any]) -> bool:
            seen.append((attempt, future.exception()))
            return True

        def sleep_time(self, attempt: int, future: Future[Any]) -> float:
            return 1.0

    error = ValueError("down")
    driver = Driver(poll_retry_policy=Recording())
    driver.arrive(1, T0)
    driver.fail(T0, error)

    assert seen == [(1, error)]


# -- age, polls, counts ----------------------------------------------------------------


def test_age_is_from_the_arrival() -> None:
    driver = Driver()
    (entry,) = driver.arrive(1, T0)

    assert driver.core.age_of(entry, T0 + 12.5) == 12.5


def test_polls_count_full_rounds_then_stop_once_the_future_is_done() -> None:
    driver = Driver()
    (entry,) = driver.arrive(1, T0)
    core = driver.core
    assert core.polls_of(entry) == 0
    for n in range(3):
        core.notify()
        driver.round(T0 + n)
    assert core.polls_of(entry) == 3

    driver.finish(entry)
    core.notify()
    driver.arrive(1, T0 + 4)
    driver.round(T0 + 4)

    assert core.polls_of(entry) == 3


def test_polls_count_per_call_once_a_descriptor_was_deferred() -> None:
    driver = Driver()
    first, second = driver.arrive(2, T0)
    core = driver.core
    driver.round(T0)
    driver.round(T0 + 60)
    core.defer(first, T0 + 1000)
    core.notify()
    driver.round(T0 + 61)

    assert core.polls_of(first) == 2
    assert core.polls_of(second) == 3


def test_the_count_of_futures_polled() -> None:
    driver = Driver()
    core = driver.core
    entries = driver.arrive(3, T0)
    assert len(core) == 3
    driver.round(T0, returned=60.0)
    late = PollEntry(Task(), None)
    assert not core.arrive(late, T0 + 1)
    assert len(core) == 3  # not taken in yet

    assert not core.admit(if_idle=True)  # others polled on a deadline: it waits
    assert len(core) == 4
    assert driver.finish(entries[0])  # the first one done: tidy the list
    assert not driver.finish(entries[1])
    assert len(core) == 2
    assert not driver.core.forget(entries[1])  # twice: nothing
    assert len(core) == 2


def test_an_arrival_done_before_it_is_taken_in_is_let_go() -> None:
    driver = Driver()
    driver.arrive(1, T0)
    driver.round(T0)
    core = driver.core
    entry = PollEntry(Task(), None)
    core.arrive(entry, T0 + 1)
    entry._future.finished = True
    core.forget(entry)  # found nothing to drop: not taken in yet

    core.take_in()

    assert len(core) == 1
    assert entry._future.let_go


def test_a_list_changed_behind_its_methods_is_made_anew_and_told_once() -> None:
    driver = Driver()
    entries = driver.arrive(3, T0)
    core = driver.core
    assert core.begin_round(T0)
    batch = core.next_batch(T0)
    assert batch is not None
    core.lending(batch)
    list.reverse(batch)  # C code, behind the list's methods
    kept = batch  # and kept: the core looks at the list
    core.returned(batch, 60.0)
    del batch
    core.end_round(T0)
    assert not core.list_changed()

    driver.finish(entries[1])  # cutting it out finds the order changed
    core.take_in()

    assert core.list_changed()
    assert not core.list_changed()  # told once
    core.notify()
    assert driver.round(T0 + 1) == [[entries[0], entries[2]]]
    assert kept == entries[::-1]
