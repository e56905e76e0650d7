"""fluent_executors.aio and the event loop it runs on, on both anyio backends:
the library never holds the loop, descriptors resolve from any thread, a
cancellation nobody asked for stays contained, one loop at a time (and one after
another), the ``async with`` block keeps the body's exception and waits for the
runs of inner layers, and an executor embedded in another async context manager
is entered again after it left.

These tests run on real clocks (a poll function returning 0 never lets trio's mock
clock move); each waits on events, never on a bare sleep."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, NoReturn

import anyio
import anyio.lowlevel
import pytest

from fluent_executors import ExceptionRetryPolicy, PollDescriptor
from fluent_executors.aio import AsyncExecutor, AsyncExecutors

if sys.version_info < (3, 11):
    from exceptiongroup import (  # type: ignore[import-not-found, unused-ignore]
        BaseExceptionGroup,
    )

pytestmark = pytest.mark.anyio


@pytest.fixture(
    params=[
        pytest.param(("asyncio", {}), id="asyncio"),
        pytest.param(("trio", {}), id="trio"),
    ]
)
def anyio_backend(request: pytest.FixtureRequest) -> Any:
    return request.param


async def start(task_id: Any = "task") -> Any:
    return task_id


async def spurious_cancellation(backend: str) -> NoReturn:
    """Raise the backend's cancellation exception without being cancelled: an
    awaited ``asyncio.Future`` that someone cancelled; a ``trio.Cancelled`` caught
    in a scope of its own and raised again outside it."""
    if backend == "asyncio":
        future = asyncio.get_running_loop().create_future()
        future.cancel()
        await future
    caught: BaseException | None = None
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            await anyio.lowlevel.checkpoint()
        except anyio.get_cancelled_exc_class() as error:
            caught = error
    assert caught is not None
    raise caught


# -- 1. the loop is never held ---------------------------------------------------------


HELD = 100_000  # poll calls in a row without the loop letting another task run


def poll_asking_for(kind: str, calls: list[int]) -> Any:
    """A poll function of ``kind`` that asks for no delay (0, a negative delay, or
    0 from a coroutine that never awaits); at its ``HELD``-th call it fails its
    runs, so that a loop held by the library ends the test instead of hanging
    it."""

    def count(descriptors: list[PollDescriptor[Any]]) -> None:
        calls.append(1)
        if len(calls) == HELD:
            for descriptor in descriptors:
                descriptor.yield_exception(AssertionError("the loop was held"))

    def zero(descriptors: list[PollDescriptor[Any]]) -> float:
        count(descriptors)
        return 0

    def negative(descriptors: list[PollDescriptor[Any]]) -> float:
        count(descriptors)
        return -1.0

    async def never_awaits(descriptors: list[PollDescriptor[Any]]) -> float:
        count(descriptors)
        return 0

    return {"zero": zero, "negative": negative, "never_awaits": never_awaits}[kind]


@pytest.mark.parametrize("kind", ["zero", "negative", "never_awaits"])
async def test_a_poll_function_asking_for_no_delay_lets_fail_after_fire(
    kind: str,
) -> None:
    calls: list[int] = []
    executor = AsyncExecutors.inline().with_poll(poll_asking_for(kind, calls))
    ticks = 0

    async def ticker(scope: anyio.CancelScope) -> None:
        nonlocal ticks
        while ticks < 3:
            await anyio.sleep(0.001)
            ticks += 1
        scope.deadline = anyio.current_time()  # the loop ran us: fail_after, fire now

    async def block() -> None:
        with anyio.fail_after(5) as scope:  # generous: a descheduled process passes
            async with executor, anyio.create_task_group() as group:
                group.start_soon(ticker, scope)
                await executor.run(start)

    with pytest.raises(TimeoutError):
        await block()
    assert ticks == 3
    assert len(calls) < HELD


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_retries_without_delay_pass_a_checkpoint(anyio_backend: str) -> None:
    attempts = 0

    async def fails_at_once() -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 100_000:
            raise KeyError("the loop was held")
        raise ConnectionError("again")

    executor = AsyncExecutors.inline().with_retry(
        ExceptionRetryPolicy(max_attempts=10**9, sleep=0.0, exponent=1.0)
    )
    with pytest.raises(TimeoutError):
        with anyio.fail_after(0.05):
            await executor.run(fails_at_once)
    assert attempts < 100_000


async def test_ten_thousand_runs_polled_without_delay_never_hold_the_loop() -> None:
    """The library's own share of the loop: a poll function that does nothing
    and asks for no delay, 10,000 runs polled, and a ticker beside them whose
    longest gap is read on the loop thread's CPU clock (time.thread_time), which
    another process holding the CPU does not move. The runs are started 20 at a
    time, in steps of the test's own (anyio's start_soon is the program's share,
    about half a millisecond for 20), and the collector is off while the gaps
    are measured: its pauses are the program's, not the library's. Measured:
    4 to 11 ms on asyncio and trio, on a shared 2-core machine."""
    runs, measured_rounds = 10_000, 200
    resolve = False

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        if resolve:
            for descriptor in descriptors:
                descriptor.yield_result()
        return 0

    executor = AsyncExecutors.inline().with_poll(poll)
    gaps: list[float] = []
    measuring = True

    async def ticker() -> None:
        last = time.thread_time()
        while measuring:
            await anyio.sleep(0.001)
            now = time.thread_time()
            gaps.append(now - last)
            last = now

    gc.disable()
    try:
        async with executor, anyio.create_task_group() as group:
            group.start_soon(ticker)
            for first in range(0, runs, 20):
                for task_id in range(first, first + 20):
                    group.start_soon(executor.run, start, task_id)
                await anyio.lowlevel.checkpoint()
            while executor.stats().polled < runs:  # type: ignore[attr-defined]
                await anyio.sleep(0.001)
            polls = executor.stats().polls  # type: ignore[attr-defined]
            while executor.stats().polls < polls + measured_rounds:  # type: ignore[attr-defined]
                await anyio.sleep(0.001)
            measuring = False
            longest = max(gaps)
            resolve = True
    finally:
        gc.enable()
    assert executor.stats().done == runs
    assert longest < 0.05, f"the loop was held for {longest * 1000:.1f} ms"


# -- 2. resolving from any thread ------------------------------------------------------


def resolve_in_threads(descriptors: list[PollDescriptor[Any]]) -> None:
    """Resolve every descriptor from worker threads while the loop waits for them
    (a deadlock, if a thread's hand-back waits on the loop, ends the wait after
    5 seconds and fails the runs)."""
    pool = ThreadPoolExecutor(4)
    futures = [pool.submit(d.yield_result, d.result * 2) for d in descriptors]
    _, pending = wait(futures, timeout=5)
    pool.shutdown(wait=False)
    if pending:
        raise AssertionError("the worker threads waited on the loop")


@pytest.mark.parametrize("kind", ["plain", "coroutine"])
async def test_descriptors_resolved_from_worker_threads_in_the_poll_function(
    kind: str,
) -> None:
    async def coroutine_poll(descriptors: list[PollDescriptor[Any]]) -> None:
        resolve_in_threads(descriptors)

    poll = resolve_in_threads if kind == "plain" else coroutine_poll
    executor = AsyncExecutors.inline().with_poll(poll)
    results: list[Any] = []

    async def one(task_id: int) -> None:
        results.append(await executor.run(start, task_id))

    with anyio.fail_after(10):
        async with executor, anyio.create_task_group() as group:
            for task_id in range(20):
                group.start_soon(one, task_id)
    assert sorted(results) == [2 * i for i in range(20)]


# -- 3. a cancellation nobody asked for ------------------------------------------------


async def test_a_poll_function_raising_a_cancellation_fails_only_its_runs(
    anyio_backend: Any,
) -> None:
    async def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        await spurious_cancellation(anyio_backend[0])

    executor = AsyncExecutors.inline().with_poll(poll, default_interval=0.01)
    body_ended = False
    with anyio.fail_after(10):
        async with executor:
            with pytest.raises(RuntimeError, match="not cancelled") as caught:
                await executor.run(start)
            body_ended = True
    assert body_ended
    assert isinstance(caught.value.__cause__, anyio.get_cancelled_exc_class())
    assert executor.stats().poll_errors == 1  # type: ignore[attr-defined]


async def test_a_cancellation_raised_by_the_poll_function_is_retried_by_policy(
    anyio_backend: Any,
) -> None:
    calls = 0

    async def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            await spurious_cancellation(anyio_backend[0])
        for descriptor in descriptors:
            descriptor.yield_result("done")

    executor = AsyncExecutors.inline().with_poll(
        poll,
        default_interval=0.01,
        poll_retry_policy=ExceptionRetryPolicy(max_attempts=3, sleep=0.01),
    )
    with anyio.fail_after(10):
        async with executor:
            assert await executor.run(start) == "done"
    assert calls == 2


async def test_a_cancel_function_raising_a_cancellation_is_logged_and_contained(
    anyio_backend: Any, caplog: pytest.LogCaptureFixture
) -> None:
    polled = anyio.Event()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        polled.set()
        return 0.01

    async def cancel(task_id: Any) -> bool:
        await spurious_cancellation(anyio_backend[0])

    executor = AsyncExecutors.inline().with_poll(poll, cancel)
    after: list[str] = []
    with caplog.at_level(logging.ERROR, "fluent_executors.aio"):
        with anyio.fail_after(10):
            async with executor:
                with anyio.CancelScope() as scope:
                    async with anyio.create_task_group() as group:

                        async def cancel_once_polled() -> None:
                            await polled.wait()
                            scope.cancel()

                        group.start_soon(cancel_once_polled)
                        await executor.run(start)
                assert scope.cancelled_caught
                after.append("the body went on")
    assert after == ["the body went on"]
    assert "its cancel function raised" in caplog.text


# -- 4. one loop at a time; one loop after another -------------------------------------


async def test_run_from_another_thread_than_the_blocks_fails_at_once(
    anyio_backend: Any,
) -> None:
    executor = AsyncExecutors.inline().with_poll(returns_none_slowly)
    outcome: list[BaseException] = []

    def in_a_thread() -> None:
        try:
            anyio.run(executor.run, start, backend=anyio_backend[0])
        except BaseException as error:  # the thread's own loop: its outcome
            outcome.append(error)

    with anyio.fail_after(10):
        async with executor:
            await anyio.to_thread.run_sync(in_a_thread)
    assert len(outcome) == 1
    assert isinstance(outcome[0], RuntimeError), outcome
    assert "another thread" in str(outcome[0])


def returns_none_slowly(descriptors: list[PollDescriptor[Any]]) -> float:
    return 3600.0


async def test_a_run_in_flight_binds_a_chain_to_its_loop(anyio_backend: Any) -> None:
    executor = AsyncExecutors.inline().with_throttle(2)
    release = threading.Event()
    outcome: list[BaseException] = []

    async def holds() -> None:
        await anyio.to_thread.run_sync(release.wait)

    def in_a_thread() -> None:
        try:
            anyio.run(executor.run, start, backend=anyio_backend[0])
        except BaseException as error:
            outcome.append(error)
        finally:
            release.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(executor.run, holds)
            await anyio.sleep(0)
            await anyio.to_thread.run_sync(in_a_thread)
    assert len(outcome) == 1
    assert isinstance(outcome[0], RuntimeError), outcome
    assert "another thread" in str(outcome[0])


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_two_threads_at_once_never_both_take_the_chain(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    executor = AsyncExecutors.inline()
    layer = executor._layers[0]  # its check, where both threads are made to meet
    checked = layer.busy
    barrier = threading.Barrier(2, timeout=1.0)  # met only if the check is unlocked

    def busy_once_both_check() -> bool:
        busy = checked()  # read by both threads before either goes on
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait()
        return busy

    monkeypatch.setattr(layer, "busy", busy_once_both_check)
    one_ended = threading.Event()
    entered: list[int] = []
    outcome: list[BaseException | None] = []

    async def work() -> None:
        entered.append(1)
        if len(entered) == 1:  # the first run holds the chain till the other ends
            await anyio.to_thread.run_sync(one_ended.wait, 10)

    def in_a_thread() -> None:
        try:
            anyio.run(executor.run, work, backend=backend)
            outcome.append(None)
        except BaseException as error:  # the thread's own loop: its outcome
            outcome.append(error)
        finally:
            one_ended.set()

    threads = [threading.Thread(target=in_a_thread) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert len(outcome) == 2
    errors = [error for error in outcome if error is not None]
    assert len(errors) == 1, outcome
    assert isinstance(errors[0], RuntimeError), outcome
    assert "one executor serves one event loop at a time" in str(errors[0])


def test_an_executor_built_once_serves_one_loop_after_another() -> None:
    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        for descriptor in descriptors:
            descriptor.yield_result(descriptor.result + 1)
        return 0.01

    executor = (
        AsyncExecutors.thread_pool(2)
        .with_throttle(2)
        .with_rate_limit(3, 0.05)
        .with_map(lambda value: value)
    )

    def identity(value: int) -> int:
        return value

    async def plain_chain() -> list[int]:
        with anyio.fail_after(10):
            return [await executor.run(identity, i) for i in range(5)]

    async def polled_chain() -> list[int]:
        polled = AsyncExecutors_inline_poll.with_rate_limit(3, 0.05)
        with anyio.fail_after(10):
            async with polled:
                return [await polled.run(start, i) for i in range(5)]

    AsyncExecutors_inline_poll = AsyncExecutors.inline().with_poll(poll)
    for backend in ["asyncio", "trio", "asyncio", "trio"]:
        assert anyio.run(plain_chain, backend=backend) == list(range(5))
        assert anyio.run(polled_chain, backend=backend) == [i + 1 for i in range(5)]


# -- 5. the block keeps the body's exception -------------------------------------------


def polled_executor() -> AsyncExecutor[Any]:
    return AsyncExecutors.inline().with_poll(returns_none_slowly)


@pytest.mark.parametrize(
    "error", [LookupError("gone"), SystemExit(3), KeyboardInterrupt()]
)
async def test_the_block_lets_the_bodys_exception_out_as_raised(
    error: BaseException,
) -> None:
    executor = polled_executor()
    with pytest.raises(type(error)) as caught:
        async with executor:
            raise error
    assert caught.value is error
    if isinstance(error, SystemExit):
        assert error.code == 3


async def test_the_block_raises_a_group_when_body_and_poll_loop_both_failed() -> None:
    executor = polled_executor()
    driver = executor._layer.driver  # type: ignore[attr-defined]

    async def broken_loop() -> None:
        raise ValueError("the poll loop broke")

    driver.loop = broken_loop

    async def block() -> None:
        async with executor:
            try:
                await anyio.sleep_forever()
            finally:
                raise LookupError("the body failed")

    with pytest.raises(BaseExceptionGroup) as caught:
        await block()
    kinds = sorted(type(e).__name__ for e in caught.value.exceptions)
    assert kinds == ["LookupError", "ValueError"]


# -- 6. inner layers' runs are waited for ----------------------------------------------


async def test_the_block_waits_for_the_runs_of_an_inner_layer() -> None:
    leaving = False
    polled = anyio.Event()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        polled.set()
        for descriptor in descriptors:
            if leaving:
                descriptor.yield_result("done")
        return 0.01

    inner = AsyncExecutors.inline().with_poll(poll)
    outer = inner.with_retry()
    results: list[Any] = []

    async def through_inner() -> None:
        results.append(await inner.run(start))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            async with outer:
                group.start_soon(through_inner)
                await polled.wait()
                leaving = True
            assert results == ["done"]


# -- 8. embedding ----------------------------------------------------------------------


class Client:
    """A client that keeps its executor inside its own async context manager."""

    def __init__(self) -> None:
        def poll(descriptors: list[PollDescriptor[Any]]) -> float:
            for descriptor in descriptors:
                descriptor.yield_result(f"done {descriptor.result}")
            return 0.01

        self._executor = AsyncExecutors.inline().with_poll(poll).with_retry()

    async def __aenter__(self) -> Client:
        await self._executor.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        return await self._executor.__aexit__(*exc_info)

    async def publish(self, task_id: int) -> Any:
        return await self._executor.run(start, task_id)


async def test_an_embedded_executor_is_entered_again_after_it_left() -> None:
    client = Client()
    with anyio.fail_after(10):
        for round_ in range(3):
            async with client:
                assert await client.publish(round_) == f"done {round_}"
        with pytest.raises(LookupError):
            async with client:
                raise LookupError("the client's own")
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(client)
            assert await client.publish(9) == "done 9"


async def test_an_executor_is_in_one_block_at_a_time() -> None:
    executor = polled_executor()
    async with executor:
        with pytest.raises(RuntimeError, match="already"):
            async with executor:
                pass  # pragma: no cover


def test_the_names_an_async_program_needs_are_importable_from_aio() -> None:
    import fluent_executors
    import fluent_executors.aio as aio

    for name in [
        "PollDescriptor",
        "ExceptionRetryPolicy",
        "RetryPolicy",
        "PollStats",
        "ExecutorStats",
        "RateLimitStats",
        "retry_after",
    ]:
        assert getattr(aio, name) is getattr(fluent_executors, name), name
        assert name in aio.__all__
