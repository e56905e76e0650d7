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
import sys
import threading
import time
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


# -- map, and stopping the workers (the standard pool's API of Python 3.14) ------------


def forkserver_pool() -> ProcessPoolExecutor:
    context = multiprocessing.get_context(START_METHODS[0])
    return Executors.process_pool(2, mp_context=context, name="procs")


def test_map_sends_chunks_and_keeps_the_order_with_a_buffersize() -> None:
    with forkserver_pool() as pool:
        results = pool.map(pow, range(10), [2] * 10, chunksize=3, buffersize=2)

        assert list(results) == [n**2 for n in range(10)]
        # One submit per chunk: ceil(10 / 3).
        assert pool.stats().submitted == 4


def test_closing_maps_iterator_submits_nothing_more() -> None:
    # A generator, as the standard process pool's map returns: it has close().
    with forkserver_pool() as pool:
        results = pool.map(pow, range(100), [2] * 100, chunksize=2, buffersize=2)

        assert next(results) == 0
        submitted = pool.stats().submitted  # the first two chunks, and one more
        results.close()

        with pytest.raises(StopIteration):
            next(results)
        assert submitted == 3
    assert pool.stats().submitted == submitted


@pytest.mark.parametrize("chunksize", [0, -1])
def test_map_refuses_a_chunksize_below_one(chunksize: int) -> None:
    with forkserver_pool() as pool, pytest.raises(ValueError, match="chunksize"):
        pool.map(abs, [1], chunksize=chunksize)


@pytest.mark.parametrize("stop", ["terminate_workers", "kill_workers"])
def test_stopping_the_workers_fails_the_calls_under_way(
    stop: str, tmp_path: Path
) -> None:
    from concurrent.futures.process import BrokenProcessPool

    pool = forkserver_pool()
    if sys.version_info < (3, 14):
        with pytest.raises(NotImplementedError, match=r"needs Python 3\.14"):
            getattr(pool, stop)()
        pool.shutdown()
        return
    started = [tmp_path / f"started-{n}" for n in range(2)]
    hanging = [pool.submit(block_forever, str(path)) for path in started]
    wait_for_files(started)  # both workers are in the calls

    getattr(pool, stop)()

    for future in hanging:
        assert isinstance(future.exception(timeout=TIMEOUT), BrokenProcessPool)
    with pytest.raises(RuntimeError):  # broken (BrokenProcessPool), or shut down
        pool.submit(os.getpid)
    pool.shutdown()


def block_forever(path: str) -> None:
    """Create the file ``path``, then block until the process ends (a worker
    that the test stops)."""
    Path(path).touch()
    threading.Event().wait()


def wait_for_files(paths: list[Path]) -> None:
    """Return once every file of ``paths`` exists (polling a state that another
    process changes)."""
    deadline = time.monotonic() + TIMEOUT
    while not all(path.exists() for path in paths):
        assert time.monotonic() < deadline, "the calls never started"
        time.sleep(0.01)
