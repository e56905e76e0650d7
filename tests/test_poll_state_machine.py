"""A model-based test of the poll executor for real services (docs/poll.rst, "Real
services"): hypothesis drives submits, remote finishes, per-task defers, failing
poll calls, cancels, time and shutdowns in any order, on a virtual clock, against a
model of what must happen.

Checked after every step: the poll function is never called with nothing, nor with
more than ``max_batch`` descriptors, nor with a descriptor deferred until later; each
descriptor's ``polls`` counts the calls it was passed to, this one included; the
poll retry policy sees the consecutive failures counted from 1; a future resolves
only as its task did remotely, fails only when the policy gives up on its poll,
and is cancelled only when ``cancel()`` said so; every task that is due is polled
within one poll interval. At the end every future ends (none is lost) and the poll
thread too.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from fluent_executors import (
    ExceptionRetryPolicy,
    Executors,
    PollDescriptor,
    PollExecutor,
)
from fluent_executors.testing import VirtualClock, virtual_time

INTERVAL = 1.0  # seconds between polls, as the poll function returns
RETRY_SLEEP = 0.5  # seconds before the poll after a failed one (no backoff growth)
MAX_ATTEMPTS = 3  # failed poll calls in a row before their futures fail


class Transient(Exception):
    """A poll error that the poll retry policy retries."""


class RecordingPolicy(ExceptionRetryPolicy):
    """Records the attempt numbers it is asked about."""

    def __init__(self) -> None:
        super().__init__(
            max_attempts=MAX_ATTEMPTS,
            sleep=RETRY_SLEEP,
            exponent=1.0,
            exception_base=Transient,
        )
        self.attempts: list[int] = []

    def should_retry(self, attempt: int, future: Future[Any]) -> bool:
        self.attempts.append(attempt)
        return super().should_retry(attempt, future)


class PollExecutorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.clock_context = virtual_time()
        self.clock: VirtualClock = self.clock_context.__enter__()
        self.policy = RecordingPolicy()
        self.futures: dict[int, Future[int]] = {}
        self.finished: set[int] = set()  # remote tasks that have ended
        self.cancellable: set[int] = set()  # the cancel function says yes for these
        self.cancelled_ok: set[int] = set()  # cancel() returned True
        self.defer_next: dict[int, float] = {}  # defer by this much at next sight
        self.not_before: dict[int, float] = {}  # deferred until then
        self.last_polled: dict[int, float] = {}
        self.polls: dict[int, int] = {}  # calls each task was passed to
        self.errors = 0  # poll calls still to fail
        self.failures_in_a_row = 0
        self.given_up: set[int] = set()  # tasks of a poll the policy gave up on
        self.violations: list[str] = []
        self.calls = 0
        self.next_id = 0
        self.closed = False
        self.executor: PollExecutor[Any]

    @initialize(max_batch=st.one_of(st.none(), st.integers(1, 4)))
    def start(self, max_batch: int | None) -> None:
        self.max_batch = max_batch
        self.executor = PollExecutor(
            Executors.sync(),
            self.poll,
            self.cancel_fn,
            poll_retry_policy=self.policy,
            max_batch=max_batch,
        )

    # -- the remote service ----------------------------------------------------------

    def poll(self, descriptors: list[PollDescriptor[int]]) -> float:
        now = self.clock.monotonic()
        with self.lock:
            self.calls += 1
            if not descriptors:
                self.violations.append("called with no descriptor")
            if self.max_batch is not None and len(descriptors) > self.max_batch:
                self.violations.append(f"{len(descriptors)} > {self.max_batch}")
            for descriptor in descriptors:
                task = descriptor.result
                if now < self.not_before.get(task, now):
                    self.violations.append(f"task {task} polled before its time")
                self.last_polled[task] = now
                self.polls[task] = self.polls.get(task, 0) + 1
                if descriptor.polls != self.polls[task]:
                    self.violations.append(
                        f"task {task}: polls {descriptor.polls}, not {self.polls[task]}"
                    )
            if self.errors:
                self.errors -= 1
                self.failures_in_a_row += 1
                if self.failures_in_a_row >= MAX_ATTEMPTS:  # the policy gives up
                    self.failures_in_a_row = 0
                    self.given_up.update(d.result for d in descriptors)
                raise Transient("service unavailable")
            self.failures_in_a_row = 0
            for descriptor in descriptors:
                task = descriptor.result
                if task in self.defer_next:
                    delay = self.defer_next.pop(task)
                    self.not_before[task] = now + delay
                    descriptor.defer(delay)
                elif task in self.finished:
                    descriptor.yield_result(task * 10)
        return INTERVAL

    def cancel_fn(self, task: int) -> bool:
        with self.lock:
            return task in self.cancellable

    def settle(self) -> None:
        self.clock.advance(0)  # returns once the poll thread is idle

    # -- rules -------------------------------------------------------------------------

    @precondition(lambda self: not self.closed)
    @rule(count=st.integers(1, 6))
    def submit(self, count: int) -> None:
        for _ in range(count):
            task = self.next_id
            self.next_id += 1
            self.futures[task] = self.executor.submit(int, task)
        self.settle()

    @precondition(lambda self: self.closed)
    @rule()
    def submit_after_shutdown_is_refused(self) -> None:
        with pytest.raises(RuntimeError):
            self.executor.submit(int)

    @precondition(lambda self: bool(self.futures))
    @rule(data=st.data())
    def finish_remotely(self, data: st.DataObject) -> None:
        task = data.draw(st.sampled_from(sorted(self.futures)))
        with self.lock:
            self.finished.add(task)

    @precondition(lambda self: bool(self.futures))
    @rule(data=st.data(), delay=st.sampled_from([0.3, 1.0, 2.5]))
    def defer_at_next_poll(self, data: st.DataObject, delay: float) -> None:
        task = data.draw(st.sampled_from(sorted(self.futures)))
        with self.lock:
            self.defer_next[task] = delay

    @rule(count=st.integers(1, MAX_ATTEMPTS))
    def fail_next_polls(self, count: int) -> None:
        with self.lock:
            self.errors += count

    @precondition(lambda self: bool(self.futures))
    @rule(data=st.data(), remote_says_yes=st.booleans())
    def cancel(self, data: st.DataObject, remote_says_yes: bool) -> None:
        task = data.draw(st.sampled_from(sorted(self.futures)))
        future = self.futures[task]
        with self.lock:
            if remote_says_yes:
                self.cancellable.add(task)
            else:
                self.cancellable.discard(task)
        was_done = future.done()
        if future.cancel() and not was_done:
            self.cancelled_ok.add(task)
        self.settle()

    @precondition(lambda self: not self.closed)
    @rule(cancel_futures=st.booleans())
    def shutdown_without_waiting(self, cancel_futures: bool) -> None:
        with self.lock:
            pending = {task for task, f in self.futures.items() if not f.done()}
            yes = pending & self.cancellable
        self.executor.shutdown(wait=False, cancel_futures=cancel_futures)
        self.closed = True
        if cancel_futures:
            self.cancelled_ok |= yes
        self.settle()

    # Time passes in three rules of their own, so that hypothesis picks it often.
    @rule()
    def advance_an_interval(self) -> None:
        self.advance(INTERVAL)

    @rule()
    def advance_a_retry_sleep(self) -> None:
        self.advance(RETRY_SLEEP)

    @rule(seconds=st.sampled_from([0.1, 0.5, 1.0, 2.0, 3.0]))
    def advance(self, seconds: float) -> None:
        start = self.clock.monotonic()
        with self.lock:
            errors_before, self.last_polled = self.errors, {}
            due = {
                task
                for task, future in self.futures.items()
                if not future.done()
                and self.not_before.get(task, start) <= start
                and task not in self.defer_next
            }
        self.clock.advance(seconds)
        with self.lock:
            if seconds >= INTERVAL and errors_before == 0 and self.errors == 0:
                # A round came within one interval and polled every due task.
                missed = {
                    task
                    for task in due
                    if task not in self.last_polled and not self.futures[task].done()
                }
                if missed:
                    self.violations.append(f"due tasks not polled: {missed}")

    # -- what must hold ----------------------------------------------------------------

    @invariant()
    def nothing_went_wrong_in_the_poll_function(self) -> None:
        assert self.violations == []

    @invariant()
    def the_policy_counts_failures_in_a_row_from_one(self) -> None:
        previous = 0
        for attempt in self.policy.attempts:
            assert attempt in (1, previous + 1)
            assert attempt <= MAX_ATTEMPTS
            previous = attempt

    @invariant()
    def futures_end_only_as_their_tasks_did(self) -> None:
        for task, future in self.futures.items():
            if not future.done():
                continue
            if future.cancelled():
                assert task in self.cancelled_ok, task
            elif future.exception() is not None:
                assert isinstance(future.exception(), Transient), task
                assert task in self.given_up, task
            else:
                assert future.result() == task * 10
                assert task in self.finished, task

    def teardown(self) -> None:
        try:
            if hasattr(self, "executor"):
                with self.lock:
                    self.errors = 0
                    self.defer_next.clear()
                    self.finished.update(self.futures)
                for _ in range(10):  # deferrals end, the next rounds resolve all
                    if all(future.done() for future in self.futures.values()):
                        break
                    self.clock.advance(INTERVAL)
                self.executor.shutdown(wait=True)
                assert all(future.done() for future in self.futures.values())
                thread = self.executor._poller._thread
                assert thread is None or not thread.is_alive()
        finally:
            self.clock_context.__exit__(None, None, None)


PollExecutorMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_poll_executor_for_real_services = PollExecutorMachine.TestCase
