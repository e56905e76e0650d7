"""RateLimitExecutor(adaptive=True): the rate follows the service's "too many"
answers (see docs/wrappers.rst, "An adaptive rate limit")."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from typing import Any

import pytest

from fluent_executors import (
    Executors,
    RateLimitExecutor,
    RateLimitStats,
    SyncExecutor,
)
from fluent_executors.testing import VirtualClock, virtual_time

PERIOD = 1.0


class TooMany(Exception):
    """Shaped like requests' ``HTTPError`` for a 429 (or another status)."""

    def __init__(self, status: int = 429, retry_after: str | None = None) -> None:
        super().__init__(f"{status}")
        headers = {} if retry_after is None else {"Retry-After": retry_after}
        self.response = type(
            "Response", (), {"status_code": status, "headers": headers}
        )()


class Service:
    """Answers each call with the next of ``answers`` (an exception is raised,
    anything else returned), then ``"ok"``; records the virtual time of each
    call."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.answers: list[object] = []
        self.times: list[float] = []

    def __call__(self) -> object:
        self.times.append(self.clock.monotonic())
        answer = self.answers.pop(0) if self.answers else "ok"
        if isinstance(answer, BaseException):
            raise answer
        return answer


@pytest.fixture
def clock() -> Iterator[VirtualClock]:
    with virtual_time() as clock:
        yield clock


def adaptive(max_calls: int = 8, **kwargs: Any) -> RateLimitExecutor:
    return Executors.sync().with_rate_limit(max_calls, PERIOD, adaptive=True, **kwargs)


def test_a_429_cuts_the_rate_by_the_decrease_factor(clock: VirtualClock) -> None:
    service = Service(clock)
    service.answers = [TooMany(429)]
    executor = adaptive(8, increase=0.0)

    futures = [executor.submit(service) for _ in range(12)]
    # the 429 came first (a sync delegate): 8 calls a period became 4
    stats = executor.stats()
    assert isinstance(stats, RateLimitStats)
    assert (stats.rate, stats.cuts, stats.paused) == (4.0, 1, False)
    assert len(service.times) == 4  # the failed call counts in its window
    clock.advance(PERIOD)
    assert len(service.times) == 8
    clock.advance(PERIOD)
    assert len(service.times) == 12
    assert isinstance(futures[0].exception(timeout=0), TooMany)
    assert [f.result(timeout=0) for f in futures[1:]] == ["ok"] * 11
    executor.shutdown()


def test_a_503_and_a_custom_predicate_cut_too(clock: VirtualClock) -> None:
    service = Service(clock)
    service.answers = [TooMany(503)]
    executor = adaptive(8, decrease_factor=0.25, increase=0.0)
    executor.submit(service)
    assert executor.stats().rate == 2.0

    custom = Service(clock)
    custom.answers = [KeyError("quota"), TooMany(429)]
    executor2 = adaptive(
        8, too_many=lambda error: isinstance(error, KeyError), increase=0.0
    )
    executor2.submit(custom)
    clock.advance(PERIOD)
    executor2.submit(custom)  # a 429 that the predicate does not count
    assert (executor2.stats().rate, executor2.stats().cuts) == (4.0, 1)
    executor.shutdown()
    executor2.shutdown()


def test_the_failures_of_one_period_cut_once(clock: VirtualClock) -> None:
    service = Service(clock)
    service.answers = [TooMany(), TooMany(), TooMany()]
    executor = adaptive(8, increase=0.0)

    for _ in range(3):
        executor.submit(service)
    assert (executor.stats().rate, executor.stats().cuts) == (4.0, 1)

    clock.advance(PERIOD)
    service.answers = [TooMany()]
    executor.submit(service)
    assert (executor.stats().rate, executor.stats().cuts) == (2.0, 2)
    executor.shutdown()


def test_successes_raise_the_rate_back_to_max_calls(clock: VirtualClock) -> None:
    service = Service(clock)
    service.answers = [TooMany()]
    executor = adaptive(4, increase=1.0)
    executor.submit(service)
    assert executor.stats().rate == 2.0

    executor.submit(service)  # a success adds increase / rate: 1 / 2
    assert executor.stats().rate == 2.5
    for _ in range(40):
        executor.submit(service)
    clock.advance(40 * PERIOD)

    assert executor.stats().rate == 4.0  # never above max_calls
    assert executor.stats().cuts == 1
    executor.shutdown()


def test_a_rate_never_goes_below_one_call_per_period(clock: VirtualClock) -> None:
    service = Service(clock)
    executor = adaptive(2, increase=0.0)
    for _ in range(5):
        service.answers = [TooMany()]
        executor.submit(service)
        clock.advance(PERIOD)

    assert executor.stats().rate == 1.0
    executor.shutdown()


def test_a_retry_after_pauses_the_calls_until_the_hint(clock: VirtualClock) -> None:
    service = Service(clock)
    service.answers = [TooMany(429, retry_after="30")]
    executor = adaptive(8, increase=0.0)
    start = clock.monotonic()

    futures = [executor.submit(service) for _ in range(5)]
    # the first call's answer paused the rest, and cut the rate to 4
    assert executor.stats().paused
    clock.advance(29.0)
    assert len(service.times) == 1
    clock.advance(1.0)

    assert [t - start for t in service.times] == pytest.approx([0.0] + [30.0] * 4)
    assert [f.result(timeout=0) for f in futures[1:]] == ["ok"] * 4
    assert not executor.stats().paused
    executor.shutdown()


def test_a_pause_is_bounded_by_max_pause(clock: VirtualClock) -> None:
    service = Service(clock)
    service.answers = [TooMany(429, retry_after="3600")]
    executor = adaptive(1, max_pause=5.0)
    start = clock.monotonic()

    executor.submit(service)
    executor.submit(service)
    clock.advance(10.0)

    assert [t - start for t in service.times] == pytest.approx([0.0, 5.0])
    executor.shutdown()


def test_without_adaptive_failures_change_nothing(clock: VirtualClock) -> None:
    service = Service(clock)
    service.answers = [TooMany(429, retry_after="30")]
    executor = Executors.sync().with_rate_limit(2, PERIOD)

    executor.submit(service)
    executor.submit(service)
    stats = executor.stats()

    assert (stats.rate, stats.cuts, stats.paused) == (2.0, 0, False)
    assert len(service.times) == 2
    executor.shutdown()


def raises(error: BaseException) -> bool:
    raise RuntimeError("a broken predicate")


def test_a_predicate_that_raises_is_logged_and_read_as_false(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    service = Service(clock)
    service.answers = [TooMany(), TooMany()]
    executor = adaptive(4, too_many=raises)

    executor.submit(service)
    executor.submit(service)

    assert executor.stats().cuts == 0
    warnings = [r for r in caplog.records if "too_many predicate" in r.getMessage()]
    assert [r.levelno for r in warnings] == [logging.WARNING]  # once
    executor.shutdown()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"decrease_factor": 0.0}, ValueError, "decrease_factor must be between"),
        ({"decrease_factor": 1.0}, ValueError, "decrease_factor must be between"),
        ({"decrease_factor": math.nan}, ValueError, "decrease_factor must be between"),
        ({"decrease_factor": "half"}, TypeError, "decrease_factor must be a real"),
        ({"increase": -1.0}, ValueError, "increase must be >= 0"),
        ({"increase": math.inf}, ValueError, "increase must be finite"),
        ({"max_pause": -1.0}, ValueError, "max_pause must be >= 0"),
        ({"too_many": 429}, TypeError, "too_many must be callable"),
        ({"adaptive": "yes"}, TypeError, "adaptive must be a bool"),
    ],
)
def test_bad_adaptive_arguments_are_refused_by_name(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    arguments: dict[str, Any] = {"adaptive": True, **kwargs}
    with pytest.raises(error, match=match):
        RateLimitExecutor(SyncExecutor(), 4, PERIOD, **arguments)


def test_the_adaptive_limit_shows_in_describe() -> None:
    executor = Executors.sync().with_rate_limit(4, adaptive=True)
    assert "adaptive=True" in executor.describe()
    executor.shutdown()
