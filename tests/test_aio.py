"""fluent_executors.aio on both anyio backends (docs/aio.rst): batched polling on
the caller's event loop, structured cancellation, and the chain methods.

Time: on trio the tests run on a mock clock that jumps to the next deadline
(``MockClock(autojump_threshold=0)``), so hours of intervals pass instantly; on
asyncio, which has none, every duration is scaled down by ``UNIT``. The tests
count calls and order, never durations."""

from __future__ import annotations

import inspect
import itertools
import logging
import math
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from trio.testing import MockClock

from fluent_executors import (
    ExceptionRetryPolicy,
    FluentExecutor,
    PollDescriptor,
    PollStats,
    RateLimitStats,
)
from fluent_executors.aio import AsyncExecutor, AsyncExecutors


@pytest.fixture(
    params=[
        pytest.param(("asyncio", {}), id="asyncio"),
        pytest.param(("trio", {"clock": MockClock(autojump_threshold=0)}), id="trio"),
    ]
)
def anyio_backend(request: pytest.FixtureRequest) -> Any:
    backend, options = request.param
    if backend == "trio":  # a clock of its own for each test
        options = {"clock": MockClock(autojump_threshold=0)}
    return backend, options


@pytest.fixture
def unit(anyio_backend: Any) -> float:
    """One "second" of a test: a real one on trio's mock clock, 10 ms on asyncio."""
    return 1.0 if anyio_backend[0] == "trio" else 0.01


pytestmark = pytest.mark.anyio

Runner = Callable[[AsyncExecutor[Any], list[Any]], Any]


async def run_all(executor: AsyncExecutor[Any], ids: list[Any]) -> dict[Any, Any]:
    """Run ``start(id)`` for every id at once, in the executor's block; the
    results by id."""
    results: dict[Any, Any] = {}

    async def start(task_id: Any) -> Any:
        return task_id

    async def one(task_id: Any) -> None:
        results[task_id] = await executor.run(start, task_id)

    async with executor, anyio.create_task_group() as group:
        for task_id in ids:
            group.start_soon(one, task_id)
    return results


def done_after(polls: int) -> Callable[[list[PollDescriptor[Any]]], None]:
    """A poll function resolving each descriptor at its ``polls``-th poll."""

    def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        for descriptor in descriptors:
            if descriptor.polls >= polls:
                descriptor.yield_result(f"done {descriptor.result}")

    return poll


async def test_one_poll_call_per_round_for_many_concurrent_runs(unit: float) -> None:
    calls: list[int] = []
    finish = done_after(3)

    def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        # Each call passes every run being polled.
        assert len(descriptors) == executor.stats().polled  # type: ignore[attr-defined]
        calls.append(len(descriptors))
        finish(descriptors)

    executor = AsyncExecutors.inline().with_poll(poll, default_interval=5 * unit)
    results = await run_all(executor, list(range(200)))
    assert results == {i: f"done {i}" for i in range(200)}
    # The first run is polled as it arrives, the others join the next round.
    assert sum(calls) == 3 * 200
    assert len(calls) <= 4
    stats = executor.stats()
    assert isinstance(stats, PollStats)
    assert (stats.polls, stats.done, stats.polled) == (len(calls), 200, 0)


async def test_max_batch_splits_each_round(unit: float) -> None:
    calls: list[int] = []
    finish = done_after(2)

    def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        calls.append(len(descriptors))
        finish(descriptors)

    executor = AsyncExecutors.inline().with_poll(
        poll, default_interval=unit, max_batch=4
    )
    await run_all(executor, list(range(10)))
    assert max(calls) == 4
    assert sum(calls) == 2 * 10  # each run is passed twice
    assert len(calls) <= 2 * math.ceil(10 / 4) + 2


async def test_a_deferred_descriptor_is_left_out_until_its_time(unit: float) -> None:
    seen: list[tuple[float, list[Any]]] = []
    deferred_at: list[float] = []

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        now = anyio.current_time()
        seen.append((now, sorted(d.result for d in descriptors)))
        for descriptor in descriptors:
            if descriptor.result == "slow" and descriptor.polls == 1:
                descriptor.defer(100 * unit)
                deferred_at.append(now)
            elif descriptor.polls >= 2:
                descriptor.yield_result(descriptor.result)
        return unit

    executor = AsyncExecutors.inline().with_poll(poll)
    results = await run_all(executor, ["a", "b", "slow"])
    assert results == {"a": "a", "b": "b", "slow": "slow"}
    later = [(t, batch) for t, batch in seen if t > deferred_at[0]]
    assert [batch for _, batch in later if "slow" in batch] == [["slow"]]
    assert all(
        t >= deferred_at[0] + 100 * unit for t, batch in later if "slow" in batch
    )
    assert len(seen) <= 5  # no call with nothing due while "slow" waits


async def test_async_poll_and_cancel_functions_run_on_the_callers_loop(
    unit: float,
) -> None:
    loop_thread = threading.get_ident()
    threads: set[int] = set()

    async def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        threads.add(threading.get_ident())
        await anyio.sleep(0)
        for descriptor in descriptors:
            descriptor.yield_result(descriptor.result * 2)

    executor = AsyncExecutors.inline().with_poll(poll, default_interval=unit)
    assert await run_all(executor, [1, 2, 3]) == {1: 2, 2: 4, 3: 6}
    assert threads == {loop_thread}


async def test_poll_errors_are_absorbed_by_the_poll_retry_policy(unit: float) -> None:
    calls = 0

    def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        nonlocal calls
        calls += 1
        if calls <= 3:
            raise ConnectionError("service down")
        for descriptor in descriptors:
            descriptor.yield_result(descriptor.result)

    executor = AsyncExecutors.inline().with_poll(
        poll,
        default_interval=unit,
        poll_retry_policy=ExceptionRetryPolicy(
            max_attempts=10, sleep=unit, exponent=2.0, max_sleep=3600 * unit
        ),
    )
    assert await run_all(executor, [1, 2]) == {1: 1, 2: 2}
    assert calls == 4
    assert executor.stats().poll_errors == 3  # type: ignore[attr-defined]


async def test_without_a_policy_a_poll_error_fails_the_runs_of_that_call(
    unit: float,
) -> None:
    def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        raise ConnectionError("service down")

    executor = AsyncExecutors.inline().with_poll(poll, default_interval=unit)

    async def start() -> str:
        return "task"

    async with executor:
        with pytest.raises(ConnectionError, match="service down"):
            await executor.run(start)


async def test_cancelling_one_run_cancels_only_its_remote_task(unit: float) -> None:
    cancelled: list[Any] = []
    cancelled_at: list[float] = []
    polled: list[tuple[float, list[Any]]] = []

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        polled.append((anyio.current_time(), sorted(d.result for d in descriptors)))
        for descriptor in descriptors:
            if descriptor.polls >= 5:
                descriptor.yield_result(descriptor.result)
        return unit

    async def cancel(task_id: Any) -> bool:
        cancelled_at.append(anyio.current_time())
        await anyio.sleep(0)
        cancelled.append(task_id)
        return True

    executor = AsyncExecutors.inline().with_poll(poll, cancel)
    results: dict[Any, Any] = {}

    async def start(task_id: Any) -> Any:
        return task_id

    async def one(task_id: Any) -> None:
        results[task_id] = await executor.run(start, task_id)

    async def doomed() -> None:
        with anyio.move_on_after(2.5 * unit):
            await executor.run(start, "doomed")
        results["doomed"] = "cancelled"

    async with executor, anyio.create_task_group() as group:
        group.start_soon(one, "a")
        group.start_soon(one, "b")
        group.start_soon(doomed)
    assert cancelled == ["doomed"]
    assert results == {"a": "a", "b": "b", "doomed": "cancelled"}
    polled_before = [batch for t, batch in polled if t < cancelled_at[0]]
    polled_after = [batch for t, batch in polled if t >= cancelled_at[0]]
    assert any("doomed" in batch for batch in polled_before)
    assert polled_after  # the others were polled on, without it
    assert all("doomed" not in batch for batch in polled_after)


async def test_a_cancel_function_that_fails_is_logged_and_the_cancel_goes_on(
    unit: float, caplog: pytest.LogCaptureFixture
) -> None:
    def cancel(task_id: Any) -> bool:
        raise RuntimeError("cannot cancel")

    executor = AsyncExecutors.inline().with_poll(lambda ds: None, cancel, unit)

    async def start() -> str:
        return "task"

    with caplog.at_level(logging.ERROR, "fluent_executors.aio"):
        async with executor:
            with anyio.move_on_after(3 * unit) as scope:
                await executor.run(start)
    assert scope.cancelled_caught
    assert "its cancel function raised" in caplog.text


async def test_timeout_raises_timeout_error_and_cancels_the_remote_task(
    unit: float,
) -> None:
    cancelled: list[Any] = []
    executor = (
        AsyncExecutors.inline()
        .with_poll(lambda ds: None, cancelled.append, default_interval=unit)
        .with_timeout(30 * unit)
    )

    async def start() -> str:
        return "remote-1"

    async with executor:
        with pytest.raises(TimeoutError):
            await executor.run(start)
    assert cancelled == ["remote-1"]


async def test_retry_with_a_policy(unit: float, anyio_backend: Any) -> None:
    attempts: list[float] = []

    async def flaky() -> str:
        attempts.append(anyio.current_time())
        if len(attempts) < 4:
            raise ConnectionError("try again")
        return "ok"

    executor = AsyncExecutors.inline().with_retry(
        ExceptionRetryPolicy(max_attempts=5, sleep=unit, exponent=2.0)
    )
    assert await executor.run(flaky) == "ok"
    assert len(attempts) == 4
    if anyio_backend[0] == "trio":  # the mock clock: the delays exactly
        gaps = [b - a for a, b in itertools.pairwise(attempts)]
        assert gaps == [unit, 2 * unit, 4 * unit]

    give_up = AsyncExecutors.inline().with_retry(max_attempts=2, sleep=unit)
    attempts.clear()
    with pytest.raises(ConnectionError):
        await give_up.run(flaky)
    assert len(attempts) == 2


async def test_throttle_runs_at_most_count_at_once(unit: float) -> None:
    running = peak = 0

    async def work() -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(unit)
        running -= 1

    executor = AsyncExecutors.inline().with_throttle(2)
    async with anyio.create_task_group() as group:
        for _ in range(7):
            group.start_soon(executor.run, work)
    assert peak == 2


# On trio's mock clock only: the time a run reads as it starts is the limiter's
# exactly; on a real clock another thread may hold the GIL between the two.
@pytest.mark.parametrize(
    "anyio_backend", [("trio", {"clock": MockClock(autojump_threshold=0)})]
)
async def test_rate_limit_starts_at_most_max_calls_per_period(
    anyio_backend: Any,
) -> None:
    unit = 1.0
    starts: list[float] = []

    async def work() -> None:
        starts.append(anyio.current_time())

    executor = AsyncExecutors.inline().with_rate_limit(2, 10 * unit)
    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(executor.run, work)
    starts.sort()
    assert starts[2] - starts[0] >= 10 * unit
    assert starts[4] - starts[2] >= 10 * unit


async def test_map_applies_a_plain_or_async_function() -> None:
    async def double(value: int) -> int:
        return value * 2

    async def one() -> int:
        return 1

    executor = AsyncExecutors.inline().with_map(lambda r: r + 1).with_map(double)
    assert await executor.run(one) == 4


async def test_the_thread_pool_runs_plain_functions_in_worker_threads() -> None:
    main = threading.get_ident()
    executor = AsyncExecutors.thread_pool(max_workers=3)
    assert await executor.run(threading.get_ident) != main


async def test_each_layer_names_its_kind_in_stats_and_repr_and_is_public() -> None:
    base = AsyncExecutors.inline("x")
    layers = {
        "inline": base,
        "threadpool": AsyncExecutors.thread_pool(2, "x"),
        "poll": base.with_poll(done_after(1)),
        "retry": base.with_retry(),
        "timeout": base.with_timeout(1.0),
        "throttle": base.with_throttle(1),
        "ratelimit": base.with_rate_limit(1),
        "map": base.with_map(str, name="m"),
    }
    assert {kind: layer.stats().kind for kind, layer in layers.items()} == {
        kind: kind for kind in layers
    }
    assert [repr(layer) for layer in layers.values()] == [
        "<Inline async executor 'x'>",
        "<ThreadPool async executor 'x'>",
        "<Poll async executor 'x'>",
        "<Retry async executor 'x'>",
        "<Timeout async executor 'x'>",
        "<Throttle async executor 'x'>",
        "<RateLimit async executor 'x'>",
        "<Map async executor 'm'>",
    ]
    # Each is an AsyncExecutor, whose public home help() and repr() show.
    assert {type(layer) for layer in layers.values()} == {AsyncExecutor}
    assert (
        AsyncExecutor.__module__ == AsyncExecutors.__module__ == "fluent_executors.aio"
    )


async def test_leaving_the_block_waits_for_the_runs_under_way(unit: float) -> None:
    leaving = False
    all_started = anyio.Event()
    started: list[int] = []

    def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        for descriptor in descriptors:
            if leaving:  # only once the block is being left
                descriptor.yield_result(f"done {descriptor.result}")

    executor = AsyncExecutors.inline().with_poll(poll, default_interval=unit)
    results: list[Any] = []

    async def start(task_id: int) -> int:
        started.append(task_id)
        if len(started) == 5:
            all_started.set()
        return task_id

    async def one(task_id: int) -> None:
        results.append(await executor.run(start, task_id))

    async with anyio.create_task_group() as group:
        async with executor:
            for task_id in range(5):
                group.start_soon(one, task_id)
            await all_started.wait()
            leaving = True
        # The block has ended: every run has.
        assert sorted(results) == [f"done {i}" for i in range(5)]
    with pytest.raises(RuntimeError, match="or has ended"):
        await executor.run(start, 9)


async def test_bad_input_gets_a_clear_error() -> None:
    inline = AsyncExecutors.inline()
    with pytest.raises(TypeError, match="poll_fn must be callable"):
        inline.with_poll("not a function")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cancel_fn must be callable"):
        inline.with_poll(print, cancel_fn=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="default_interval must be >= 0"):
        inline.with_poll(print, default_interval=-1)
    with pytest.raises(ValueError, match="max_batch must be at least 1"):
        inline.with_poll(print, max_batch=0)
    with pytest.raises(ValueError, match="timeout must be >= 0"):
        inline.with_timeout(-1)
    with pytest.raises(ValueError, match="count must be at least 1"):
        inline.with_throttle(0)
    with pytest.raises(ValueError, match="period must be > 0"):
        inline.with_rate_limit(1, 0)
    with pytest.raises(TypeError, match="retry_policy must be a RetryPolicy"):
        inline.with_retry("always")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_workers must be at least 1"):
        AsyncExecutors.thread_pool(max_workers=0)
    with pytest.raises(TypeError, match="fn must be callable"):
        await inline.run(42)  # type: ignore[call-overload]
    polled = inline.with_poll(print)
    with pytest.raises(RuntimeError, match="enter 'async with executor:'"):
        await polled.run(print)
    async with polled:
        pass
    with pytest.raises(RuntimeError, match="or has ended"):
        await polled.run(print)


async def test_an_inline_chain_starts_no_thread(unit: float) -> None:
    before = set(threading.enumerate())
    started: list[threading.Thread] = []
    original = threading.Thread.start

    def spy(thread: threading.Thread) -> None:  # pragma: no cover - must not run
        started.append(thread)
        original(thread)

    threading.Thread.start = spy  # type: ignore[method-assign]
    try:
        executor = (
            AsyncExecutors.inline()
            .with_poll(done_after(2), default_interval=unit)
            .with_retry(max_attempts=2)
            .with_timeout(math.inf)
            .with_throttle(10)
        )
        assert len(await run_all(executor, list(range(20)))) == 20
    finally:
        threading.Thread.start = original  # type: ignore[method-assign]
    assert started == []
    # No thread is new (one of an earlier test, an idle anyio worker, may end).
    assert set(threading.enumerate()) - before == set()


def test_importing_the_package_never_imports_anyio() -> None:
    code = "import sys, fluent_executors; assert 'anyio' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    "method",
    [
        "with_poll",
        "with_retry",
        "with_timeout",
        "with_map",
        "with_throttle",
        "with_rate_limit",
    ],
)
def test_a_chain_method_takes_the_threaded_ones_arguments(method: str) -> None:
    # The names, kinds and defaults of the threaded chain method (docs/aio.rst),
    # or some of them: poll and retry take them all; map's function is
    # required (the threaded one may have only an error function).
    threaded = inspect.signature(getattr(FluentExecutor, method)).parameters
    own = inspect.signature(getattr(AsyncExecutor, method)).parameters
    for name, parameter in own.items():
        assert name in threaded, (method, name)
        if (method, name) != ("with_map", "fn"):
            assert parameter.kind == threaded[name].kind, (method, name)
            assert parameter.default == threaded[name].default, (method, name)
    if method in ("with_poll", "with_retry"):
        assert list(own) == list(threaded)


async def test_an_async_poll_function_over_poll_timeout_is_cancelled_and_fails(
    unit: float,
) -> None:
    async def poll(descriptors: list[PollDescriptor[Any]]) -> None:
        await anyio.sleep_forever()

    executor = AsyncExecutors.inline().with_poll(
        poll, default_interval=unit, poll_timeout=10 * unit
    )

    async def start() -> str:
        return "task"

    async with executor:
        with pytest.raises(TimeoutError):
            await executor.run(start)
    assert executor.stats().poll_errors == 1  # type: ignore[attr-defined]


async def test_a_cancel_function_is_bounded_by_poll_timeout(
    unit: float, caplog: pytest.LogCaptureFixture
) -> None:
    async def cancel(task_id: Any) -> bool:
        await anyio.sleep_forever()
        raise AssertionError  # pragma: no cover

    executor = AsyncExecutors.inline().with_poll(
        lambda ds: None, cancel, unit, poll_timeout=5 * unit
    )

    async def start() -> str:
        return "task"

    with caplog.at_level(logging.ERROR, "fluent_executors.aio"):
        async with executor:
            with anyio.move_on_after(2 * unit):
                await executor.run(start)
    assert "took longer than poll_timeout" in caplog.text


async def test_a_descriptor_resolved_from_another_thread_wakes_its_run(
    unit: float,
) -> None:
    async def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        for descriptor in descriptors:
            await anyio.to_thread.run_sync(descriptor.yield_result, "from a thread")
        return math.inf  # not again: the run must wake from the resolution alone

    executor = AsyncExecutors.inline().with_poll(poll)
    assert await run_all(executor, [1, 2]) == {1: "from a thread", 2: "from a thread"}


@pytest.mark.parametrize(
    "anyio_backend", [("trio", {"clock": MockClock(autojump_threshold=0)})]
)
async def test_hours_of_polling_pass_instantly_on_the_mock_clock(
    anyio_backend: Any,
) -> None:
    # The example of docs/aio.rst, "Testing with a mock clock".
    def poll(descriptors: list[PollDescriptor[int]]) -> float:
        for descriptor in descriptors:
            if descriptor.age >= 3 * 3600:
                descriptor.yield_result(descriptor.result)
        return 600.0

    async def start() -> int:
        return 7

    executor = AsyncExecutors.inline().with_poll(poll)
    async with executor:
        assert await executor.run(start) == 7
    assert executor.stats().polls == 3 * 6 + 1  # type: ignore[attr-defined]


async def test_an_inner_layer_runs_while_the_outer_block_is_open(unit: float) -> None:
    inner = AsyncExecutors.inline().with_poll(done_after(1), default_interval=unit)
    outer = inner.with_map(str.upper)

    async def start() -> str:
        return "x"

    async with outer:
        assert await inner.run(start) == "done x"
        assert await outer.run(start) == "DONE X"
        with pytest.raises(RuntimeError, match="started by another block"):
            async with inner.with_retry():
                pass  # pragma: no cover
    with pytest.raises(RuntimeError, match="or has ended"):
        await inner.run(start)
    async with inner.with_retry():  # once the outer block has ended
        assert await inner.run(start) == "done x"


async def test_retry_honours_before_sleep_and_max_duration(
    unit: float, anyio_backend: Any
) -> None:
    slept: list[tuple[int, float]] = []
    attempts = 0

    async def always_fails() -> None:
        nonlocal attempts
        attempts += 1
        raise ConnectionError("down")

    executor = AsyncExecutors.inline().with_retry(
        max_attempts=100,
        sleep=4 * unit,
        exponent=1.0,
        max_duration=10 * unit,
        before_sleep=lambda attempt, future, delay: slept.append((attempt, delay)),
    )
    with pytest.raises(ConnectionError):
        await executor.run(always_fails)
    # before_sleep is called before each retry, with its delay.
    assert slept == [(attempt, 4 * unit) for attempt in range(1, attempts)]
    if anyio_backend[0] == "trio":  # the mock clock: the times exactly
        # Attempts at 0, 4 and 8: a fourth, at 12, would start after max_duration.
        assert attempts == 3
    else:  # a real clock: a loaded machine may start each attempt later, and
        # max_duration then ends the retries sooner; never later than the third
        # (8 of the 10 units gone, and the next delay 4), long before max_attempts.
        assert 1 <= attempts <= 3


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_asyncio_task_cancel_cancels_the_remote_task(anyio_backend: Any) -> None:
    import asyncio

    cancelled: list[Any] = []
    polled = anyio.Event()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        polled.set()
        return 0.01

    executor = AsyncExecutors.inline().with_poll(poll, cancelled.append)

    async def start() -> str:
        return "remote-7"

    async with executor:
        task = asyncio.ensure_future(executor.run(start))
        await polled.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert cancelled == ["remote-7"]
    assert executor.stats().cancelled == 1


class TooManyRequests(Exception):
    """A 429 answer with its ``Retry-After`` header."""

    def __init__(self, retry_after: str) -> None:
        super().__init__(f"429, Retry-After: {retry_after}")
        self.headers = {"Retry-After": retry_after}


async def test_retry_reads_retry_after_in_ascii_digits_only(
    unit: float, anyio_backend: Any
) -> None:
    attempts: list[float] = []
    hints = iter(["\u0663\u0660", "2"])  # 30 in Arabic-Indic digits: no hint

    async def limited() -> str:
        attempts.append(anyio.current_time())
        hint = next(hints, None)
        if hint is not None:
            raise TooManyRequests(hint)
        return "ok"

    executor = AsyncExecutors.inline().with_retry(max_attempts=3, sleep=unit)
    with anyio.fail_after(10):
        assert await executor.run(limited) == "ok"
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    if anyio_backend[0] == "trio":  # the mock clock: the delays exactly
        assert gaps == [unit, 2.0]  # the backoff, then the ASCII hint
    else:
        assert gaps[0] < 2.0 <= gaps[1]


class Overloaded(Exception):
    """A 429 answer, with no hint."""

    status_code = 429


async def test_an_adaptive_rate_limit_halves_the_rate_after_too_many(
    unit: float, anyio_backend: Any
) -> None:
    period = 20 * unit
    starts: list[float] = []

    async def refused() -> None:
        raise Overloaded

    async def work() -> None:
        starts.append(anyio.current_time())

    executor = AsyncExecutors.inline().with_rate_limit(
        4,
        period,
        adaptive=True,
        increase=0.0,  # the successes raise it not
    )
    with pytest.raises(Overloaded):
        await executor.run(refused)
    async with anyio.create_task_group() as group:
        for _ in range(6):
            group.start_soon(executor.run, work)
    starts.sort()
    # Two starts per period now, not four (on a real clock, a start is read a
    # little after the limiter's time: half a period is far from none).
    least = period if anyio_backend[0] == "trio" else period / 2
    assert all(b - a >= least for a, b in zip(starts, starts[2:], strict=False))


async def test_blocks_on_the_same_loop_keep_the_window_and_a_pause(
    unit: float, anyio_backend: Any
) -> None:
    """A new block on the loop of the last keeps its rate-limit window and its
    ``Retry-After`` pause (another loop only starts the chain afresh)."""
    period, hint = 50 * unit, 100 * unit  # hint: 100 s on trio, 1 s on asyncio
    times: list[float] = []

    async def limited() -> None:
        times.append(anyio.current_time())
        raise TooManyRequests(f"{hint:g}")

    async def work() -> None:
        times.append(anyio.current_time())

    windowed = AsyncExecutors.inline().with_rate_limit(1, period)
    paused = AsyncExecutors.inline().with_rate_limit(10, period, adaptive=True)
    with anyio.fail_after(10 * hint):
        for _ in range(2):
            async with windowed:
                await windowed.run(work)
        async with paused:
            with pytest.raises(TooManyRequests):
                await paused.run(limited)
        async with paused:
            await paused.run(work)
    # On a real clock a sleep may end a little early: half is far from none.
    slack = 1.0 if anyio_backend[0] == "trio" else 0.5
    assert times[1] - times[0] >= period * slack
    assert times[3] - times[2] >= hint * slack


async def test_an_adaptive_rate_limit_pauses_for_a_hint_up_to_max_pause(
    unit: float,
) -> None:
    times: list[float] = []

    async def limited() -> None:
        times.append(anyio.current_time())
        raise TooManyRequests("3600")

    async def work() -> None:
        times.append(anyio.current_time())

    executor = AsyncExecutors.inline().with_rate_limit(
        10, 100 * unit, adaptive=True, max_pause=5 * unit
    )
    with pytest.raises(TooManyRequests):
        await executor.run(limited)
    with anyio.fail_after(3600 * unit / 2):
        await executor.run(work)
    assert times[1] - times[0] >= 5 * unit


async def test_a_rate_limit_reports_its_queue_rate_cuts_and_pause(
    unit: float,
) -> None:
    """``stats()`` of an async rate limit: a :class:`RateLimitStats`, as the
    threaded one's; *pending* and *queued* the runs held back."""
    period = 100 * unit
    executor = AsyncExecutors.inline().with_rate_limit(
        2, period, adaptive=True, increase=0.0
    )
    hint = TooManyRequests(f"{period:g}")

    async def refused() -> None:
        raise hint

    async def work() -> None:
        pass

    fresh = executor.stats()
    assert isinstance(fresh, RateLimitStats)
    assert (fresh.rate, fresh.cuts, fresh.paused, fresh.queued) == (2.0, 0, False, 0)
    with pytest.raises(TooManyRequests):
        await executor.run(refused)  # the rate cut to 1, starts paused
    async with anyio.create_task_group() as group:
        for _ in range(2):
            group.start_soon(executor.run, work)
        with anyio.fail_after(period / 2):  # (before the pause ends)
            while executor.stats().queued < 2 or not executor.stats().paused:
                await anyio.lowlevel.checkpoint()
        held = executor.stats()
    done = executor.stats()

    assert (held.rate, held.cuts, held.queued, held.pending) == (1.0, 1, 2, 2)
    assert held.submitted == held.pending + held.running + held.done == 3
    assert (done.queued, done.running, done.done, done.failed) == (0, 0, 3, 1)
    assert not done.paused


def test_the_poll_layers_counts_take_a_lock_where_no_gil_makes_them_atomic() -> None:
    # Descriptors may be resolved from any thread: without a GIL, the layer's
    # done/failed/cancelled counts need the locked counts.
    from _fluent_executors.counts import Counts, LockedCounts
    from _fluent_executors.stdlib_compat import LOCK_FREE

    executor = AsyncExecutors.inline().with_poll(lambda descriptors: 1.0)

    (layer,) = executor._polls
    assert type(layer.driver._counts) is (Counts if LOCK_FREE else LockedCounts)
