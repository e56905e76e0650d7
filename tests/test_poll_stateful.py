"""A state machine drives a PollExecutor, alone and inside a retry/timeout chain,
through random steps and compares every future with a simple model after each one.

The delegate is a :class:`~wrapper_doubles.ManualExecutor`: its futures stay queued
until a rule starts, completes or fails them, in the test's thread. The remote
system is a dict of outcomes that the poll function applies; the poll function
returns ``math.inf``, so the executor polls only when a future enters polling, on
``notify()`` and on shutdown. After each step the machine calls ``notify()`` and
waits for a poll that started after the step, then for the futures the model says
are done, then (in the chain) for the retries the model expects.

Each delegate call is one attempt; its result, the call's index, is the remote task
id. The model of one submitted future is its state and its attempts:

- ``queued``: the delegate's future of the current attempt is pending;
- ``running``: it is running;
- ``polled``: it has succeeded; the poll function sees the future;
- ``retrying`` (chain only, never seen between steps): a retry is on its way;
- ``result``, ``error``, ``cancelled``: done, with the expected value or exception.

What ``cancel()`` must do (docs/poll.rst, Cancelling, and the PollExecutor
docstring): a queued future is cancelled on the delegate; a running one is refused
without calling the cancel function; a polled one is up to the cancel function
(truthy: cancelled; falsy, or raising, logged at ERROR: refused); without a cancel
function it is cancelled locally (nothing remote to cancel).
``shutdown(cancel_futures=True)`` cancels running ones as they enter polling. In
the chain a ``cancel()`` also stops further retries, whether or not it succeeds.

Remote tasks end, and the poll function is told to raise, only while futures are
polled, so the poll that follows the step applies them: each step has one outcome.
At the end every delegate call and remote task is made to finish; every future must
then be done, and ``shutdown(wait=True)`` must return and end the poll thread.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
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
    run_state_machine_as_test,
)
from wrapper_doubles import TIMEOUT, ManualExecutor, invalid_state_errors

from _fluent_executors.scheduler import call_later
from fluent_executors import ExceptionRetryPolicy, PollDescriptor, PollExecutor

QUEUED = "queued"
RUNNING = "running"
POLLED = "polled"
RETRYING = "retrying"
RESULT = "result"
ERROR = "error"
CANCELLED = "cancelled"
DONE = (RESULT, ERROR, CANCELLED)

MAX_ATTEMPTS = 2  # of the retry policy in the chain

MACHINE_SETTINGS = settings(
    max_examples=75,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

_names = itertools.count()


class Retryable(Exception):
    """An attempt's error that the chain's retry policy retries."""


class Fatal(Exception):
    """An attempt's error that the chain's retry policy does not retry."""


class CancelFnError(Exception):
    """What the cancel function raises when told to."""


def remote_task(number: int) -> None:
    """What is submitted; the ManualExecutor never runs it."""


class SignallingDelegate(ManualExecutor):
    """A ManualExecutor that lets the test wait for a number of submits (the chain's
    retries are submitted from the scheduler thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.submitted = threading.Condition()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        future = super().submit(fn, *args, **kwargs)
        with self.submitted:
            self.submitted.notify_all()
        return future

    def wait_for_calls(self, count: int) -> bool:
        with self.submitted:
            return self.submitted.wait_for(lambda: len(self.calls) >= count, TIMEOUT)


class Remote:
    """The poll function: resolves each descriptor whose task has an outcome, or
    raises once when told to; counts the polls that started and returned."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._outcomes: dict[int, tuple[str, Any]] = {}
        self._raise_next: BaseException | None = None
        self._started = 0
        self._returned = 0

    def end(self, task: int, kind: str, value: Any) -> None:
        with self._cond:
            self._outcomes[task] = (kind, value)

    def raise_next(self, error: BaseException) -> None:
        with self._cond:
            self._raise_next = error

    def __call__(self, descriptors: list[PollDescriptor[Any]]) -> float:
        with self._cond:
            self._started += 1
            number = self._started
            error, self._raise_next = self._raise_next, None
            outcomes = dict(self._outcomes)
        try:
            if error is not None:
                raise error
            for descriptor in descriptors:
                kind, value = outcomes.get(descriptor.result, ("pending", None))
                if kind == "finish":
                    descriptor.yield_result()
                elif kind == "finish_with":
                    descriptor.yield_result(value)
                elif kind == "fail":
                    descriptor.yield_exception(value)
            return math.inf
        finally:
            with self._cond:
                self._returned = number
                self._cond.notify_all()

    def poll_now(self, executor: PollExecutor) -> bool:
        """Call ``notify()``; wait until a poll that started after it has returned."""
        with self._cond:
            started = self._started
        executor.notify()
        with self._cond:
            return self._cond.wait_for(lambda: self._returned > started, TIMEOUT)


class Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass
class Task:
    """The model of one submitted future."""

    number: int
    future: Future[Any] = field(repr=False)
    attempts: list[int]  # the delegate call of each attempt, oldest first
    state: str = QUEUED
    value: Any = None  # the expected result, or the expected exception
    stopped: bool = False  # chain: cancel() was called, so no further attempt
    delegate_cancelled: bool = False  # cancelled while queued on the delegate

    @property
    def call(self) -> int:
        return self.attempts[-1]


class PollMachine(RuleBasedStateMachine):
    CHAIN = False  # True: the poll executor inside .with_timeout(600).with_retry()
    with_cancel_fn = True

    def __init__(self) -> None:
        super().__init__()
        self.delegate = SignallingDelegate()
        self.remote = Remote()
        self.name = f"stateful-{next(_names)}"
        self.recorder = Recorder()
        self.logger = logging.getLogger("test_poll_stateful")  # the executors' logger
        self.logger.propagate = False
        self.logger.setLevel(logging.DEBUG)
        self.logged_to = [
            self.logger,
            logging.getLogger("concurrent.futures"),  # errors of done callbacks
            logging.getLogger("fluent_executors"),  # the scheduler's and the rest
        ]
        for logger in self.logged_to:
            logger.addHandler(self.recorder)
        self.tasks: list[Task] = []
        self.expected_calls = 0  # delegate calls: submits and retries
        self.cancel_mode = "accept"
        self.cancel_calls: list[Any] = []  # what the cancel function was called with
        self.expected_cancel_calls: list[int] = []
        self.expected_cancel_errors = 0
        self.expected_poll_errors = 0
        self.shut_down = False
        self.cancel_all = False  # alone: shutdown(cancel_futures=True) was called
        self.poll_needed = False

    # -- the executor under test ------------------------------------------------------

    @initialize()
    def build(self) -> None:
        self.poll_executor = PollExecutor(
            self.delegate,
            self.remote,
            cancel_fn=self.cancel_fn if self.with_cancel_fn else None,
            default_interval=3600.0,
            logger=self.logger,
            name=self.name,
        )
        self.executor: Any = self.poll_executor
        if self.CHAIN:
            policy = ExceptionRetryPolicy(
                max_attempts=MAX_ATTEMPTS, sleep=0.0, exception_base=Retryable
            )
            self.executor = self.poll_executor.with_timeout(
                600.0, logger=self.logger
            ).with_retry(policy, logger=self.logger)

    def cancel_fn(self, result: Any) -> object:
        self.cancel_calls.append(result)
        if self.cancel_mode == "raise":
            raise CancelFnError(f"cannot cancel remote task {result}")
        return "cancelled" if self.cancel_mode == "accept" else 0

    # -- queries ----------------------------------------------------------------------

    def _in(self, *states: str) -> list[Task]:
        return [task for task in self.tasks if task.state in states]

    def _delegate_future(self, task: Task) -> Future[Any]:
        return self.delegate.futures[task.call]

    # -- rules ------------------------------------------------------------------------

    @rule()
    def submit(self) -> None:
        number = len(self.tasks)
        if self.shut_down:
            with pytest.raises(RuntimeError):
                self.executor.submit(remote_task, number)
            return
        future = self.executor.submit(remote_task, number)
        assert len(self.delegate.calls) == self.expected_calls + 1
        assert self.delegate.arguments[-1] == (number,)
        self.tasks.append(Task(number, future, [self.expected_calls]))
        self.expected_calls += 1

    @precondition(lambda self: self._in(QUEUED))
    @rule(data=st.data())
    def delegate_starts(self, data: st.DataObject) -> None:
        task = data.draw(st.sampled_from(self._in(QUEUED)), label="task")
        assert self._delegate_future(task).set_running_or_notify_cancel()
        task.state = RUNNING

    @precondition(lambda self: self._in(QUEUED, RUNNING))
    @rule(data=st.data())
    def delegate_succeeds(self, data: st.DataObject) -> None:
        task = data.draw(st.sampled_from(self._in(QUEUED, RUNNING)), label="task")
        self._delegate_succeeds(task)

    def _delegate_succeeds(self, task: Task) -> None:
        self._delegate_future(task).set_result(task.call)
        task.state = POLLED
        if self.cancel_all:  # shutdown cancels it as it enters polling
            self._cancel_polled(task)

    @precondition(lambda self: self._in(QUEUED, RUNNING))
    @rule(data=st.data(), retryable=st.booleans())
    def delegate_fails(self, data: st.DataObject, retryable: bool) -> None:
        task = data.draw(st.sampled_from(self._in(QUEUED, RUNNING)), label="task")
        error = (Retryable if retryable else Fatal)(f"delegate call {task.call}")
        self._delegate_future(task).set_exception(error)
        self._attempt_failed(task, error)

    @precondition(lambda self: self._in(POLLED))
    @rule(
        data=st.data(),
        kind=st.sampled_from(["finish", "finish_with", "fail"]),
        value=st.integers(),
        retryable=st.booleans(),
    )
    def remote_task_ends(
        self, data: st.DataObject, kind: str, value: int, retryable: bool
    ) -> None:
        task = data.draw(st.sampled_from(self._in(POLLED)), label="task")
        if kind == "fail":
            value = (Retryable if retryable else Fatal)(f"remote task {task.call}")
        self._remote_task_ends(task, kind, value)

    def _remote_task_ends(self, task: Task, kind: str, value: Any) -> None:
        self.remote.end(task.call, kind, value)
        self.poll_needed = True
        if kind == "fail":
            self._attempt_failed(task, value)
        else:
            task.state = RESULT
            task.value = task.call if kind == "finish" else value

    @precondition(lambda self: self._in(POLLED))
    @rule(retryable=st.booleans())
    def poll_function_raises(self, retryable: bool) -> None:
        error = (Retryable if retryable else Fatal)("the poll request failed")
        self.remote.raise_next(error)
        self.poll_needed = True
        self.expected_poll_errors += 1
        for task in self._in(POLLED):
            self._attempt_failed(task, error)

    @precondition(lambda self: self.tasks)
    @rule(data=st.data(), mode=st.sampled_from(["accept", "refuse", "raise"]))
    def cancel(self, data: st.DataObject, mode: str) -> None:
        self._cancel_one(data.draw(st.sampled_from(self.tasks), label="task"), mode)

    @precondition(lambda self: self._in(POLLED))
    @rule(data=st.data(), mode=st.sampled_from(["accept", "refuse", "raise"]))
    def cancel_polled(self, data: st.DataObject, mode: str) -> None:
        self._cancel_one(
            data.draw(st.sampled_from(self._in(POLLED)), label="task"), mode
        )

    def _cancel_one(self, task: Task, mode: str) -> None:
        self.cancel_mode = mode
        expected = self._cancel(task)
        assert task.future.cancel() is expected, f"cancel() of {task}"

    @rule()
    def notify(self) -> None:
        self.poll_executor.notify()

    @precondition(lambda self: len(self.tasks) >= 3)  # else little happens after it
    @rule(
        cancel_futures=st.booleans(),
        mode=st.sampled_from(["accept", "refuse", "raise"]),
    )
    def shutdown(self, cancel_futures: bool, mode: str) -> None:
        self.cancel_mode = mode
        self.shut_down = True
        if cancel_futures:
            if not self.CHAIN:  # the chain's retry defers the poll's shutdown
                self.cancel_all = True
            for task in self.tasks:
                self._cancel(task)
        self.executor.shutdown(wait=False, cancel_futures=cancel_futures)

    # -- the model --------------------------------------------------------------------

    def _attempt_failed(self, task: Task, error: BaseException) -> None:
        if (
            self.CHAIN
            and isinstance(error, Retryable)
            and len(task.attempts) < MAX_ATTEMPTS
            and not task.stopped
        ):
            task.state = RETRYING
            self.expected_calls += 1
        else:
            task.state, task.value = ERROR, error

    def _cancel(self, task: Task) -> bool:
        """Update the model for ``task.future.cancel()``; return what it returns."""
        if task.state in DONE:
            return task.state == CANCELLED
        task.stopped = True
        if task.state == QUEUED:
            task.state = CANCELLED
            task.delegate_cancelled = True
            return True
        if task.state == RUNNING:
            return False
        return self._cancel_polled(task)

    def _cancel_polled(self, task: Task) -> bool:
        if self.with_cancel_fn:
            self.expected_cancel_calls.append(task.call)
            self.expected_cancel_errors += self.cancel_mode == "raise"
            agreed = self.cancel_mode == "accept"
        else:  # nothing remote to cancel: cancelled locally (docs/poll.rst)
            agreed = True
        if agreed:
            task.state = CANCELLED
        return agreed

    # -- after every step -------------------------------------------------------------

    def _settle(self) -> None:
        """Wait until the executor has done what the last step calls for."""
        if self.poll_needed or self._in(POLLED):
            assert self.remote.poll_now(self.poll_executor), (
                f"no poll within {TIMEOUT} s after notify() with {self._in(POLLED)}"
            )
        self.poll_needed = False
        done = [task.future for task in self._in(*DONE)]
        assert wait(done, timeout=TIMEOUT).not_done == set(), "futures not done"
        if self.CHAIN:
            assert self.delegate.wait_for_calls(self.expected_calls), "no retry"
            flushed = threading.Event()
            call_later(0.0, flushed.set)  # runs after the retries scheduled so far
            assert flushed.wait(TIMEOUT)
            for task in self._in(RETRYING):
                task.attempts.append(
                    next(
                        call
                        for call, args in enumerate(self.delegate.arguments)
                        if args == (task.number,) and call > task.call
                    )
                )
                task.state = QUEUED
        assert len(self.delegate.calls) == self.expected_calls

    def _check(self, task: Task) -> None:
        future, where = task.future, f"the future of {task}"
        if task.state in (QUEUED, RUNNING, POLLED):
            assert not future.done(), where
            assert future.running() is (task.state == RUNNING), where
        elif task.state == RESULT:
            assert not future.cancelled(), where
            assert future.exception(timeout=0) is None, where
            assert future.result(timeout=0) == task.value, where
        elif task.state == ERROR:
            assert not future.cancelled(), where
            assert future.exception(timeout=0) is task.value, where
        else:
            assert future.cancelled(), where
        delegate_future = self._delegate_future(task)
        if task.state == QUEUED:
            assert not delegate_future.running(), where
            assert not delegate_future.done(), where
        if task.delegate_cancelled:
            assert delegate_future.cancelled(), where

    @invariant()
    def futures_match_the_model(self) -> None:
        if not hasattr(self, "executor"):
            return
        self._settle()
        for task in self.tasks:
            self._check(task)
        assert self.cancel_calls == self.expected_cancel_calls
        records = self.recorder.records
        assert invalid_state_errors(records) == []
        cancel_errors = [
            r
            for r in records
            if r.levelno == logging.ERROR
            and r.exc_info
            and r.exc_info[0] is CancelFnError
        ]
        assert len(cancel_errors) == self.expected_cancel_errors
        other_errors = [
            r.getMessage()
            for r in records
            if r.levelno >= logging.ERROR and r not in cancel_errors
        ]
        assert other_errors == []
        poll_errors = [
            r
            for r in records
            if r.levelno == logging.WARNING
            and r.exc_info
            and r.exc_info[0] in (Retryable, Fatal)
        ]
        assert len(poll_errors) == self.expected_poll_errors

    # -- the end ----------------------------------------------------------------------

    def teardown(self) -> None:
        try:
            if hasattr(self, "executor"):
                self._end_everything()
        finally:
            for logger in self.logged_to:
                logger.removeHandler(self.recorder)

    def _end_everything(self) -> None:
        """Let every delegate call and remote task finish; then every future must be
        done, and shutdown(wait=True) must return and end the poll thread."""
        self.cancel_mode = "accept"
        for _ in range(MAX_ATTEMPTS + 1):  # one step at a time, as the rules go
            for task in self._in(QUEUED, RUNNING):
                self._delegate_succeeds(task)
                self.futures_match_the_model()
            for task in self._in(POLLED):
                self._remote_task_ends(task, "finish", None)
                self.futures_match_the_model()
        assert [task for task in self.tasks if task.state not in DONE] == []
        ended = threading.Event()

        def shut_down() -> None:
            self.executor.shutdown(wait=True)
            ended.set()

        threading.Thread(target=shut_down, daemon=True).start()
        assert ended.wait(TIMEOUT), "shutdown(wait=True) did not return"
        assert self.delegate.shutdowns != []
        poll_threads = [
            thread
            for thread in threading.enumerate()
            if thread.name == f"fluent-executors-poll-{self.name}"
        ]
        for thread in poll_threads:
            thread.join(TIMEOUT)
        assert [t for t in poll_threads if t.is_alive()] == []


@pytest.mark.parametrize(
    "with_cancel_fn", [True, False], ids=["cancel_fn", "no_cancel_fn"]
)
@pytest.mark.parametrize(
    "chain", [False, True], ids=["alone", "in_retry_timeout_chain"]
)
def test_poll_executor_futures_follow_the_model(chain, with_cancel_fn):
    machine = type(
        "PollMachine",
        (PollMachine,),
        {"CHAIN": chain, "with_cancel_fn": with_cancel_fn},
    )
    run_state_machine_as_test(machine, settings=MACHINE_SETTINGS)
