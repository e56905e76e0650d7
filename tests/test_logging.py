"""What the library logs about single futures: nothing at ``DEBUG``, every record at
``TRACE`` once a logger opts in, and at ``DEBUG`` with ``MORE_EXECUTORS_DEBUG=1``
(as more-executors); see the guide, "Errors and logging"."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, Executor, Future
from typing import Any

import pytest
import structlog_like

from _fluent_executors.logging import Once
from fluent_executors import TRACE, ExceptionRetryPolicy, Executors, f_timeout
from fluent_executors.testing import virtual_time

TIMEOUT = 10.0


def check(value: int) -> int:
    """The map function of the chain: fails the odd values."""
    if value % 2:
        raise ValueError(f"odd: {value}")
    return value * 10


class Flaky:
    """Fails its first call, then returns its argument."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, value: int) -> int:
        self.calls += 1
        if self.calls == 1:
            raise OSError("first call")
        return value


def run_chain(logger: Any = None) -> None:
    """Futures that succeed, succeed after a retry, and fail (in the callable, or in
    the map function, after every attempt) through map and retry."""
    with (
        Executors.thread_pool(max_workers=2)
        .with_map(check, logger=logger)
        .with_retry(sleep=0.001, max_attempts=2, logger=logger) as executor
    ):
        succeed = executor.submit(int, 2)
        retried = executor.submit(Flaky(), 4)
        mapped_error = executor.submit(int, 3)
        assert succeed.result(TIMEOUT) == 20
        assert retried.result(TIMEOUT) == 40
        assert isinstance(mapped_error.exception(TIMEOUT), ValueError)


def library_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("fluent_executors")]


@pytest.fixture(autouse=True)
def _no_more_executors_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MORE_EXECUTORS_DEBUG", raising=False)


def test_a_map_and_retry_chain_logs_nothing_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)  # for everything, as basicConfig(level=DEBUG)

    run_chain()

    assert library_records(caplog) == []


def test_a_logger_at_trace_gets_a_record_for_each_retry_and_mapping_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(TRACE, logger="fluent_executors")

    run_chain()

    records = library_records(caplog)
    assert {r.levelno for r in records} == {TRACE}
    assert {r.levelname for r in records} == {"TRACE"}
    messages = sorted(r.getMessage() for r in records)
    mapped = "mapping function of MapExecutor 'default' raised; failing its future"
    retry = "retry executor 'default': attempt 2 in 0.001 s"
    # the map function fails both attempts of 3; the retry follows one failure
    # of Flaky and the first of 3
    assert messages == [mapped, mapped, retry, retry]
    assert all(r.exc_info for r in records if r.getMessage() == mapped)
    assert {r.filename for r in records} == {"map.py", "retry.py"}  # where logged


def test_more_executors_debug_1_makes_them_debug_records(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MORE_EXECUTORS_DEBUG", "1")  # read at each record
    caplog.set_level(logging.DEBUG)

    run_chain()

    records = library_records(caplog)
    assert len(records) == 4
    assert {r.levelno for r in records} == {logging.DEBUG}


@pytest.mark.parametrize("value", ["0", "true", ""])
def test_another_value_of_more_executors_debug_opts_in_to_nothing(
    value: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MORE_EXECUTORS_DEBUG", value)  # only "1", as more-executors
    caplog.set_level(logging.DEBUG)

    run_chain()

    assert library_records(caplog) == []


def test_a_logger_without_levels_gets_the_records_only_with_more_executors_debug(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    quiet, loud = structlog_like.Logger(), structlog_like.Logger()
    run_chain(quiet)
    monkeypatch.setenv("MORE_EXECUTORS_DEBUG", "1")
    run_chain(loud)

    assert quiet.calls == []
    assert sorted(method for method, _ in loud.calls) == ["debug"] * 4


def test_a_timeout_that_fires_is_a_per_future_record(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with virtual_time() as clock:
        with (
            Executors.sync()
            .with_poll(lambda descriptors: 0.01)
            .with_timeout(1.0) as executor
        ):
            timed_out = executor.submit(int, 1)
            plain = f_timeout(Future(), 1.0)
            clock.advance(1.0)  # returns once the timeouts have run, logs included
            assert timed_out.cancelled()
            assert plain.cancelled()
        assert library_records(caplog) == []

        caplog.set_level(TRACE, logger="fluent_executors")  # the opt-in
        timed_out = f_timeout(Future(), 1.0)
        clock.advance(1.0)
    assert timed_out.cancelled()
    [record] = library_records(caplog)
    assert record.levelno == TRACE
    assert record.getMessage() == "f_timeout: future not done after 1.0 s; cancelled"


def test_once_is_first_for_one_call_until_reset() -> None:
    once = Once()

    assert [once.first(), once.first()] == [True, False]
    once.reset()
    assert [once.first(), once.first()] == [True, False]


def test_once_is_first_for_one_of_many_threads_asking_at_once() -> None:
    once = Once()
    start = threading.Barrier(8)
    answers: list[bool] = []

    def ask() -> None:
        start.wait(TIMEOUT)
        answers.append(once.first())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)

    assert sorted(answers) == [False] * 7 + [True]


class BreaksAfter(Executor):
    """A pool whose workers die: the first ``calls`` fail with
    ``BrokenExecutor``, and every submit after raises it."""

    def __init__(self, calls: int) -> None:
        self.calls = calls

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> Future[Any]:
        error = BrokenExecutor("the workers are gone")
        if not self.calls:
            raise error
        self.calls -= 1
        future: Future[Any] = Future()
        future.set_exception(error)
        return future


@pytest.mark.parametrize("build", ["throttle", "retry"])
def test_a_broken_delegate_is_logged_once_per_executor(
    build: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Every call fails after: one record, not one each.
    name = f"broken-{build}"  # its records only, whatever other tests left running
    executor = (
        Executors.with_throttle(BreaksAfter(0), 2, name=name)
        if build == "throttle"  # its dispatch finds the delegate broken
        else Executors.with_retry(  # its second attempts do
            BreaksAfter(3), ExceptionRetryPolicy(sleep=0.0), name=name
        )
    )
    with caplog.at_level(logging.WARNING, logger="fluent_executors"):
        futures = [executor.submit(int, "1") for _ in range(3)]
        errors = [future.exception(TIMEOUT) for future in futures]

    assert all(isinstance(error, BrokenExecutor) for error in errors)
    (record,) = [r for r in library_records(caplog) if name in r.getMessage()]
    assert "the delegate is broken: not logged again" in record.getMessage()
    assert record.exc_info is not None
