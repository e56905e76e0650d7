"""PollExecutor with an async cancel function (docs/poll.rst, "Async cancel
functions"): awaited on the poll thread's event loop; ``cancel()`` from another
thread returns its answer, from the poll thread it returns ``False`` and the future
is cancelled once the answer is truthy."""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import CancelledError, Future
from typing import Any

import pytest

from fluent_executors import Executors, PollDescriptor, PollExecutor

TIMEOUT = 10.0  # seconds: a generous bound for anything that should happen "now"


class Remote:
    """Tasks that finish once ``finish`` is set; the poll function reports its
    first poll."""

    def __init__(self) -> None:
        self.polled: Future[None] = Future()
        self.finish = threading.Event()
        self.loops: list[asyncio.AbstractEventLoop] = []
        self.threads: list[threading.Thread] = []

    def poll(self, descriptors: list[PollDescriptor[Any]]) -> float:
        if not self.polled.done():
            self.polled.set_result(None)
        if self.finish.is_set():
            for descriptor in descriptors:
                descriptor.yield_result("done")
        return 0.01

    def cancel_answering(self, answer: Any) -> Any:
        async def cancel(task: str) -> Any:
            self.loops.append(asyncio.get_running_loop())
            self.threads.append(threading.current_thread())
            await asyncio.sleep(0)
            if isinstance(answer, BaseException):
                raise answer
            return answer

        return cancel


@pytest.mark.parametrize("answer", [True, False, 1, 0, "yes", ""])
def test_cancel_from_another_thread_returns_the_coroutines_answer(answer: Any) -> None:
    remote = Remote()
    with PollExecutor(
        Executors.sync(), remote.poll, remote.cancel_answering(answer)
    ) as executor:
        future = executor.submit(str, "t1")
        remote.polled.result(TIMEOUT)

        assert future.cancel() is bool(answer)

        assert future.cancelled() is bool(answer)
        assert remote.threads[0].name.startswith("fluent-executors-poll")
        remote.finish.set()  # a refused cancel: polled on until it finishes
    assert future.cancelled() or future.result(0) == "done"


def test_the_loop_is_the_poll_threads_and_is_closed_at_shutdown() -> None:
    remote = Remote()
    with PollExecutor(
        Executors.sync(), remote.poll, remote.cancel_answering(True)
    ) as executor:
        futures = [executor.submit(str, f"t{i}") for i in range(3)]
        remote.polled.result(TIMEOUT)
        assert all(future.cancel() for future in futures)
    assert len(remote.loops) == 3
    assert all(loop is remote.loops[0] for loop in remote.loops)
    assert remote.loops[0].is_closed()


@pytest.mark.parametrize("error", [KeyError("gone"), KeyboardInterrupt()])
def test_an_async_cancel_function_that_raises_is_logged_and_refuses(
    error: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    remote = Remote()
    with PollExecutor(
        Executors.sync(), remote.poll, remote.cancel_answering(error)
    ) as executor:
        future = executor.submit(str, "t1")
        remote.polled.result(TIMEOUT)

        assert future.cancel() is False

        remote.finish.set()
        assert future.result(TIMEOUT) == "done"
    assert "Exception during cancel of a future of poll executor" in caplog.text
    assert type(error).__name__ in caplog.text


def test_cancel_on_the_poll_thread_schedules_and_cancels_once_answered() -> None:
    remote = Remote()
    answers: list[bool] = []
    cancelled = threading.Event()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        for descriptor in descriptors:
            future = descriptor._future
            if not answers:
                answers.append(future.cancel())  # on the poll thread: cannot wait
                future.add_done_callback(lambda _: cancelled.set())
        return 0.05

    with PollExecutor(
        Executors.sync(), poll, remote.cancel_answering(True)
    ) as executor:
        future = executor.submit(str, "t1")
        assert cancelled.wait(TIMEOUT)
    assert answers == [False]
    assert future.cancelled()
    with pytest.raises(CancelledError):
        future.result(0)


def test_a_done_callback_raising_base_exception_on_cancel_is_contained(
    caplog: pytest.LogCaptureFixture,
) -> None:
    remote = Remote()
    cancelled = threading.Event()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        for descriptor in descriptors:
            future = descriptor._future
            if not cancelled.is_set() and not future.cancelled():
                future.add_done_callback(lambda _: cancelled.set())

                def explode(_: Any) -> None:
                    raise KeyboardInterrupt

                future.add_done_callback(explode)
                future.cancel()
        return 0.05

    with (
        caplog.at_level(logging.ERROR),
        PollExecutor(Executors.sync(), poll, remote.cancel_answering(True)) as executor,
    ):
        future = executor.submit(str, "t1")
        assert cancelled.wait(TIMEOUT)
    assert future.cancelled()


def test_shutdown_with_cancel_futures_awaits_each_answer() -> None:
    remote = Remote()
    executor = PollExecutor(
        Executors.sync(), remote.poll, remote.cancel_answering(True)
    )
    futures = [executor.submit(str, f"t{i}") for i in range(4)]
    remote.polled.result(TIMEOUT)

    executor.shutdown(wait=True, cancel_futures=True)

    assert all(future.cancelled() for future in futures)
    assert not executor._poller._thread.is_alive()  # type: ignore[union-attr]
