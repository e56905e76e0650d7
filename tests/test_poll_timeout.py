"""PollExecutor's ``poll_timeout`` for a sync poll function (docs/poll.rst, "A poll
that hangs"): a call that overruns is logged at WARNING once and counted; it cannot
be interrupted, so it goes on and its outcome counts."""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any

import pytest

from fluent_executors import Executors, PollDescriptor, PollExecutor

TIMEOUT = 10.0  # seconds: a generous bound for anything that should happen "now"


class Watcher(logging.Handler):
    """Sets ``overran`` at the first poll-timeout warning; keeps every record."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []
        self.overran = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if "cannot be interrupted" in record.getMessage():
            self.overran.set()


def test_an_overrunning_poll_is_logged_once_and_still_resolves() -> None:
    watcher = Watcher()
    logger = logging.getLogger("test_poll_timeout.overrun")
    logger.addHandler(watcher)

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        # Hangs until the watchdog has spoken, then resolves the future: the one
        # call, so that no other call (quick, but maybe not within poll_timeout
        # on a loaded machine) can overrun too.
        assert watcher.overran.wait(TIMEOUT)
        for descriptor in descriptors:
            descriptor.yield_result()
        return 0.0

    with PollExecutor(
        Executors.sync(), poll, logger=logger, poll_timeout=0.01
    ) as executor:
        assert executor.submit(lambda: "t").result(TIMEOUT) == "t"
    overruns = [r for r in watcher.records if "cannot be interrupted" in r.getMessage()]
    assert len(overruns) == 1
    assert overruns[0].levelno == logging.WARNING


def test_a_quick_poll_is_not_logged() -> None:
    watcher = Watcher()
    logger = logging.getLogger("test_poll_timeout.quick")
    logger.addHandler(watcher)

    def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        for descriptor in descriptors:
            descriptor.yield_result()

    with PollExecutor(
        Executors.sync(), poll, logger=logger, poll_timeout=TIMEOUT
    ) as executor:
        assert executor.submit(lambda: 1).result(TIMEOUT) == 1
    assert watcher.records == []


def test_overruns_are_counted_in_the_stats_and_the_metrics() -> None:
    watcher = Watcher()
    logger = logging.getLogger("test_poll_timeout.metrics")
    logger.addHandler(watcher)

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        # One call, which overruns (counted before it is logged) and resolves.
        assert watcher.overran.wait(TIMEOUT)
        for descriptor in descriptors:
            descriptor.yield_result()
        return 0.0

    executor = PollExecutor(
        Executors.sync(),
        poll,
        logger=logger,
        name=f"poll-timeout-{uuid.uuid4().hex[:12]}",  # a tally of its own
        poll_timeout=0.01,
    )
    metrics = executor._counts.metrics
    with executor:
        assert executor.submit(lambda: 1).result(TIMEOUT) == 1
    assert executor.stats().poll_timeouts == 1
    if metrics is not None:  # the same event, recorded where metrics are on
        assert metrics._tally.poll_timeouts == 1


@pytest.mark.parametrize(
    ("value", "exception"),
    [(-1.0, ValueError), (float("nan"), ValueError), ("1", TypeError)],
)
def test_bad_poll_timeouts_are_refused(value: Any, exception: type[Exception]) -> None:
    with pytest.raises(exception, match="poll_timeout"):
        PollExecutor(Executors.sync(), lambda ds: None, poll_timeout=value)
