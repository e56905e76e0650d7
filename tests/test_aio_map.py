"""AsyncExecutor.map on both anyio backends: results in input order, at most
``buffersize`` runs ahead of the consumer, the runs left cancelled when the
consumer leaves, a failed run's exception where its result would be."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from fluent_executors.aio import AsyncExecutors

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> Any:
    return request.param


async def test_results_come_in_input_order_whatever_order_the_runs_end() -> None:
    releases = {i: anyio.Event() for i in range(6)}

    async def wait_then_double(i: int) -> int:
        await releases[i].wait()
        return 2 * i

    executor = AsyncExecutors.inline()
    results: list[int] = []
    with anyio.fail_after(10):
        async with executor.map(wait_then_double, range(6)) as mapped:
            for i in reversed(range(6)):  # the last input ends first
                releases[i].set()
            async for result in mapped:
                results.append(result)
    assert results == [0, 2, 4, 6, 8, 10]


async def test_several_iterables_are_zipped_and_plain_functions_run() -> None:
    executor = AsyncExecutors.thread_pool(2)
    with anyio.fail_after(10):
        async with executor.map(pow, [2, 3, 4], [1, 2, 3]) as results:
            assert [r async for r in results] == [2, 9, 64]


async def test_at_most_buffersize_runs_ahead_of_the_consumer() -> None:
    running = peak = 0
    started: list[int] = []

    async def work(i: int) -> int:
        nonlocal running, peak
        started.append(i)
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0)
        running -= 1
        return i

    executor = AsyncExecutors.inline()
    consumed = 0
    with anyio.fail_after(10):
        async with executor.map(work, itertools.count(), buffersize=3) as results:
            async for result in results:
                assert result == consumed
                consumed += 1
                assert len(started) - consumed <= 3  # started and not taken
                if consumed == 50:
                    break
    assert peak <= 3
    assert len(started) <= 50 + 3


async def test_a_huge_input_without_buffersize_never_holds_the_loop() -> None:
    ticks = 0
    read = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.lowlevel.checkpoint()

    def inputs() -> Any:  # endless, but for the ticker (or a bound, on failure)
        nonlocal read
        while ticks < 3 and read < 20_000:
            read += 1
            yield read

    async def nothing(value: int) -> None:
        pass

    executor = AsyncExecutors.inline()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(ticker)
            async with executor.map(nothing, inputs()) as results:
                async for _ in results:
                    pass
            group.cancel_scope.cancel()
    assert ticks >= 3
    assert read < 20_000  # the ticker ran while the input was read


async def test_leaving_the_block_cancels_the_runs_left() -> None:
    cancelled: list[int] = []
    polled = anyio.Event()

    def poll(descriptors: list[Any]) -> float:
        for descriptor in descriptors:
            if descriptor.result == 0:
                descriptor.yield_result("first")
        polled.set()
        return 0.01

    executor = AsyncExecutors.inline().with_poll(poll, cancelled.append)

    async def start(i: int) -> int:
        return i

    with anyio.fail_after(10):
        async with executor, executor.map(start, range(5), buffersize=5) as results:
            async for result in results:
                assert result == "first"  # type: ignore[comparison-overlap]
                await polled.wait()
                break
    assert sorted(cancelled) == [1, 2, 3, 4]


async def test_a_failed_run_raises_where_its_result_would_be() -> None:
    async def half(i: int) -> float:
        if i == 2:
            raise ZeroDivisionError("the third")
        return i / 2

    executor = AsyncExecutors.inline()
    results: list[float] = []

    async def consume() -> None:
        async with executor.map(half, range(5), buffersize=2) as mapped:
            async for result in mapped:
                results.append(result)

    with pytest.raises(ZeroDivisionError, match="the third"):
        await consume()
    assert results == [0.0, 0.5]


async def test_the_bodys_exception_leaves_the_block_as_raised() -> None:
    async def one(i: int) -> int:
        return i

    async def consume() -> None:
        async with executor.map(one, range(3)) as mapped:
            async for _ in mapped:
                raise LookupError("the consumer's")

    executor = AsyncExecutors.inline()
    with pytest.raises(LookupError, match="the consumer's"):
        await consume()


def test_bad_arguments_get_a_clear_error() -> None:
    executor = AsyncExecutors.inline()
    with pytest.raises(TypeError, match="fn must be callable"):
        executor.map(42, [1])  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="buffersize must be at least 1"):
        executor.map(abs, [1], buffersize=0)
    with pytest.raises(TypeError, match="buffersize"):
        executor.map(abs, [1], buffersize=1.5)  # type: ignore[call-overload]
