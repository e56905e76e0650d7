"""RetryExecutor and the retry policies."""

from __future__ import annotations

import logging
import math
import multiprocessing
import random
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import CancelledError, Executor, Future, wait
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scheduler_leftovers import pending_callbacks

from _fluent_executors.scheduler import THREAD_NAME, WORKER_THREAD_NAME
from fluent_executors import (
    ExceptionRetryPolicy,
    Executors,
    RetryExecutor,
    RetryPolicy,
    SyncExecutor,
    ThreadPoolExecutor,
)
from fluent_executors import retry as retry_module
from fluent_executors.testing import ManualExecutor, virtual_time


def example_retry(delegate: Executor, **kwargs: Any) -> RetryExecutor[Any]:
    """One way to build it, which the tests of every wrapper run
    (``wrapper_doubles.examples``)."""
    return Executors.with_retry(delegate, sleep=0.001, **kwargs)


class Flaky:
    """A callable that raises ``error`` for its first ``failures`` calls."""

    def __init__(
        self, failures: int, error: type[BaseException] = ValueError, result: Any = "ok"
    ) -> None:
        self.failures = failures
        self.error = error
        self.result = result
        self.calls = 0
        self.raised: list[BaseException] = []
        self._lock = threading.Lock()

    def __call__(self) -> Any:
        with self._lock:
            self.calls += 1
            if self.calls > self.failures:
                return self.result
            error = self.error(f"failure {self.calls}")
            self.raised.append(error)
        raise error


def after(gate: threading.Event, fn: Any) -> Any:
    """``fn()`` once ``gate`` is set: an attempt that is not done before ``submit``
    returns, so that its policy decides in the thread that ends it."""
    assert gate.wait(5)
    return fn()


class RecordingPolicy(RetryPolicy):
    """Retries up to ``retries`` times, recording what it is asked."""

    def __init__(self, retries: int) -> None:
        self.retries = retries
        self.seen: list[tuple[int, bool, str]] = []

    def should_retry(self, attempt: int, future: Future[Any]) -> bool:
        self.seen.append((attempt, future.done(), repr(future.exception())))
        return attempt <= self.retries

    def sleep_time(self, attempt: int, future: Future[Any]) -> float:
        return 0.001


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    executor = Executors.thread_pool(max_workers=2)
    yield executor
    executor.shutdown(wait=True)


def test_a_result_arrives_after_one_attempt(pool: ThreadPoolExecutor) -> None:
    flaky = Flaky(failures=0)

    future = RetryExecutor(pool, sleep=0.001).submit(flaky)

    assert future.result(timeout=5) == "ok"
    assert flaky.calls == 1


def test_a_failing_callable_is_retried_until_it_succeeds(
    pool: ThreadPoolExecutor,
) -> None:
    flaky = Flaky(failures=2)

    future = RetryExecutor(pool, sleep=0.001).submit(flaky)

    assert future.result(timeout=5) == "ok"
    assert flaky.calls == 3


def test_after_max_attempts_the_last_exception_arrives_unchanged(
    pool: ThreadPoolExecutor,
) -> None:
    flaky = Flaky(failures=10)

    future = RetryExecutor(pool, max_attempts=4, sleep=0.001).submit(flaky)

    assert future.exception(timeout=5) is flaky.raised[-1]
    assert flaky.calls == 4


def test_an_exception_outside_exception_base_is_not_retried(
    pool: ThreadPoolExecutor,
) -> None:
    flaky = Flaky(failures=10, error=KeyError)

    future = RetryExecutor(pool, exception_base=ValueError, sleep=0.001).submit(flaky)

    assert future.exception(timeout=5) is flaky.raised[0]
    assert flaky.calls == 1


@pytest.mark.parametrize("bases", [(KeyError, ValueError), [KeyError, ValueError]])
def test_exception_base_may_be_a_tuple_or_a_list(
    pool: ThreadPoolExecutor, bases: Any
) -> None:
    flaky = Flaky(failures=2)

    future = RetryExecutor(pool, exception_base=bases, sleep=0.001).submit(flaky)

    assert future.result(timeout=5) == "ok"


def test_the_policy_sees_attempts_counted_from_one_and_done_futures() -> None:
    policy = RecordingPolicy(retries=2)
    flaky = Flaky(failures=10)

    future = RetryExecutor(SyncExecutor(), policy).submit(flaky)

    assert future.exception(timeout=5) is flaky.raised[2]
    assert policy.seen == [(n, True, repr(flaky.raised[n - 1])) for n in (1, 2, 3)]


def test_the_base_policy_never_retries() -> None:
    flaky = Flaky(failures=1)

    future = RetryExecutor(SyncExecutor(), RetryPolicy()).submit(flaky)

    assert future.exception(timeout=5) is flaky.raised[0]


def test_submit_retry_uses_its_own_policy(pool: ThreadPoolExecutor) -> None:
    executor = RetryExecutor(pool, max_attempts=1)
    flaky = Flaky(failures=2)

    future = executor.submit_retry(ExceptionRetryPolicy(sleep=0.001), flaky)

    assert future.result(timeout=5) == "ok"


def test_the_first_attempt_is_submitted_from_the_callers_thread() -> None:
    threads: list[str] = []

    def where() -> None:
        threads.append(threading.current_thread().name)

    RetryExecutor(SyncExecutor(), sleep=0.001).submit(where).result(timeout=5)

    assert threads == [threading.current_thread().name]


def test_retries_are_submitted_from_a_worker_thread_of_the_scheduler() -> None:
    threads: list[str] = []

    def fail_once() -> None:
        threads.append(threading.current_thread().name)
        if len(threads) == 1:
            raise ValueError("first")

    RetryExecutor(SyncExecutor(), sleep=0.001).submit(fail_once).result(timeout=5)

    # Not from the scheduler thread itself: a submit may block.
    assert threads == [threading.current_thread().name, WORKER_THREAD_NAME]


def test_futures_waiting_for_a_retry_hold_no_thread(pool: ThreadPoolExecutor) -> None:
    waiting = threading.Semaphore(0)
    executor = RetryExecutor(
        pool, sleep=60.0, before_sleep=lambda *_: waiting.release()
    )
    before = set(threading.enumerate())
    go = threading.Event()

    futures = [executor.submit(after, go, Flaky(failures=1)) for _ in range(50)]
    go.set()

    for _ in futures:
        assert waiting.acquire(timeout=5)
    # The pool's two workers and the scheduler thread, not one thread per future.
    # Not the scheduler's workers (four at the most, for the whole process): a
    # timer that an earlier test left may come due now and start one.
    new = [
        thread.name
        for thread in set(threading.enumerate()) - before
        if thread.name != WORKER_THREAD_NAME
    ]
    assert len(new) <= 3, (new, pending_callbacks())
    for future in futures:
        assert future.cancel()


# -- the backoff ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempt", "expected"),
    [(1, 0.5), (2, 1.5), (3, 4.5), (4, 10.0), (50, 10.0), (10**6, 10.0)],
)
def test_sleep_time_is_sleep_times_exponent_to_the_attempts_before_capped(
    attempt: int, expected: float
) -> None:
    policy = ExceptionRetryPolicy(exponent=3.0, sleep=0.5, max_sleep=10.0)

    assert policy.sleep_time(attempt, Future()) == pytest.approx(expected)


def test_sleep_time_stays_zero_with_a_zero_sleep_however_many_attempts() -> None:
    policy = ExceptionRetryPolicy(sleep=0.0)

    assert policy.sleep_time(10**6, Future()) == 0.0


@given(
    attempt=st.integers(min_value=1, max_value=200),
    sleep=st.floats(min_value=0, max_value=100),
    exponent=st.floats(min_value=0, max_value=10),
)
def test_full_jitter_draws_between_zero_and_the_backoff(
    attempt: int, sleep: float, exponent: float
) -> None:
    plain = ExceptionRetryPolicy(exponent=exponent, sleep=sleep)
    jittered = ExceptionRetryPolicy(exponent=exponent, sleep=sleep, jitter=True)

    assert (
        0.0
        <= jittered.sleep_time(attempt, Future())
        <= plain.sleep_time(attempt, Future())
    )


def test_jitter_leaves_the_global_random_state_alone() -> None:
    # The library draws delays from its threads at any moment: a program that
    # seeded the random module must draw the same numbers whatever it retries.
    policy = ExceptionRetryPolicy(sleep=1.0, jitter=True)
    state = random.getstate()
    delays = {policy.sleep_time(attempt, Future()) for attempt in range(1, 20)}

    assert random.getstate() == state
    assert len(delays) > 1  # drawn, not fixed


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="no fork here"
)
def test_forked_children_draw_different_jitter() -> None:
    # As the random module reseeds its global state in a forked child, the
    # library's generator is made anew there: a pool of forked workers must not
    # all wait the same delays. Forked from a new interpreter, which has one
    # thread (forking this one, with the test runner's threads, warns on 3.12+).
    code = """
import multiprocessing
from concurrent.futures import Future
from fluent_executors import ExceptionRetryPolicy

def draw(_):
    return ExceptionRetryPolicy(sleep=1.0, jitter=True).sleep_time(1, Future())

policy = ExceptionRetryPolicy(sleep=1.0, jitter=True)
policy.sleep_time(1, Future())  # the parent's generator exists before the fork
with multiprocessing.get_context("fork").Pool(2) as pool:
    print(len(set(pool.map(draw, range(4)))))
"""
    completed = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert completed.stdout.strip() == "4"


def test_jitter_is_off_by_default() -> None:
    policy = ExceptionRetryPolicy()

    assert {policy.sleep_time(2, Future()) for _ in range(20)} == {2.0}


# -- the newer policy options -----------------------------------------------------


def test_max_duration_stops_retrying_when_the_next_attempt_would_start_too_late() -> (
    None
):
    flaky = Flaky(failures=10)

    future = RetryExecutor(
        SyncExecutor(), max_attempts=100, sleep=0.05, max_duration=0.01
    ).submit(flaky)

    assert future.exception(timeout=5) is flaky.raised[0]
    assert flaky.calls == 1


def test_max_duration_lets_retries_within_it_happen() -> None:
    flaky = Flaky(failures=2)

    future = RetryExecutor(SyncExecutor(), sleep=0.001, max_duration=60.0).submit(flaky)

    assert future.result(timeout=5) == "ok"


def test_retry_on_result_retries_while_the_predicate_holds() -> None:
    results = iter([None, None, 42])

    future = RetryExecutor(
        SyncExecutor(), retry_on_result=lambda r: r is None, sleep=0.001
    ).submit(lambda: next(results))

    assert future.result(timeout=5) == 42


def test_retry_on_result_resolves_with_the_last_result_when_attempts_run_out() -> None:
    calls = iter(range(10))

    future = RetryExecutor(
        SyncExecutor(), max_attempts=3, retry_on_result=lambda r: True, sleep=0.001
    ).submit(lambda: next(calls))

    assert future.result(timeout=5) == 2


class RetryNone(ExceptionRetryPolicy):
    """The default policy, that also retries a result of ``None``."""

    def should_retry(self, attempt: int, future: Future[Any]) -> bool:
        return super().should_retry(attempt, future) or (
            attempt < 3 and future.exception() is None and future.result() is None
        )


def test_a_subclass_of_the_default_policy_is_asked_about_a_success() -> None:
    results = iter([None, None, 42])

    future = RetryExecutor(SyncExecutor(), RetryNone(sleep=0.001)).submit(
        lambda: next(results)
    )

    assert future.result(timeout=5) == 42


@pytest.mark.parametrize("method", ["should_retry", "next_delay"])
@pytest.mark.parametrize("where", ["policy", "class"])
def test_a_spy_on_the_default_policy_sees_the_attempt_that_succeeds(
    method: str, where: str
) -> None:
    # The executor resolves a success without asking a plain ExceptionRetryPolicy
    # (which could not retry it), but asks it once one of its methods is replaced.
    policy = ExceptionRetryPolicy(sleep=0.001)
    if where == "policy":
        spy = mock.patch.object(policy, method, wraps=getattr(policy, method))
    else:  # autospec: the spy is called with the policy first, as the method
        real = getattr(ExceptionRetryPolicy, method)
        spy = mock.patch.object(
            ExceptionRetryPolicy, method, autospec=True, side_effect=real
        )

    with spy as calls:
        future = RetryExecutor(SyncExecutor(), policy).submit(Flaky(failures=1))
        assert future.result(timeout=5) == "ok"

    attempt = 0 if where == "policy" else 1  # the index of the attempt argument
    assert [call.args[attempt] for call in calls.call_args_list] == [1, 2]


def test_before_sleep_is_called_with_attempt_future_and_delay() -> None:
    seen: list[tuple[int, str, float]] = []
    flaky = Flaky(failures=2)

    future = RetryExecutor(
        SyncExecutor(),
        sleep=0.001,
        exponent=2.0,
        before_sleep=lambda n, f, d: seen.append((n, str(f.exception()), d)),
    ).submit(flaky)

    assert future.result(timeout=5) == "ok"
    assert seen == [(1, "failure 1", 0.001), (2, "failure 2", 0.002)]


# -- errors of policies and delegates ----------------------------------------------


class BrokenPolicy(RetryPolicy):
    def should_retry(self, attempt: int, future: Future[Any]) -> bool:
        raise RuntimeError("policy bug")


def _broken_hook(attempt: int, future: Future[Any], delay: float) -> None:
    raise RuntimeError("hook bug")


@pytest.mark.parametrize(
    "policy",
    [BrokenPolicy(), ExceptionRetryPolicy(sleep=0.001, before_sleep=_broken_hook)],
    ids=["policy", "before_sleep"],
)
def test_a_policy_or_hook_that_raises_ends_the_future_with_the_attempts_error(
    policy: RetryPolicy, caplog: pytest.LogCaptureFixture
) -> None:
    flaky = Flaky(failures=1)
    future = RetryExecutor(SyncExecutor(), policy).submit(flaky)

    error = future.exception(timeout=5)

    assert error is flaky.raised[0]  # as more-executors: the attempt's own error
    assert flaky.calls == 1
    [record] = [r for r in caplog.records if r.name == "fluent_executors.retry"]
    assert record.levelno == logging.ERROR
    # the first words of more-executors' message, which its users may look for
    assert record.getMessage().startswith("Exception while evaluating retry policy ")
    assert record.exc_info is not None
    assert str(record.exc_info[1]) in {"policy bug", "hook bug"}


class DelayPolicy(RetryPolicy):
    def __init__(self, delay: object) -> None:
        self.delay = delay

    def should_retry(self, attempt: int, future: Future[Any]) -> bool:
        return True

    def sleep_time(self, attempt: int, future: Future[Any]) -> Any:
        return self.delay


@pytest.mark.parametrize(("delay", "error"), [("soon", TypeError), (-1.0, ValueError)])
def test_a_policy_delay_that_is_not_a_number_ends_the_future_with_the_attempt(
    delay: object, error: type[Exception], caplog: pytest.LogCaptureFixture
) -> None:
    flaky = Flaky(1)
    future = RetryExecutor(SyncExecutor(), DelayPolicy(delay)).submit(flaky)

    assert future.exception(timeout=5) is flaky.raised[0]
    [record] = [r for r in caplog.records if r.name == "fluent_executors.retry"]
    assert isinstance(record.exc_info[1], error)


def test_a_nan_delay_is_refused_and_an_infinite_one_waits_until_cancelled() -> None:
    flaky = Flaky(1)
    nan = RetryExecutor(SyncExecutor(), DelayPolicy(math.nan)).submit(flaky)
    assert nan.exception(timeout=5) is flaky.raised[0]

    delegate = ManualExecutor()
    waiting = RetryExecutor(delegate, DelayPolicy(math.inf)).submit(Flaky(1))
    delegate.finish(0)  # fails; the policy decides here, in this thread
    assert not waiting.done()
    assert waiting.cancel()  # waiting for an attempt that never comes


# -- cancel() and the attempts (as in more-executors) -------------------------------


def test_cancel_inside_a_later_attempt_on_a_sync_delegate_keeps_its_outcome() -> None:
    futures: list[Future[Any]] = []
    answers: list[bool] = []
    raised: list[BaseException] = []

    def attempt() -> None:
        if len(raised) == 1:  # the second attempt cancels its own future
            answers.append(futures[0].cancel())
        raised.append(ValueError(f"attempt {len(raised) + 1}"))
        raise raised[-1]

    sync = RetryExecutor(SyncExecutor(), sleep=0.001, max_attempts=5)
    futures.append(sync.submit(attempt))

    error = futures[0].exception(timeout=5)

    assert answers == [False]  # the attempt runs: it cannot be stopped
    assert error is raised[1]  # and the future ends with its outcome
    assert len(raised) == 2  # no further attempt


class GatedPolicy(ExceptionRetryPolicy):
    """Retries quickly, but blocks in ``should_retry`` until released."""

    def __init__(self) -> None:
        super().__init__(max_attempts=3, sleep=0.001)
        self.deciding = threading.Event()
        self.release = threading.Event()

    def should_retry(self, attempt: int, future: Future[Any]) -> bool:
        self.deciding.set()
        self.release.wait(5)
        return super().should_retry(attempt, future)


def test_cancel_while_the_policy_decides_is_refused_and_stops_retrying() -> None:
    policy = GatedPolicy()
    go = threading.Event()
    raised: list[BaseException] = []

    def attempt() -> None:
        assert go.wait(5)  # ends once submit() has returned: decided in the worker
        raised.append(ValueError("attempt"))
        raise raised[-1]

    with Executors.thread_pool(max_workers=1) as pool:
        future = RetryExecutor(pool, policy).submit(attempt)
        go.set()
        assert policy.deciding.wait(5)

        assert not future.cancel()

        policy.release.set()
        assert future.exception(timeout=5) is raised[0]
    assert len(raised) == 1


def test_a_first_attempt_done_inside_submit_is_decided_on_after_submit_returns() -> (
    None
):
    # As in more-executors, whose policy decides in its own thread: submit()
    # returns while the policy blocks, and a cancel() then is refused.
    policy = GatedPolicy()
    raised: list[BaseException] = []

    def attempt() -> None:
        raised.append(ValueError("attempt"))
        raise raised[-1]

    future = RetryExecutor(SyncExecutor(), policy).submit(attempt)  # done inside
    assert policy.deciding.wait(5)

    assert not future.cancel()

    policy.release.set()
    assert future.exception(timeout=5) is raised[0]
    assert len(raised) == 1


def test_cancel_while_an_attempt_runs_is_refused_and_stops_retrying() -> None:
    started, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def attempt() -> None:
        calls.append(1)
        started.set()
        assert release.wait(5)
        raise ValueError("attempt")

    with Executors.thread_pool(max_workers=1) as pool:
        future = RetryExecutor(pool, sleep=0.001).submit(attempt)
        assert started.wait(5)

        assert not future.cancel()

        release.set()
        assert isinstance(future.exception(timeout=5), ValueError)
    assert calls == [1]


def test_a_submit_error_on_the_first_attempt_propagates_to_the_caller() -> None:
    delegate = SyncExecutor()
    executor = RetryExecutor(delegate, sleep=0.001)
    delegate.shutdown()

    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(Flaky(failures=0))


def test_a_submit_error_on_a_later_attempt_fails_the_future_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    delegate = SyncExecutor()
    with virtual_time() as clock:
        future = RetryExecutor(delegate, sleep=0.2).submit(Flaky(failures=1))
        delegate.shutdown()  # before the retry, at most 0.2 s after the first attempt
        clock.advance(1.0)

        error = future.exception(timeout=0)

    assert isinstance(error, RuntimeError)
    assert "after shutdown" in str(error)
    assert any("could not submit attempt 2" in r.message for r in caplog.records)


def test_a_retry_that_cannot_be_scheduled_fails_the_future_and_is_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_thread_left(*args: object, **kwargs: object) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(retry_module, "call_later", no_thread_left)

    future = RetryExecutor(SyncExecutor(), sleep=0.01).submit(Flaky(failures=1))

    error = future.exception(timeout=5)  # failed, not pending for ever
    assert isinstance(error, RuntimeError)
    assert "can't start new thread" in str(error)
    assert any("could not schedule attempt 2" in r.message for r in caplog.records)


def test_a_done_callback_that_raises_breaks_nothing(pool: ThreadPoolExecutor) -> None:
    called = threading.Event()
    future = RetryExecutor(pool, sleep=0.001).submit(Flaky(failures=1))

    future.add_done_callback(lambda f: 1 / 0)
    future.add_done_callback(lambda f: called.set())

    assert future.result(timeout=5) == "ok"
    assert called.wait(timeout=5)


# -- cancel -----------------------------------------------------------------------


def test_cancel_while_waiting_for_a_retry_returns_true_and_stops_the_retries() -> None:
    flaky = Flaky(failures=1)
    delegate = ManualExecutor()
    future = RetryExecutor(delegate, sleep=60.0).submit(flaky)
    delegate.finish(0)  # fails; the policy decides here, in this thread

    assert future.cancel() is True

    assert future.cancelled()
    assert flaky.calls == 1
    with pytest.raises(CancelledError):
        future.result(timeout=0)


def test_cancel_of_an_attempt_queued_on_the_delegate_returns_true() -> None:
    blocker = threading.Event()
    with Executors.thread_pool(max_workers=1) as single:
        single.submit(blocker.wait, 5)
        future = RetryExecutor(single, sleep=0.001).submit(Flaky(failures=0))

        assert future.cancel() is True
        assert future.cancelled()
        blocker.set()


def test_cancel_of_a_running_attempt_is_refused_and_stops_further_retries(
    pool: ThreadPoolExecutor,
) -> None:
    started, release = threading.Event(), threading.Event()

    def fail_when_released() -> None:
        started.set()
        release.wait(5)
        raise ValueError("attempt failed")

    future = RetryExecutor(pool, sleep=0.001).submit(fail_when_released)
    assert started.wait(timeout=5)

    assert future.cancel() is False
    release.set()

    assert str(future.exception(timeout=5)) == "attempt failed"


def test_an_attempt_cancelled_by_an_inner_timeout_is_retried() -> None:
    blocker = threading.Event()
    retried: list[bool] = []

    def release_the_pool(attempt: int, future: Future[Any], delay: float) -> None:
        retried.append(future.cancelled())
        blocker.set()  # the next attempt gets the worker

    # On the virtual clock: the timeout fires when the test says, not when a
    # loaded machine gets round to the attempt.
    try:
        with virtual_time() as clock, Executors.thread_pool(max_workers=1) as single:
            single.submit(blocker.wait)
            executor = single.with_timeout(0.1).with_retry(
                max_attempts=2, sleep=0.001, before_sleep=release_the_pool
            )
            future = executor.submit(Flaky(failures=0))

            clock.advance(0.1)  # the first attempt, behind the blocker, times out
            clock.advance(0.001)  # the second is submitted, to a free worker

            assert future.result(timeout=5) == "ok"
            assert retried == [True]  # the first attempt was cancelled, and retried
    finally:
        blocker.set()


def test_attempts_cancelled_every_time_end_cancelled_after_max_attempts() -> None:
    blocker = threading.Event()
    with Executors.thread_pool(max_workers=1) as single:
        single.submit(blocker.wait, 5)
        executor = single.with_timeout(0.01).with_retry(max_attempts=2, sleep=0.001)
        future = executor.submit(Flaky(failures=0))

        assert wait([future], timeout=5).done == {future}
        assert future.cancelled()
        blocker.set()


def test_a_policy_reading_a_cancelled_attempt_does_not_retry_nor_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class ReadsTheException(RetryPolicy):
        def should_retry(self, attempt: int, future: Future[Any]) -> bool:
            return future.exception() is not None  # raises for a cancelled attempt

    cancelled: Future[str] = Future()
    cancelled.cancel()

    class CancellingDelegate(Executor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
            return cancelled

    future = RetryExecutor(CancellingDelegate(), ReadsTheException()).submit(str)

    assert wait([future], timeout=5).done == {future}  # decided after submit()
    assert future.cancelled()
    assert caplog.records == []


def test_running_reports_an_attempt_under_way(pool: ThreadPoolExecutor) -> None:
    started, release = threading.Event(), threading.Event()

    def work() -> str:
        started.set()
        release.wait(5)
        return "done"

    future = RetryExecutor(pool, sleep=0.001).submit(work)
    assert started.wait(timeout=5)

    assert future.running()
    release.set()
    assert future.result(timeout=5) == "done"
    assert not future.running()


def test_thousands_of_submits_with_random_cancels_all_end_without_state_errors(
    pool: ThreadPoolExecutor, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(1234)
    executor = RetryExecutor(pool, max_attempts=3, sleep=0.0005)

    futures = [executor.submit(Flaky(failures=rng.randrange(4))) for _ in range(2000)]
    for future in rng.sample(futures, 700):
        future.cancel()

    assert not wait(futures, timeout=30).not_done
    assert "InvalidStateError" not in caplog.text
    assert all(f.cancelled() or f.exception() or f.result() == "ok" for f in futures)


# -- construction -------------------------------------------------------------------


def test_an_unknown_policy_keyword_is_a_type_error(pool: ThreadPoolExecutor) -> None:
    with pytest.raises(TypeError, match="max_atempts"):
        RetryExecutor(pool, max_atempts=3)


def test_policy_keywords_with_a_retry_policy_are_a_type_error(
    pool: ThreadPoolExecutor,
) -> None:
    with pytest.raises(TypeError, match="cannot be given with retry_policy"):
        RetryExecutor(pool, RetryPolicy(), max_attempts=3)


@pytest.mark.parametrize("policy", [object(), "3 attempts"])
def test_a_retry_policy_that_is_not_a_policy_is_a_type_error(
    pool: ThreadPoolExecutor, policy: object
) -> None:
    executor = RetryExecutor(pool)

    with pytest.raises(TypeError, match="retry_policy must be a RetryPolicy"):
        RetryExecutor(pool, policy)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="retry_policy must be a RetryPolicy"):
        executor.submit_retry(policy, Flaky(0))  # type: ignore[arg-type]


def test_submit_refuses_a_callable_that_is_not_callable(
    pool: ThreadPoolExecutor,
) -> None:
    with pytest.raises(TypeError, match="fn must be callable"):
        RetryExecutor(pool).submit(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"max_attempts": 0}, ValueError, "max_attempts must be >= 1"),
        ({"max_attempts": 2.5}, TypeError, "max_attempts must be an int"),
        ({"max_attempts": True}, TypeError, "max_attempts must be an int"),
        ({"sleep": -1}, ValueError, "sleep must be >= 0"),
        ({"sleep": math.inf}, ValueError, "sleep must be finite"),
        ({"exponent": "2"}, TypeError, "exponent must be a real number"),
        ({"max_sleep": math.nan}, ValueError, "max_sleep must be >= 0"),
        ({"max_duration": -5}, ValueError, "max_duration must be >= 0"),
        ({"exception_base": "ValueError"}, TypeError, "exception_base must be"),
        ({"exception_base": [ValueError, 3]}, TypeError, "exception_base must be"),
        ({"retry_on_result": 1}, TypeError, "retry_on_result must be callable"),
        ({"before_sleep": "log"}, TypeError, "before_sleep must be callable"),
    ],
)
def test_exception_retry_policy_names_a_bad_argument(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        ExceptionRetryPolicy(**kwargs)


def test_the_more_executors_defaults_hold() -> None:
    policy = ExceptionRetryPolicy()

    assert [policy.sleep_time(n, Future()) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]
    failed: Future[None] = Future()
    failed.set_exception(ValueError())
    assert policy.should_retry(2, failed)
    assert not policy.should_retry(3, failed)


# -- the facade and shutdown ---------------------------------------------------------


def test_with_retry_builds_the_default_policy_and_passes_the_name_down() -> None:
    with Executors.thread_pool(max_workers=1, name="jobs").with_retry(
        max_attempts=5, sleep=0.001
    ) as executor:
        assert isinstance(executor, RetryExecutor)
        assert executor.name == "jobs"
        assert isinstance(executor.retry_policy, ExceptionRetryPolicy)
        assert executor.submit(Flaky(failures=4)).result(timeout=5) == "ok"


def test_with_retry_takes_a_name_of_its_own(pool: ThreadPoolExecutor) -> None:
    assert pool.with_retry(name="retrying").name == "retrying"


def test_executors_with_retry_takes_any_executor_and_a_policy() -> None:
    policy = RecordingPolicy(retries=1)

    executor = Executors.with_retry(SyncExecutor(name="sync"), policy)

    assert executor.retry_policy is policy
    assert executor.name == "sync"


def test_submit_after_shutdown_raises_and_double_shutdown_is_harmless(
    pool: ThreadPoolExecutor,
) -> None:
    executor = RetryExecutor(pool)

    executor.shutdown()
    executor.shutdown()

    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(Flaky(0))


def test_shutdown_propagates_to_the_innermost_executor() -> None:
    inner = Executors.thread_pool(max_workers=1)
    executor = inner.with_retry().with_retry()

    executor.shutdown()

    with pytest.raises(RuntimeError):
        inner.submit(Flaky(0))


def test_shutdown_with_wait_lets_pending_retries_finish_first() -> None:
    inner = Executors.thread_pool(max_workers=1)
    executor = RetryExecutor(inner, sleep=0.05)
    future = executor.submit(Flaky(failures=2))

    executor.shutdown(wait=True)

    assert future.result(timeout=0) == "ok"
    with pytest.raises(RuntimeError):
        inner.submit(Flaky(0))


def test_shutdown_without_wait_shuts_the_delegate_once_the_last_future_is_done() -> (
    None
):
    inner = Executors.thread_pool(max_workers=1)
    executor = RetryExecutor(inner, sleep=0.05)
    future = executor.submit(Flaky(failures=2))

    executor.shutdown(wait=False)

    assert future.result(timeout=5) == "ok"
    with pytest.raises(RuntimeError):
        inner.submit(Flaky(0))


def test_shutdown_with_cancel_futures_cancels_the_futures_waiting_to_retry() -> None:
    delegate = ManualExecutor()
    executor = RetryExecutor(delegate, sleep=60.0)
    future = executor.submit(Flaky(failures=1))
    delegate.finish(0)  # fails; the policy decides here, in this thread

    executor.shutdown(wait=True, cancel_futures=True)

    assert future.cancelled()


def test_no_scheduler_thread_survives_shutdown(pool: ThreadPoolExecutor) -> None:
    executor = RetryExecutor(pool, sleep=0.01)
    go = threading.Event()
    futures = [executor.submit(after, go, Flaky(failures=2)) for _ in range(20)]
    go.set()

    executor.shutdown(wait=True)

    assert all(f.result(timeout=0) == "ok" for f in futures)
    for thread in threading.enumerate():
        if thread.name.startswith(THREAD_NAME):  # the scheduler and its workers
            thread.join(timeout=5)
            assert not thread.is_alive()


def test_futures_outlive_their_executor() -> None:
    future = RetryExecutor(Executors.thread_pool(max_workers=1), sleep=0.001).submit(
        Flaky(failures=1)
    )

    assert future.result(timeout=5) == "ok"


def test_cancel_after_an_attempt_succeeded_is_refused_before_its_callback_runs() -> (
    None
):
    class LateCallbacks(Future[str]):
        """A future whose done callbacks run only when the test says so."""

        def __init__(self) -> None:
            super().__init__()
            self.callbacks: list[Any] = []

        def add_done_callback(self, fn: Any) -> None:
            self.callbacks.append(fn)

    attempt = LateCallbacks()

    class Delegate(Executor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
            return attempt

    future = RetryExecutor(Delegate(), sleep=0.001).submit(str)
    attempt.set_result("ran")  # the work has run: its outcome is decided

    assert future.cancel() is False
    for callback in attempt.callbacks:
        callback(attempt)
    assert future.result(timeout=0) == "ran"
