"""Which futures of a chain share one lock (wrapper.DelegatingExecutor._lock_to_share):
a map or timeout future shares the lock of the library's future it follows only where
the delegate made that future for the call; and concurrent.futures.wait() on futures
of two chains, in two threads, in both orders, ends."""

from __future__ import annotations

import threading
from concurrent.futures import Executor, Future, wait
from typing import Any

import pytest

from fluent_executors import Executors, MapExecutor, TimeoutExecutor


def one(x: int = 1) -> int:
    return x


def test_a_chain_on_the_library_pool_shares_the_lock_of_the_future_it_follows() -> None:
    gate = threading.Event()
    with Executors.thread_pool(max_workers=1) as pool:
        blocker = pool.submit(gate.wait)  # the chain's future stays pending
        chain = pool.with_retry().with_map(one).with_timeout(60)
        future: Any = chain.submit(one)
        mapped = future._upstream
        retried = mapped._upstream
        assert future._lock is mapped._lock is retried._lock
        attempt = retried._upstream
        assert attempt._lock is not retried._lock  # made before its attempt
        gate.set()
        assert future.result(timeout=10) == 1
        assert blocker.result(timeout=10) is True


class _Caching(Executor):
    """A delegate that returns one future of the library to every caller."""

    def __init__(self, future: Future[Any]) -> None:
        self.future = future

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        return self.future


@pytest.mark.parametrize("layer", ["map", "timeout"])
def test_a_future_from_another_delegate_is_not_given_its_lock(layer: str) -> None:
    with Executors.thread_pool(max_workers=1) as pool:
        gate = threading.Event()
        held = pool.submit(gate.wait)  # a future its caller holds, too
        delegate = _Caching(held)
        executor: Any = (
            MapExecutor(delegate, one)
            if layer == "map"
            else TimeoutExecutor(delegate, 60)
        )
        first = executor.submit(one)
        second = executor.submit(one)
        assert first._lock is not held._lock
        assert second._lock is not held._lock
        assert first._lock is not second._lock
        gate.set()
        wait([first, second, held], timeout=10)
        assert first.done()
        assert second.done()


def test_wait_on_chains_in_two_threads_in_both_orders_ends() -> None:
    with Executors.thread_pool(max_workers=2) as pool:
        chain = pool.with_map(one).with_timeout(60)
        gates = [threading.Event() for _ in range(2)]
        futures = [chain.submit(gate.wait) for gate in gates]
        done: list[bool] = []

        def waiter(order: list[Any]) -> None:
            finished, _ = wait(order, timeout=10)
            done.append(len(finished) == 2)

        threads = [
            threading.Thread(target=waiter, args=(futures,)),
            threading.Thread(target=waiter, args=(futures[::-1],)),
        ]
        for thread in threads:
            thread.start()
        for gate in gates:
            gate.set()
        for thread in threads:
            thread.join(timeout=10)
        assert done == [True, True]
