"""The Executors facade, the base executors and chaining."""

from __future__ import annotations

import math
import os
import threading
import time
from concurrent.futures import Executor, Future
from typing import Any

import pytest

from fluent_executors import (
    Executors,
    FluentExecutor,
    PollDescriptor,
    PollExecutor,
    ProcessPoolExecutor,
    SyncExecutor,
    ThreadPoolExecutor,
)

TIMEOUT = 10.0


def resolve_all(descriptors: list[PollDescriptor[Any]]) -> None:
    for descriptor in descriptors:
        descriptor.yield_result()


def square(value: int) -> int:
    return value * value


def test_thread_pool_runs_callables_in_named_threads():
    with Executors.thread_pool(max_workers=2, name="workers") as executor:
        name = executor.submit(lambda: threading.current_thread().name).result()

    assert isinstance(executor, ThreadPoolExecutor)
    assert executor.name == "workers"
    assert name.startswith("fluent-executors-workers")


def test_thread_pool_keeps_standard_arguments():
    ran: list[int] = []
    executor = Executors.thread_pool(
        1, thread_name_prefix="mine", initializer=ran.append, initargs=(1,)
    )
    with executor:
        name = executor.submit(lambda: threading.current_thread().name).result()

    assert name.startswith("mine")
    assert ran == [1]


def test_process_pool_runs_picklable_callables():
    with Executors.process_pool(1, name="procs") as executor:
        assert executor.submit(square, 7).result(timeout=60) == 49

    assert isinstance(executor, ProcessPoolExecutor)
    assert executor.name == "procs"


def test_process_pool_with_poll_resolves_through_poll_fn():
    with Executors.process_pool(1).with_poll(resolve_all) as executor:
        assert executor.submit(square, 3).result(timeout=60) == 9


def test_sync_runs_in_the_calling_thread():
    executor = Executors.sync(name="inline")

    future = executor.submit(threading.get_ident)

    assert isinstance(executor, SyncExecutor)
    assert future.result(timeout=0) == threading.get_ident()
    assert executor.name == "inline"


def test_sync_captures_exceptions_in_the_future():
    error = ValueError("boom")

    def fail() -> None:
        raise error

    assert Executors.sync().submit(fail).exception(timeout=0) is error


def test_sync_refuses_submit_after_shutdown():
    executor = Executors.sync()
    executor.shutdown()
    executor.shutdown()

    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(int)


@pytest.mark.parametrize(
    "build",
    [
        lambda: Executors.thread_pool(name=1),
        lambda: Executors.process_pool(name=None),
        lambda: Executors.sync(name=b"x"),
    ],
)
def test_base_executors_reject_a_non_str_name(build):
    with pytest.raises(TypeError, match="name"):
        build()


def test_with_poll_chains_and_returns_a_new_executor():
    pool = Executors.thread_pool(max_workers=2, name="publisher")

    executor = pool.with_poll(resolve_all, default_interval=0.01)

    assert isinstance(executor, PollExecutor)
    assert isinstance(executor, FluentExecutor)
    assert executor is not pool
    assert executor.delegate is pool
    assert executor.name == "publisher"  # the name passes down the chain
    assert pool.submit(square, 2).result(timeout=TIMEOUT) == 4  # untouched
    assert executor.submit(square, 5).result(timeout=TIMEOUT) == 25
    executor.shutdown()


def test_executors_with_poll_takes_any_executor():
    class Plain(Executor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
            future: Future[Any] = Future()
            future.set_result(fn(*args, **kwargs))
            return future

    executor = Executors.with_poll(Plain(), resolve_all, None, 0.01)

    assert executor.submit(square, 4).result(timeout=TIMEOUT) == 16
    assert executor.name == "default"
    executor.shutdown()


def test_with_poll_passes_every_argument(caplog):
    import logging

    cancelled: list[Any] = []

    def poll(descriptors: list[PollDescriptor[Any]]) -> float:
        return math.inf

    logger = logging.getLogger("my.poller")
    executor = Executors.sync().with_poll(
        poll, lambda task: cancelled.append(task) or True, 0.25, logger
    )
    future = executor.submit(square, 2)

    assert future.cancel()
    assert cancelled == [4]
    assert executor._poller.core.default_interval == 0.25
    assert executor._poller._logger.wrapped is logger
    executor.shutdown()


def test_shutdown_of_the_outer_executor_shuts_down_the_inner_ones():
    pool = Executors.thread_pool(max_workers=1)
    outer = pool.with_poll(resolve_all).with_poll(resolve_all)

    outer.shutdown()

    with pytest.raises(RuntimeError):
        pool.submit(int)


def test_with_block_shuts_down_the_whole_chain():
    pool = Executors.thread_pool(max_workers=1)
    with pool.with_poll(resolve_all, default_interval=0.01) as executor:
        future = executor.submit(square, 6)

    assert future.result(timeout=0) == 36
    with pytest.raises(RuntimeError):
        pool.submit(int)


def test_futures_outlive_their_executor():
    executor = Executors.thread_pool(1).with_poll(resolve_all, default_interval=0.01)
    future = executor.submit(square, 8)
    executor.shutdown(wait=False)
    del executor

    assert future.result(timeout=TIMEOUT) == 64


def test_no_library_thread_survives_shutdown():
    before = set(threading.enumerate())
    executor = Executors.thread_pool(2).with_poll(resolve_all, default_interval=0.01)
    for future in [executor.submit(square, i) for i in range(20)]:
        future.result(timeout=TIMEOUT)

    executor.shutdown(wait=True)

    assert [t for t in threading.enumerate() if t not in before] == []


@pytest.mark.skipif(os.name != "posix", reason="fork start method")
def test_thread_pool_threads_are_named_after_default_name():
    with Executors.thread_pool(1) as executor:
        name = executor.submit(lambda: threading.current_thread().name).result()
    assert name.startswith("fluent-executors-default")


@pytest.mark.parametrize(
    "build", [Executors.thread_pool, Executors.process_pool], ids=["thread", "process"]
)
def test_pool_futures_are_the_librarys_and_awaitable(build):
    import asyncio

    from fluent_executors import ProxyFuture

    async def submit_and_await(executor: Executor) -> int:
        future = executor.submit(abs, -5)
        assert isinstance(future, ProxyFuture)
        return await future

    with build(1) as executor:
        assert asyncio.run(submit_and_await(executor)) == 5


def test_thread_pool_future_cancel_follows_the_standard_rules():
    started = threading.Event()
    release = threading.Event()
    with Executors.thread_pool(1) as executor:
        running = executor.submit(lambda: started.set() or release.wait(TIMEOUT))
        assert started.wait(TIMEOUT)
        queued = executor.submit(int)

        assert running.running()
        assert not running.cancel()
        assert queued.cancel()
        assert queued.cancelled()
        release.set()


CHAINS = {
    "poll": lambda pool: pool.with_poll(resolve_all, default_interval=0.01),
    "poll.timeout.retry": lambda pool: (
        pool.with_poll(resolve_all, default_interval=0.01).with_timeout(60).with_retry()
    ),
    "every wrapper": lambda pool: (
        pool.with_poll(resolve_all, default_interval=0.01)
        .with_timeout(60)
        .with_retry()
        .with_map(str)
        .with_throttle(2)
        .with_rate_limit(100)
        .with_cancel_on_shutdown()
        .with_flat_map(lambda value: Executors.sync().submit(str, value))
    ),
}


@pytest.mark.parametrize("build", CHAINS.values(), ids=CHAINS.keys())
def test_a_used_chain_is_freed_without_the_garbage_collector(build):
    # No reference cycle between futures and executors: dropping the last reference
    # frees the chain at once, and its poll thread can end.
    import gc
    import weakref

    pool = Executors.thread_pool(2)
    gc.disable()
    try:
        executor = build(pool)
        future = executor.submit(square, 3)
        future.result(timeout=TIMEOUT)
        executor_ref, future_ref = weakref.ref(executor), weakref.ref(future)
        del executor, future
        # The poll thread holds the executor until the end of the round that
        # resolved the future, which may still be under way: wait for it to let go
        # (polling a state, not waiting out a guess).
        deadline = time.monotonic() + TIMEOUT
        while (executor_ref(), future_ref()) != (None, None):
            if time.monotonic() > deadline:
                break
            time.sleep(0.001)

        assert executor_ref() is None
        assert future_ref() is None
    finally:
        gc.enable()
        pool.shutdown()


def test_a_subclass_override_of_a_facade_method_stays_in_place() -> None:
    # A facade method is made on its first lookup, and put on Executors itself: a
    # lookup through a subclass (super() in an override) must not replace the
    # subclass's own method.
    calls: list[str] = []

    class Mine(Executors):
        @classmethod
        def with_retry(cls, delegate: Any, *args: Any, **kwargs: Any) -> Any:
            calls.append("override")
            return super().with_retry(delegate, *args, **kwargs)

    for _ in range(2):
        with Mine.with_retry(Executors.sync()) as executor:
            assert executor.submit(pow, 2, 3).result() == 8
    assert calls == ["override", "override"]
    assert Mine.with_map is Executors.with_map
