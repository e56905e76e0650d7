"""AsyncioExecutor, and awaiting the futures of the library in coroutines."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

import pytest

from fluent_executors import (
    AsyncioExecutor,
    Executors,
    PollDescriptor,
    f_map,
    f_return,
    f_return_cancelled,
    f_return_error,
)
from fluent_executors.testing import ManualExecutor

T = TypeVar("T")
TIMEOUT = 10.0  # seconds: a generous bound for anything that should happen "now"


def example_asyncio(delegate: Executor, **kwargs: Any) -> AsyncioExecutor[Any]:
    """One way to build it, which the tests of every wrapper run
    (``wrapper_doubles.examples``)."""
    return Executors.with_asyncio(delegate, **kwargs)


@pytest.fixture
def thread_pool() -> Iterator[Executor]:
    with Executors.thread_pool(max_workers=2, name="aio") as executor:
        yield executor


def run(coroutine: Any) -> Any:
    """Run ``coroutine`` on a new event loop, failing if it takes too long."""
    return asyncio.run(asyncio.wait_for(coroutine, TIMEOUT))


# -- AsyncioExecutor ------------------------------------------------------------------


def test_submit_in_a_coroutine_returns_an_awaitable_asyncio_future(
    thread_pool: Executor,
) -> None:
    executor = AsyncioExecutor(thread_pool)

    async def main() -> tuple[bool, int]:
        future = executor.submit(pow, 2, 8)
        return isinstance(future, asyncio.Future), await future

    assert run(main()) == (True, 256)


def test_an_error_of_the_callable_is_raised_by_await(thread_pool: Executor) -> None:
    executor = AsyncioExecutor(thread_pool)

    async def main() -> None:
        await executor.submit(int, "not a number")

    with pytest.raises(ValueError, match="not a number"):
        run(main())


def test_with_asyncio_is_chainable_and_keeps_the_name(thread_pool: Executor) -> None:
    executor = Executors.thread_pool(name="chained").with_asyncio()
    with executor:
        assert isinstance(executor, AsyncioExecutor)
        assert executor.name == "chained"
        assert Executors.with_asyncio(executor.delegate).name == "chained"


def test_submit_with_loop_binds_the_future_to_that_loop_from_any_thread(
    thread_pool: Executor,
) -> None:
    executor = AsyncioExecutor(thread_pool)
    loop = asyncio.new_event_loop()
    try:
        future = executor.submit_with_loop(loop, str.upper, "bound")
        assert future.get_loop() is loop
        assert loop.run_until_complete(asyncio.wait_for(future, TIMEOUT)) == "BOUND"
    finally:
        loop.close()


def test_a_loop_given_to_the_constructor_is_used_outside_a_coroutine(
    thread_pool: Executor,
) -> None:
    loop = asyncio.new_event_loop()
    try:
        executor = Executors.with_asyncio(thread_pool, loop=loop)
        assert executor.loop is loop
        future = executor.submit(len, "four")
        assert future.get_loop() is loop
        assert loop.run_until_complete(asyncio.wait_for(future, TIMEOUT)) == 4
    finally:
        loop.close()


def test_submit_outside_a_coroutine_uses_the_loop_set_for_the_thread(
    thread_pool: Executor,
) -> None:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)  # pytest turns a DeprecationWarning into an error
    try:
        future = Executors.with_asyncio(thread_pool).submit(len, "four")

        assert future.get_loop() is loop
        assert loop.run_until_complete(asyncio.wait_for(future, TIMEOUT)) == 4
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def test_submit_in_another_thread_without_a_loop_set_there_raises() -> None:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)  # set for this thread, not the other one
    errors: list[BaseException] = []

    def submit() -> None:
        try:
            AsyncioExecutor(ManualExecutor()).submit(print)
        except RuntimeError as error:
            errors.append(error)

    try:
        thread = threading.Thread(target=submit)
        thread.start()
        thread.join(TIMEOUT)
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    assert len(errors) == 1
    assert "needs an event loop" in str(errors[0])


@pytest.mark.skipif(
    sys.version_info >= (3, 14),
    reason="from 3.14 on submit() asks asyncio.get_event_loop(), which makes no loop",
)
def test_the_default_policy_keeps_the_set_loop_where_submit_reads_it() -> None:
    # Before 3.14, submit() reads the loop set for the thread without
    # asyncio.get_event_loop(), which would make one (with a warning on 3.12 and
    # 3.13): this fails if asyncio's internals change.
    policy = asyncio.get_event_loop_policy()
    assert isinstance(policy, asyncio.DefaultEventLoopPolicy)
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        assert policy._local._loop is loop  # type: ignore[attr-defined]
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    assert policy._local._loop is None  # type: ignore[attr-defined]


def test_submit_without_a_loop_outside_a_coroutine_raises_runtime_error() -> None:
    delegate = ManualExecutor()
    with pytest.raises(RuntimeError, match="needs an event loop"):
        AsyncioExecutor(delegate).submit(print)
    assert delegate.futures == []


def test_cancelling_the_asyncio_future_cancels_the_delegates() -> None:
    delegate = ManualExecutor()
    executor = AsyncioExecutor(delegate)

    async def main() -> None:
        future = executor.submit(print)
        future.cancel()
        await asyncio.sleep(0)  # let the loop run the cancellation callbacks

    run(main())
    assert delegate.futures[0].cancelled()


def test_a_cancelled_delegate_future_raises_cancelled_error_in_await() -> None:
    delegate = ManualExecutor()
    executor = AsyncioExecutor(delegate)

    async def main() -> None:
        future = executor.submit(print)
        delegate.futures[0].cancel()
        await future

    with pytest.raises(asyncio.CancelledError):
        run(main())


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((object(),), "^delegate must be an executor"),
        ((ManualExecutor(), "loop"), "^loop must be an asyncio event loop"),
        ((ManualExecutor(), None, None, 3), "^name must be a str"),
    ],
)
def test_a_bad_constructor_argument_raises_type_error_naming_it(
    arguments: tuple[Any, ...], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        AsyncioExecutor(*arguments)


def test_submit_checks_its_arguments() -> None:
    executor = AsyncioExecutor(ManualExecutor())
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(TypeError, match=r"^fn must be callable"):
            executor.submit_with_loop(loop, "print")
        with pytest.raises(TypeError, match=r"^loop must be"):
            executor.submit_with_loop(None, print)
    finally:
        loop.close()


def test_shutdown_refuses_submits_and_shuts_down_the_delegate() -> None:
    delegate = ManualExecutor()
    executor = AsyncioExecutor(delegate)
    executor.shutdown(wait=False)
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(RuntimeError, match="after shutdown"):
            executor.submit_with_loop(loop, print)
    finally:
        loop.close()
    assert delegate.shutdowns == [(False, False)]


# -- awaiting the library's futures ---------------------------------------------------


def test_a_future_of_the_library_can_be_awaited() -> None:
    async def main() -> str:
        return await f_map(f_return(3), str)

    assert run(main()) == "3"


def test_awaiting_does_not_block_the_event_loop() -> None:
    async def main() -> int:
        pending: Future[int] = Future()
        # Only a loop that is not blocked by the await runs this callback.
        asyncio.get_running_loop().call_soon(pending.set_result, 41)
        return await f_map(pending, lambda x: x + 1)

    assert run(main()) == 42


def test_awaiting_a_failed_future_raises_its_exception() -> None:
    async def main() -> None:
        await f_return_error(KeyError("gone"))

    with pytest.raises(KeyError, match="gone"):
        run(main())


def test_awaiting_a_cancelled_future_raises_cancelled_error() -> None:
    async def main() -> None:
        await f_return_cancelled()

    with pytest.raises(asyncio.CancelledError):
        run(main())


def test_cancelling_the_awaiting_task_cancels_the_future_and_its_input() -> None:
    pending: Future[int] = Future()
    mapped = f_map(pending, str)

    async def main() -> None:
        task = asyncio.ensure_future(_await(mapped))
        await asyncio.sleep(0)  # the task starts awaiting
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    assert mapped.cancelled()
    assert pending.cancelled()


async def _await(future: Any) -> Any:
    return await future


def test_awaiting_outside_an_event_loop_raises_runtime_error() -> None:
    with pytest.raises(RuntimeError, match="no running event loop"):
        f_return(1).__await__()


def test_the_poll_executor_can_be_driven_from_a_coroutine() -> None:
    finished: set[str] = set()
    lock = threading.Lock()

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        with lock:
            done = set(finished)
        for descriptor in descriptors:
            if descriptor.result in done:
                descriptor.yield_result(f"{descriptor.result} finished")
        return 0.01

    executor = Executors.sync(name="aio").with_poll(poll)

    async def main() -> list[str]:
        futures = [executor.submit(str, name) for name in ("a", "b")]
        with lock:
            finished.update({"a", "b"})
        return list(await asyncio.gather(*futures))

    try:
        assert run(main()) == ["a finished", "b finished"]
    finally:
        executor.shutdown()


def test_map_waits_for_the_delegates_results_in_order(thread_pool: Executor) -> None:
    executor = AsyncioExecutor(thread_pool)

    results = executor.map(pow, [2, 3, 4], [2, 2, 2], buffersize=2)

    assert list(results) == [4, 9, 16]
    assert executor.stats().submitted == 3  # (each counted done by a callback)
