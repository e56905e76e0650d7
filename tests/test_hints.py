"""Server-hinted delays: retry_after() and ExceptionRetryPolicy's delay_hint, in
with_retry and in poll_retry_policy (see docs/retry.rst, "Server-hinted delays")."""

from __future__ import annotations

import copy
import datetime
import email.message
import email.utils
import logging
import math
import pickle
import time
import urllib.error
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import httpx
import pytest

from fluent_executors import (
    ExceptionRetryPolicy,
    Executors,
    PollDescriptor,
    retry_after,
)
from fluent_executors.testing import virtual_time

# -- exceptions shaped like the HTTP clients' ------------------------------------------


class CaseInsensitiveHeaders(dict[str, str]):
    """Headers as requests' ``CaseInsensitiveDict`` and httpx's ``Headers`` read
    them: ``get`` ignores the case of the name."""

    def get(self, name: str, default: Any = None) -> Any:
        for key, value in self.items():
            if key.lower() == name.lower():
                return value
        return default


class FakeResponse:
    def __init__(self, status_code: int, headers: dict[str, str]) -> None:
        self.status_code = status_code
        self.headers = CaseInsensitiveHeaders(headers)


class FakeHTTPError(Exception):
    """Shaped like requests' ``HTTPError``: the response is ``error.response``."""

    def __init__(self, status_code: int = 429, **headers: str) -> None:
        super().__init__(f"{status_code} error")
        self.response = FakeResponse(
            status_code, {k.replace("_", "-"): v for k, v in headers.items()}
        )


class RateLimited(Exception):
    """An SDK's exception with a ``retry_after`` attribute."""

    def __init__(self, retry_after: object) -> None:
        super().__init__(f"rate limited, retry after {retry_after!r}")
        self.retry_after = retry_after


def http_date(seconds_from_now: float) -> str:
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


# -- retry_after --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (RateLimited(7), 7.0),
        (RateLimited(0.25), 0.25),
        (RateLimited(datetime.timedelta(minutes=2)), 120.0),
        (RateLimited("30"), 30.0),
        (FakeHTTPError(Retry_After="120"), 120.0),
        (FakeHTTPError(429, retry_after="5"), 5.0),  # a lower-case header name
        (FakeHTTPError(503, Retry_After=" 3 "), 3.0),
        (FakeHTTPError(Retry_After=http_date(-3600)), 0.0),  # a date already past
        (FakeHTTPError(), None),  # a response without the header
        (ValueError("no hint"), None),
    ],
)
def test_retry_after_reads_the_attribute_and_the_header(
    error: BaseException, expected: float | None
) -> None:
    assert retry_after(error) == expected


def test_retry_after_reads_an_http_date_against_the_wall_clock() -> None:
    hint = retry_after(FakeHTTPError(Retry_After=http_date(600)))

    assert hint is not None
    assert 590 <= hint <= 600  # the date has whole seconds


def test_retry_after_reads_a_real_httpx_status_error() -> None:
    request = httpx.Request("GET", "https://api.example/tasks")
    response = httpx.Response(429, headers={"retry-after": "42"}, request=request)
    with pytest.raises(httpx.HTTPStatusError) as caught:
        response.raise_for_status()

    assert retry_after(caught.value) == 42.0


def test_retry_after_reads_urllibs_http_error() -> None:
    headers = email.message.Message()
    headers["Retry-After"] = "9"
    error = urllib.error.HTTPError("https://api.example", 503, "busy", headers, None)
    with error:  # a response too, with a body to close (3.14 warns otherwise)
        assert retry_after(error) == 9.0


@pytest.mark.parametrize(
    "error",
    [
        RateLimited(-1),
        RateLimited(math.nan),
        RateLimited(math.inf),
        RateLimited(True),
        FakeHTTPError(Retry_After="soon"),
        FakeHTTPError(Retry_After="-5"),
        FakeHTTPError(Retry_After="1e400"),
        # RFC 9110's delay-seconds: ASCII digits only.
        FakeHTTPError(Retry_After="\uff11\uff12\uff10"),  # fullwidth 120
        FakeHTTPError(Retry_After="\u0663\u0660"),  # Arabic-Indic 30
        FakeHTTPError(Retry_After="\u0967\u0968"),  # Devanagari 12
        FakeHTTPError(Retry_After="1_000"),
        FakeHTTPError(Retry_After="+5"),
        FakeHTTPError(Retry_After="1e3"),
        FakeHTTPError(Retry_After="2.5"),
        FakeHTTPError(Retry_After="infinity"),
        RateLimited("\u0663\u0660"),
        FakeHTTPError(Retry_After="Wed, \u0662\u0661 Oct 2026 07:28:00 GMT"),
        FakeHTTPError(Retry_After="Mon, 99 Foo 2026 99:00:00 GMT"),
    ],
)
def test_retry_after_refuses_a_hint_that_is_no_delay(error: BaseException) -> None:
    with pytest.raises((ValueError, TypeError), match="Retry-After hint"):
        retry_after(error)


# -- with_retry ---------------------------------------------------------------------


class Failing:
    """Raises the next of ``errors`` at each call (then returns ``"ok"``), and
    records the virtual time of each call."""

    def __init__(self, clock: Any, *errors: BaseException) -> None:
        self.clock = clock
        self.errors = list(errors)
        self.times: list[float] = []

    def __call__(self) -> str:
        self.times.append(self.clock.monotonic())
        if self.errors:
            raise self.errors.pop(0)
        return "ok"

    def gaps(self) -> list[float]:
        # Rounded: differences of times on a clock that starts at the real one
        # (any value, on any machine) carry its float rounding.
        return [
            round(later - earlier, 9)
            for earlier, later in zip(self.times, self.times[1:], strict=False)
        ]


def run(policy: ExceptionRetryPolicy, *errors: BaseException) -> Failing:
    """Run a callable raising ``errors`` under ``policy`` to its end, on the virtual
    clock; return it, with the times of its attempts."""
    with virtual_time() as clock:
        failing = Failing(clock, *errors)
        executor = Executors.sync().with_retry(policy)
        future = executor.submit(failing)
        clock.advance(10_000.0)
        future.exception(timeout=0)  # done
        executor.shutdown()
    return failing


def test_the_retry_waits_exactly_the_hinted_delay() -> None:
    policy = ExceptionRetryPolicy(max_attempts=3, sleep=1.0)

    failing = run(policy, FakeHTTPError(Retry_After="7"), RateLimited(0.5))

    assert failing.gaps() == [7.0, 0.5]  # not the backoff's 1 s and 2 s
    assert len(failing.times) == 3


def test_a_hint_is_bounded_by_max_sleep() -> None:
    policy = ExceptionRetryPolicy(max_attempts=2, sleep=1.0, max_sleep=30.0)

    failing = run(policy, FakeHTTPError(Retry_After="3600"))

    assert failing.gaps() == [30.0]


def test_a_hint_beyond_max_duration_ends_the_retries_at_once() -> None:
    policy = ExceptionRetryPolicy(max_attempts=5, sleep=1.0, max_duration=60.0)
    hinted = RateLimited(120)
    with virtual_time() as clock:
        failing = Failing(clock, hinted)
        future = Executors.sync().with_retry(policy).submit(failing)
        clock.advance(0.0)  # the decision, in a scheduler worker

        assert future.exception(timeout=0) is hinted  # no wait of 120 s
    assert len(failing.times) == 1


def test_without_a_hint_the_backoff_applies() -> None:
    policy = ExceptionRetryPolicy(max_attempts=3, sleep=1.0)

    failing = run(policy, ValueError("no hint"), FakeHTTPError())

    assert failing.gaps() == [1.0, 2.0]


def test_delay_hint_none_ignores_hints() -> None:
    policy = ExceptionRetryPolicy(max_attempts=2, sleep=1.0, delay_hint=None)

    failing = run(policy, RateLimited(7))

    assert failing.gaps() == [1.0]
    assert "delay_hint=None" in repr(policy)


def test_a_custom_delay_hint_and_before_sleep_see_the_hinted_delay() -> None:
    seen: list[float] = []
    policy = ExceptionRetryPolicy(
        max_attempts=3,
        sleep=1.0,
        delay_hint=lambda error: 4.0 if isinstance(error, KeyError) else None,
        before_sleep=lambda attempt, future, delay: seen.append(delay),
    )

    failing = run(policy, KeyError("busy"), ValueError("other"))

    assert failing.gaps() == [4.0, 2.0]
    assert seen == [4.0, 2.0]


def test_jitter_does_not_apply_to_a_hint() -> None:
    policy = ExceptionRetryPolicy(max_attempts=2, sleep=100.0, jitter=True)

    failing = run(policy, RateLimited(5))

    assert failing.gaps() == [5.0]


@pytest.mark.parametrize(
    "duplicate",
    [copy.copy, copy.deepcopy, lambda policy: pickle.loads(pickle.dumps(policy))],
    ids=["copy", "deepcopy", "pickle"],
)
def test_a_policy_with_its_delay_hint_copies_and_pickles(
    duplicate: Callable[[ExceptionRetryPolicy], ExceptionRetryPolicy],
) -> None:
    # The default policy reads hints (retry_after): its copy reads them too.
    policy = duplicate(ExceptionRetryPolicy(max_attempts=2, sleep=100.0))

    failing = run(policy, RateLimited(5))

    assert failing.gaps() == [5.0]


def fails(error: BaseException) -> float:
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    "hint",
    [
        RateLimited(-1),
        RateLimited(math.nan),
        RateLimited(math.inf),
        RateLimited("soon"),
        FakeHTTPError(Retry_After="Mon, 99 Foo 2026 99:00:00 GMT"),
    ],
)
def test_a_garbage_hint_falls_back_to_the_backoff_and_is_logged_once(
    hint: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="fluent_executors._hints")
    policy = ExceptionRetryPolicy(max_attempts=3, sleep=1.0)

    failing = run(policy, hint, hint)

    assert failing.gaps() == [1.0, 2.0]
    warnings = [r for r in caplog.records if "ignoring the hint" in r.getMessage()]
    assert [r.levelno for r in warnings] == [logging.WARNING, logging.DEBUG]


@pytest.mark.parametrize(
    "delay_hint",
    [fails, lambda error: -3.0, lambda error: math.nan, lambda error: "5"],
)
def test_a_delay_hint_that_misbehaves_falls_back_to_the_backoff(
    delay_hint: Callable[[BaseException], float | None],
    caplog: pytest.LogCaptureFixture,
) -> None:
    policy = ExceptionRetryPolicy(max_attempts=2, sleep=1.0, delay_hint=delay_hint)

    failing = run(policy, ValueError("boom"))

    assert failing.gaps() == [1.0]  # the thread lived on, the future resolved
    assert any("ignoring the hint" in r.getMessage() for r in caplog.records)


def test_delay_hint_must_be_callable() -> None:
    with pytest.raises(TypeError, match="delay_hint must be callable"):
        ExceptionRetryPolicy(delay_hint=5)  # type: ignore[arg-type]


# -- poll_retry_policy ----------------------------------------------------------------


def test_the_poll_retry_policy_waits_the_hinted_delay_and_its_deadline() -> None:
    errors: list[BaseException] = [
        FakeHTTPError(503, Retry_After="12"),
        RateLimited(100),  # beyond max_duration: the futures fail
    ]
    policy = ExceptionRetryPolicy(max_attempts=5, sleep=1.0, max_duration=60.0)
    with virtual_time() as clock:
        times: list[float] = []

        def poll(descriptors: list[PollDescriptor[Any]]) -> float:
            times.append(clock.monotonic())
            if errors:
                raise errors.pop(0)
            return 1.0

        executor = Executors.sync().with_poll(poll, poll_retry_policy=policy)
        future = executor.submit(str, "task")
        clock.advance(11.9)
        assert len(times) == 1  # not after the backoff's 1 s
        clock.advance(0.1)
        assert len(times) == 2

        assert isinstance(future.exception(timeout=0), RateLimited)
        executor.shutdown()
    assert times[1] - times[0] == pytest.approx(12.0, abs=1e-9)


def test_the_poll_thread_asks_the_policys_next_delay() -> None:
    asked: list[tuple[int, float]] = []

    class Recording(ExceptionRetryPolicy):
        def next_delay(
            self, attempt: int, future: Future[Any], elapsed: float
        ) -> float | None:
            asked.append((attempt, elapsed))
            return super().next_delay(attempt, future, elapsed)

    errors = [RateLimited(3), RateLimited(4)]
    with virtual_time() as clock:

        def poll(descriptors: list[PollDescriptor[Any]]) -> None:
            if errors:
                raise errors.pop(0)
            for descriptor in descriptors:
                descriptor.yield_result("done")

        executor = Executors.sync().with_poll(poll, poll_retry_policy=Recording())
        future = executor.submit(str, "task")
        clock.advance(10.0)

        assert future.result(timeout=0) == "done"
        executor.shutdown()
    # elapsed: since the first failure of the row
    assert asked == [(1, 0.0), (2, 3.0)]
