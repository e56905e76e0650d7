"""Process pools as delegates: the standard ProcessPoolExecutor (with the
``forkserver`` and ``spawn`` start methods that the docs recommend) and loky's
reusable executor, under retry and poll.

Callables run in other processes, so they are module-level functions and count
their calls in files.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import pytest

from fluent_executors import Executors, PollDescriptor, ProcessPoolExecutor

TIMEOUT = 60.0  # seconds: worker processes start slowly on a loaded machine

START_METHODS = [
    method
    for method in ("forkserver", "spawn")
    if method in multiprocessing.get_all_start_methods()
]


def fail_until(path: str, failures: int, value: Any) -> Any:
    """Raise ``OSError`` on the first ``failures`` calls (counted in a file)."""
    counter = Path(path)
    with counter.open("a") as file:
        file.write("x")
    calls = len(counter.read_text())
    if calls <= failures:
        raise OSError(f"transient failure {calls}")
    return value


def process_id(_: Any = None) -> int:
    return os.getpid()


def resolve_doubled(descriptors: list[PollDescriptor[Any]]) -> float:
    for descriptor in descriptors:
        descriptor.yield_result(descriptor.result * 2)
    return 0.01


# -- the pools ------------------------------------------------------------------------


def standard_pool(method: str) -> Callable[[], Executor]:
    def make() -> Executor:
        context = multiprocessing.get_context(method)
        return Executors.process_pool(2, mp_context=context, name="procs")

    return make


def loky_pool() -> Executor:
    loky = pytest.importorskip("loky")
    executor: Executor = loky.get_reusable_executor(max_workers=2)
    return executor


POOLS = {f"process_pool_{method}": standard_pool(method) for method in START_METHODS}
POOLS["loky"] = loky_pool


@pytest.fixture(params=list(POOLS))
def pool(request: pytest.FixtureRequest) -> Iterator[Executor]:
    executor = POOLS[request.param]()
    yield executor
    executor.shutdown(wait=True)


# -- tests ----------------------------------------------------------------------------


def test_callables_run_in_other_processes(pool: Executor):
    pids = {pool.submit(process_id).result(timeout=TIMEOUT) for _ in range(4)}

    assert os.getpid() not in pids


def test_retry_retries_transient_failures(pool: Executor, tmp_path: Path):
    retrying = Executors.with_retry(pool, sleep=0.0, max_attempts=3)

    future = retrying.submit(fail_until, str(tmp_path / "calls"), 2, "done")

    assert future.result(timeout=TIMEOUT) == "done"
    assert len((tmp_path / "calls").read_text()) == 3
    retrying.shutdown()


def test_retry_gives_up_with_the_last_error(pool: Executor, tmp_path: Path):
    retrying = Executors.with_retry(pool, sleep=0.0, max_attempts=2)

    future = retrying.submit(fail_until, str(tmp_path / "calls"), 5, "never")

    with pytest.raises(OSError, match="transient failure 2"):
        future.result(timeout=TIMEOUT)
    retrying.shutdown()


def test_poll_resolves_through_the_poll_function(pool: Executor):
    polling = Executors.with_poll(pool, resolve_doubled, default_interval=0.01)

    futures = [polling.submit(abs, -n) for n in range(4)]

    assert [f.result(timeout=TIMEOUT) for f in futures] == [0, 2, 4, 6]
    polling.shutdown()


@pytest.mark.parametrize("wrap", ["retry", "poll"])
def test_pickling_error_is_reported_through_the_future(pool: Executor, wrap: str):
    wrapped = (
        Executors.with_retry(pool, sleep=0.0)
        if wrap == "retry"
        else Executors.with_poll(pool, resolve_doubled, default_interval=0.01)
    )

    # A lock cannot be pickled: the pool fails the future instead of running it.
    future = wrapped.submit(process_id, threading.Lock())

    error = future.exception(timeout=TIMEOUT)
    assert isinstance(error, (TypeError, pickle.PicklingError))
    assert wrapped.submit(process_id).result(timeout=TIMEOUT) != os.getpid()
    wrapped.shutdown()


@pytest.mark.parametrize("method", START_METHODS)
def test_process_pool_keeps_its_name_down_the_chain(method: str):
    pool = standard_pool(method)()

    chain = Executors.with_timeout(Executors.with_retry(pool), 60.0)

    assert isinstance(pool, ProcessPoolExecutor)
    assert chain.name == "procs"
    chain.shutdown()
