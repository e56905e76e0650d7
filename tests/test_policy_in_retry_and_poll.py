"""One retry policy means the same as the policy of a retry executor and as a poll
executor's ``poll_retry_policy`` (docs/retry.rst, docs/poll.rst): both ask it
through the same helper, so ``max_duration``, ``before_sleep`` and ``jitter`` give
the same attempts at the same times, on the virtual clock."""

from __future__ import annotations

import random
from concurrent.futures import Future
from typing import Any

import pytest

from _fluent_executors import retry_policy as _retry_policy
from fluent_executors import ExceptionRetryPolicy, Executors, PollDescriptor
from fluent_executors.testing import VirtualClock, virtual_time

WHERE = ["with_retry", "poll_retry_policy"]


class Down(ConnectionError):
    """What every attempt raises."""


def attempts(
    where: str, policy: ExceptionRetryPolicy, clock: VirtualClock
) -> tuple[list[float], BaseException | None]:
    """Under ``policy``, the times of the attempts (a retried callable, or the
    calls of a poll function), from the first one, of something that always fails;
    and the exception of the future that the executor returned."""
    times: list[float] = []

    def fail(*_: Any) -> None:
        times.append(clock.monotonic())
        raise Down(f"attempt {len(times)}")

    if where == "with_retry":
        executor: Any = Executors.sync().with_retry(policy)
        future = executor.submit(fail)
    else:

        def poll(descriptors: list[PollDescriptor[Any]]) -> None:
            fail()

        executor = Executors.sync().with_poll(
            poll, default_interval=1000.0, poll_retry_policy=policy
        )
        future = executor.submit(str, "task")
    clock.advance(100.0)  # returns once every attempt due by then has run
    error = future.exception(timeout=0)
    executor.shutdown()
    return [t - times[0] for t in times], error


class Hook:
    """A ``before_sleep`` that records its calls: the attempt, the type of its
    future's exception, the delay."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, type[BaseException] | None, float]] = []

    def __call__(self, attempt: int, future: Future[Any], delay: float) -> None:
        error = future.exception(timeout=0)
        self.calls.append((attempt, type(error) if error else None, delay))


@pytest.mark.parametrize("where", WHERE)
def test_max_duration_ends_the_attempts_before_the_next_would_start(
    where: str,
) -> None:
    # Delays 1, 2, 4 s: the attempt after 3 + 4 s would start past 5 s.
    hook = Hook()
    policy = ExceptionRetryPolicy(
        max_attempts=10, sleep=1.0, max_duration=5.0, before_sleep=hook
    )
    with virtual_time() as clock:
        times, error = attempts(where, policy, clock)
    assert times == pytest.approx([0.0, 1.0, 3.0], abs=1e-9)
    assert isinstance(error, Down)
    assert str(error) == "attempt 3"
    assert hook.calls == [(1, Down, 1.0), (2, Down, 2.0)]


@pytest.mark.parametrize("where", WHERE)
def test_a_max_duration_of_zero_retries_nothing(where: str) -> None:
    hook = Hook()
    policy = ExceptionRetryPolicy(max_attempts=10, max_duration=0.0, before_sleep=hook)
    with virtual_time() as clock:
        times, error = attempts(where, policy, clock)
    assert times == [0.0]
    assert str(error) == "attempt 1"
    assert hook.calls == []


@pytest.mark.parametrize("where", WHERE)
def test_before_sleep_is_called_before_each_wait_with_its_delay(where: str) -> None:
    hook = Hook()
    policy = ExceptionRetryPolicy(
        max_attempts=4, sleep=2.0, exponent=3.0, before_sleep=hook
    )
    with virtual_time() as clock:
        times, error = attempts(where, policy, clock)
    # (Differences of times on a clock that starts at the real one: approx.)
    assert times == pytest.approx([0.0, 2.0, 8.0, 26.0], abs=1e-9)
    assert str(error) == "attempt 4"
    assert hook.calls == [(1, Down, 2.0), (2, Down, 6.0), (3, Down, 18.0)]


@pytest.mark.parametrize("where", WHERE)
def test_jitter_draws_each_delay_below_the_backoff(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The library's generator, seeded: the same draws for both.
    drawn = random.Random(27)
    monkeypatch.setattr(_retry_policy, "_jitter_random", lambda: drawn)
    expected = random.Random(27)
    delays = [expected.uniform(0.0, backoff) for backoff in (1.0, 2.0, 4.0)]
    hook = Hook()
    policy = ExceptionRetryPolicy(
        max_attempts=4, sleep=1.0, jitter=True, before_sleep=hook
    )
    with virtual_time() as clock:
        times, error = attempts(where, policy, clock)
    assert [delay for _, _, delay in hook.calls] == delays
    starts = [0.0, delays[0], delays[0] + delays[1], sum(delays)]
    assert times == pytest.approx(starts)
    assert str(error) == "attempt 4"
