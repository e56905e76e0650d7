"""CancelOnShutdownExecutor: shutdown() cancels every future not yet done."""

from __future__ import annotations

import logging
import random
import threading
from concurrent.futures import CancelledError, Executor, wait
from typing import Any

import pytest
from wrapper_doubles import (
    TIMEOUT,
    BrokenSubmitExecutor,
    ManualExecutor,
    invalid_state_errors,
    raise_,
)

from fluent_executors import CancelOnShutdownExecutor, Executors


def example_cancel_on_shutdown(
    delegate: Executor, **kwargs: Any
) -> CancelOnShutdownExecutor[Any]:
    """One way to build it, which the tests of every wrapper run
    (``wrapper_doubles.examples``)."""
    return Executors.with_cancel_on_shutdown(delegate, **kwargs)


def ident(value: int) -> int:
    return value


def test_shutdown_cancels_the_futures_not_yet_started():
    delegate = ManualExecutor()
    executor = CancelOnShutdownExecutor(delegate)
    futures = [executor.submit(ident, n) for n in range(3)]

    executor.shutdown()

    assert all(f.cancelled() for f in futures)
    assert all(f.cancelled() for f in delegate.futures)
    assert delegate.shutdowns == [(True, False)]


def test_shutdown_lets_running_work_finish_and_waits_for_it():
    started = threading.Event()
    release = threading.Event()

    def task() -> str:
        started.set()
        release.wait(TIMEOUT)
        return "finished"

    executor = Executors.thread_pool(max_workers=1).with_cancel_on_shutdown()
    running = executor.submit(task)
    queued = executor.submit(ident, 1)
    assert started.wait(TIMEOUT)

    stopper = threading.Thread(target=executor.shutdown)
    stopper.start()
    release.set()
    stopper.join(TIMEOUT)

    assert running.result(0) == "finished"
    assert queued.cancelled()


def test_done_futures_are_left_alone_and_forgotten():
    delegate = ManualExecutor()
    executor = CancelOnShutdownExecutor(delegate)
    finished = executor.submit(ident, 0)
    delegate.finish(0)

    executor.shutdown()

    assert finished.result(0) == 0
    assert len(executor._outstanding) == 0


def test_results_and_exceptions_arrive_unchanged():
    error = ValueError("boom")
    with Executors.thread_pool(max_workers=2).with_cancel_on_shutdown() as executor:
        ok = executor.submit(ident, 7)
        failed = executor.submit(raise_, error)

        assert ok.result(TIMEOUT) == 7
        assert failed.exception(TIMEOUT) is error


def test_cancel_of_pending_work_cancels_the_delegate_future():
    delegate = ManualExecutor()
    future = CancelOnShutdownExecutor(delegate).submit(ident, 0)

    assert future.cancel() is True
    assert future.cancelled()
    assert delegate.futures[0].cancelled()


def test_delegate_submit_error_is_raised_from_submit_and_nothing_is_tracked():
    executor = CancelOnShutdownExecutor(BrokenSubmitExecutor())

    with pytest.raises(OSError, match="broken"):
        executor.submit(ident, 0)
    assert len(executor._outstanding) == 0


def test_submit_after_shutdown_raises_and_double_shutdown_is_harmless():
    delegate = ManualExecutor()
    executor = CancelOnShutdownExecutor(delegate)
    executor.shutdown()
    executor.shutdown(wait=False)

    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(ident, 0)
    assert delegate.shutdowns == [(True, False), (False, False)]


def test_shutdown_cancels_through_a_chain_and_reaches_the_innermost_executor():
    pool = Executors.thread_pool(max_workers=1)
    gate = threading.Event()
    executor = pool.with_throttle(1).with_cancel_on_shutdown()
    blocker = executor.submit(gate.wait, TIMEOUT)
    queued = [executor.submit(ident, n) for n in range(3)]

    stopper = threading.Thread(target=executor.shutdown)
    stopper.start()
    for future in queued:  # cancelled from the stopper thread
        with pytest.raises(CancelledError):
            future.result(TIMEOUT)
    gate.set()
    stopper.join(TIMEOUT)

    assert all(f.cancelled() for f in queued)
    assert blocker.result(0) is True
    with pytest.raises(RuntimeError):
        pool.submit(ident, 0)


def test_thousands_of_submits_with_random_cancels_all_end(caplog):
    rng = random.Random(7)
    with caplog.at_level(logging.WARNING):
        executor = Executors.thread_pool(max_workers=4).with_cancel_on_shutdown()
        futures = []
        for n in range(3000):
            futures.append(executor.submit(ident, n))
            if rng.random() < 0.3:
                rng.choice(futures).cancel()
        executor.shutdown()

        not_done = wait(futures, timeout=TIMEOUT).not_done

    assert not not_done
    assert all(f.cancelled() or f.result() == n for n, f in enumerate(futures))
    assert invalid_state_errors(caplog.records) == []


def test_more_executors_positional_signature_still_works():
    logger = logging.getLogger("mine")
    executor = CancelOnShutdownExecutor(ManualExecutor(), logger, "named")

    assert executor.name == "named"


def test_bad_delegate_raises_type_error():
    with pytest.raises(TypeError, match="delegate must be an executor"):
        CancelOnShutdownExecutor(object())  # type: ignore[arg-type]
