"""One contract for every executor: each executor type, each wrapper alone on a thread
pool, and long chains (the user guide's chain, docs/guide.rst; every wrapper, some
twice, on a thread pool and on the sync executor) must pass the same checks: results and
exceptions arrive unchanged; cancelling pending work succeeds and the work never runs;
raising done callbacks break nothing; futures outlive their executor; shutdown is
idempotent, refuses new work, reaches the innermost executor and leaves no thread
behind; a delegate whose ``submit`` raises fails the future or the submit, never hangs
it; and thousands of submits with random cancels end with every future done, nothing
logged.

The executors come from ``contract_chains.py``: a fresh one for each test. Work is
made to wait in a pool by occupying every worker of the innermost pool with a
callable that waits for an event. An exception that ends a thread fails the test
(pytest's unhandled-thread-exception warning is an error in this project). The
asyncio wrapper is not here: its futures are asyncio futures, and it belongs at the
outer end of a chain (``test_asyncio.py``).
"""

from __future__ import annotations

import gc
import itertools
import logging
import operator
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError, Executor, Future, wait
from typing import Any

import pytest
from contract_chains import (
    CANCEL_ON_SHUTDOWN,
    CHAINS,
    POLL,
    POLL_CANCEL_FN,
    POLL_IN_TIMEOUT,
    POOL_CHAINS,
    WRAPPER_CHAINS,
    Built,
    Chain,
)
from wrapper_doubles import TIMEOUT, BrokenSubmitExecutor, invalid_state_errors, raise_

import fluent_executors
from _fluent_executors import scheduler as _scheduler
from _fluent_executors.scheduler import THREAD_NAME as SCHEDULER_THREAD
from fluent_executors import (
    Executors,
    ExecutorStats,
    FluentExecutor,
    PollStats,
    QueueStats,
    RetryStats,
    TimeoutStats,
)

STRESS_SUBMITS = 2000


class WorkError(Exception):
    """What the submitted callables raise."""


class CallbackError(Exception):
    """What the done callbacks raise."""


def square(value: int) -> int:
    return value * value


def power(base: int, *, exponent: int) -> int:
    return base**exponent


class StressWork:
    """Returns its argument; one value in ten fails (and is retried where it can).
    Records the values it was called with."""

    def __init__(self) -> None:
        self.ran: set[int] = set()

    def __call__(self, value: int) -> int:
        self.ran.add(value)
        if value % 10 == 7:
            raise WorkError(value)
        return value


class FlakySubmitExecutor(Executor):
    """A delegate whose every third ``submit`` raises ``error``; the others go to
    ``inner``."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner
        self.error = OSError("the delegate refuses this one")
        self._submits = itertools.count(1)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        if next(self._submits) % 3 == 0:
            raise self.error
        return self.inner.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.inner.shutdown(wait=wait, cancel_futures=cancel_futures)


class ShutdownSignal(Executor):
    """Passes everything on to ``inner``; sets ``shut_down`` when shut down."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner
        self.shut_down = threading.Event()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return self.inner.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.inner.shutdown(wait=wait, cancel_futures=cancel_futures)
        self.shut_down.set()


def outcome(future: Future[Any]) -> Any:
    """The result of a done future, else its exception, or "cancelled"."""
    if future.cancelled():
        return "cancelled"
    return future.exception(timeout=0) or future.result(timeout=0)


def submit_catching(executor: Executor, fn: Callable[..., Any], *args: Any) -> Any:
    """``executor.submit(fn, *args)``; an exception of ``submit`` itself is returned
    as a failed future."""
    try:
        return executor.submit(fn, *args)
    except Exception as error:
        failed: Future[Any] = Future()
        failed.set_exception(error)
        return failed


def raising_callback(future: Future[Any]) -> None:
    raise CallbackError(f"callback of {future!r}")


def bounded(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` in another thread; fail if it does not return within TIMEOUT."""
    outcome: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()

    def call() -> None:
        try:
            outcome.put((True, fn(*args, **kwargs)))
        except BaseException as error:
            outcome.put((False, error))

    threading.Thread(target=call, name="contract-bounded", daemon=True).start()
    try:
        ok, value = outcome.get(timeout=TIMEOUT)
    except queue.Empty:
        raise AssertionError(f"{fn!r} did not return within {TIMEOUT} s") from None
    if not ok:
        raise value
    return value


def surviving_library_threads(before: set[threading.Thread]) -> list[str]:
    """Join, within TIMEOUT in all, the threads started since ``before`` and the
    shared scheduler thread (which ends when idle); return the names of those still
    alive."""
    candidates = [
        thread
        for thread in threading.enumerate()
        if thread is not threading.current_thread()
        and (thread not in before or thread.name == SCHEDULER_THREAD)
    ]
    deadline = time.monotonic() + TIMEOUT
    for thread in candidates:
        thread.join(timeout=max(deadline - time.monotonic(), 0.0))
    return [thread.name for thread in candidates if thread.is_alive()]


# What stats() returns on each executor of the chains: its kind, and its type.
STATS_OF: dict[type[Any], tuple[str, type[ExecutorStats]]] = {
    fluent_executors.ThreadPoolExecutor: ("threadpool", ExecutorStats),
    fluent_executors.ProcessPoolExecutor: ("processpool", ExecutorStats),
    fluent_executors.SyncExecutor: ("sync", ExecutorStats),
    fluent_executors.DaskExecutor: ("dask", ExecutorStats),
    fluent_executors.RayExecutor: ("ray", ExecutorStats),
    fluent_executors.PollExecutor: ("poll", fluent_executors.PollStats),
    fluent_executors.RetryExecutor: ("retry", fluent_executors.RetryStats),
    fluent_executors.TimeoutExecutor: ("timeout", fluent_executors.TimeoutStats),
    fluent_executors.MapExecutor: ("map", ExecutorStats),
    fluent_executors.FlatMapExecutor: ("flat_map", ExecutorStats),
    fluent_executors.ThrottleExecutor: ("throttle", fluent_executors.QueueStats),
    fluent_executors.RateLimitExecutor: (
        "rate_limit",
        fluent_executors.RateLimitStats,
    ),
    fluent_executors.CancelOnShutdownExecutor: ("cancel_on_shutdown", ExecutorStats),
    fluent_executors.AsyncioExecutor: ("asyncio", ExecutorStats),
}


def layer_stats(executor: Executor) -> list[ExecutorStats]:
    """The stats of each executor of the library in a chain, outermost first, each
    checked for the kind, type and name of its executor and for what holds at any
    time."""
    found = []
    layer: Any = executor
    while isinstance(layer, FluentExecutor):  # down to a delegate of the tests
        stats = layer.stats()
        kind, stats_type = STATS_OF[type(layer)]
        assert (stats.kind, type(stats), stats.name) == (kind, stats_type, layer.name)
        assert stats.submitted == stats.pending + stats.running + stats.done, stats
        assert min(stats.pending, stats.running) >= 0, stats
        assert stats.failed + stats.cancelled <= stats.done, stats
        if isinstance(stats, QueueStats):
            assert stats.queued == stats.pending, stats
        found.append(stats)
        layer = getattr(layer, "delegate", None)
    return found


def assert_settled(executor: Executor, *, retries_cancelled: bool = False) -> None:
    """Every future of every executor of the chain is done, and counted so: the
    stats of each layer show none pending or running; a poll executor polls none;
    no timeout fired (they are 600 s); a retry executor made one attempt per
    future and one per retry (unless a retry was cancelled during its delay)."""
    for stats in layer_stats(executor):
        assert (stats.pending, stats.running, stats.done) == (0, 0, stats.submitted)
        if isinstance(stats, PollStats):
            assert (stats.polled, stats.poll_errors) == (0, 0), stats
        if isinstance(stats, TimeoutStats):
            assert stats.timeouts == 0, stats
        if isinstance(stats, RetryStats) and not retries_cancelled:
            assert stats.attempts == stats.submitted + stats.retries, stats


def error_records(records: list[logging.LogRecord]) -> list[str]:
    """The library's records at ERROR or above. (Those of other libraries are left
    out: a Dask client closed by an earlier test of the same process may still log
    through tornado.)"""
    return [
        f"{record.name}: {record.getMessage()}"
        for record in records
        if record.levelno >= logging.ERROR
        and record.name.startswith("fluent_executors")
    ]


@pytest.fixture
def make() -> Iterator[Callable[[Chain], Built]]:
    """Build chains; afterwards release their blocked workers and shut them down."""
    made: list[Built] = []

    def build(chain: Chain) -> Built:
        built = chain.build()
        made.append(built)
        return built

    yield build
    for built in made:
        built.release()
    for built in made:
        bounded(built.outer.shutdown, wait=True, cancel_futures=True)


every_chain = pytest.mark.parametrize("chain", CHAINS, ids=lambda chain: chain.id)
pool_chains = pytest.mark.parametrize("chain", POOL_CHAINS, ids=lambda c: c.id)


# -- outcomes ------------------------------------------------------------------------


@every_chain
def test_results_arrive(chain, make):
    executor = make(chain).outer

    futures = [executor.submit(square, n) for n in range(20)]
    with_kwargs = executor.submit(power, 3, exponent=4)

    assert [f.result(timeout=TIMEOUT) for f in futures] == [n * n for n in range(20)]
    assert with_kwargs.result(timeout=TIMEOUT) == 81
    # Each layer passed each callable on once, and counted it once it was done.
    assert_settled(executor)
    for stats in layer_stats(executor):
        assert (stats.submitted, stats.failed, stats.cancelled) == (21, 0, 0), stats
        if isinstance(stats, RetryStats):
            assert (stats.attempts, stats.retries) == (21, 0), stats


@every_chain
def test_exceptions_arrive_unchanged(chain, make):
    executor = make(chain).outer
    error = WorkError("the work failed")

    future = executor.submit(raise_, error)

    assert future.exception(timeout=TIMEOUT) is error
    with pytest.raises(WorkError) as raised:
        future.result(timeout=0)
    assert raised.value is error
    assert_settled(executor)
    stats = layer_stats(executor)
    assert (stats[0].submitted, stats[0].failed) == (1, 1)
    for layer in stats:  # retried where a retry executor is, and failed each time
        assert (layer.failed, layer.cancelled) == (layer.done, 0), layer


@every_chain
@pytest.mark.parametrize("buffersize", [None, 2])
def test_map_gives_the_results_in_order_at_most_buffersize_ahead(
    chain, make, buffersize
):
    executor = make(chain).outer
    drawn = 0

    def arguments() -> Iterator[int]:
        nonlocal drawn
        for n in range(8):
            drawn += 1  # map submits each argument as it draws it
            yield n

    results = executor.map(square, arguments(), buffersize=buffersize)
    ahead = [drawn]  # submitted, less the results taken: at each step
    taken = []
    for result in results:
        taken.append(result)
        ahead.append(drawn - len(taken))

    assert taken == [n * n for n in range(8)]
    assert ahead[0] == (8 if buffersize is None else buffersize)
    assert max(ahead) == ahead[0]
    assert_settled(executor)


@every_chain
def test_bound_callable_submits_to_the_executor(chain, make):
    executor = make(chain).outer
    error = WorkError("the work failed")

    squared = Executors.bind(executor, square)(7)
    failed = Executors.bind(executor, raise_)(error)
    mapped = Executors.bind(executor, square).with_map(str)(5)

    assert squared.result(timeout=TIMEOUT) == 49
    assert failed.exception(timeout=TIMEOUT) is error
    assert mapped.result(timeout=TIMEOUT) == "25"


def test_process_pool_results_arrive():
    with Executors.process_pool(max_workers=1, name="contract") as executor:
        futures = [executor.submit(divmod, n, 3) for n in range(5)]

        assert [f.result(timeout=TIMEOUT) for f in futures] == [
            divmod(n, 3) for n in range(5)
        ]
        assert executor.stats() == ExecutorStats(
            kind="processpool",
            name="contract",
            submitted=5,
            pending=0,
            running=0,
            done=5,
            failed=0,
            cancelled=0,
        )


def test_process_pool_exceptions_arrive_with_their_type_and_arguments():
    with Executors.process_pool(max_workers=1) as executor:
        future = executor.submit(operator.truediv, 1, 0)

        error = future.exception(timeout=TIMEOUT)

    assert type(error) is ZeroDivisionError
    assert error.args == ("division by zero",)
    stats = executor.stats()
    assert (stats.submitted, stats.done, stats.failed, stats.in_progress) == (
        1,
        1,
        1,
        0,
    )


# -- cancel --------------------------------------------------------------------------


@pool_chains
def test_cancel_of_pending_work_returns_true_and_the_work_never_runs(chain, make):
    built = make(chain)
    gate = built.block_inner()
    ran: list[int] = []
    record = ran.append
    futures = [built.outer.submit(record, n) for n in range(3)]
    futures[1].add_done_callback(raising_callback)
    # Every worker of the innermost pool runs a blocker; the three wait.
    inner = layer_stats(built.outer)[-1]
    assert (inner.running, inner.pending) == (built.workers, 3)

    assert futures[1].cancel() is True

    assert futures[1].cancelled()
    assert futures[1].done()
    if chain.layers:  # a bare standard pool shows it to wait() once a worker takes it
        assert wait([futures[1]], timeout=0).done == {futures[1]}
    with pytest.raises(CancelledError):
        futures[1].result(timeout=0)
    outer = layer_stats(built.outer)[0]
    blockers = 0 if chain.layers else built.workers  # submitted to the pool itself
    assert (outer.in_progress, outer.done, outer.cancelled) == (2 + blockers, 1, 1)
    gate.set()
    assert futures[0].result(timeout=TIMEOUT) is None
    assert futures[2].result(timeout=TIMEOUT) is None
    bounded(built.outer.shutdown, wait=True)
    assert sorted(ran) == [0, 2]
    assert_settled(built.outer)
    outer = layer_stats(built.outer)[0]
    assert (outer.submitted, outer.cancelled, outer.failed) == (3 + blockers, 1, 0)


@every_chain
def test_done_callbacks_that_raise_break_nothing(chain, make, caplog):
    executor = make(chain).outer
    after_raising: queue.SimpleQueue[Future[Any]] = queue.SimpleQueue()
    futures = []
    for n in range(5):
        future = executor.submit(square, n)
        future.add_done_callback(raising_callback)
        future.add_done_callback(after_raising.put)
        futures.append(future)

    assert [f.result(timeout=TIMEOUT) for f in futures] == [n * n for n in range(5)]
    for _ in futures:  # the callbacks after a raising one run too
        after_raising.get(timeout=TIMEOUT)
    for future in futures:  # added once done: called at once, in this thread
        future.add_done_callback(raising_callback)
    assert executor.submit(square, 7).result(timeout=TIMEOUT) == 49
    logged = [
        record
        for record in caplog.records
        if record.exc_info and record.exc_info[0] is CallbackError
    ]
    assert len(logged) == 2 * len(futures)


# -- shutdown ------------------------------------------------------------------------


def _submit_then_let_go(
    chain: Chain, shutdown: bool
) -> tuple[list[Future[Any]], threading.Event]:
    """Submit work that waits for the returned event (on a pool), shut the executor
    down without waiting if asked, and drop every reference to it."""
    built = chain.build()
    gate = threading.Event()

    def gated(value: int) -> int:
        gate.wait(TIMEOUT)
        return value

    work = gated if chain.has_pool else square
    futures = [built.outer.submit(work, n) for n in range(5)]
    if shutdown:
        built.outer.shutdown(wait=False)
    return futures, gate


@every_chain
@pytest.mark.parametrize("shutdown", [False, True], ids=["dropped", "shut_down"])
def test_futures_outlive_their_executor(chain, shutdown):
    futures, gate = _submit_then_let_go(chain, shutdown)
    gc.collect()
    gate.set()

    assert wait(futures, timeout=TIMEOUT).not_done == set()
    if not (shutdown and CANCEL_ON_SHUTDOWN in chain.layers):  # its shutdown cancels
        expected = list(range(5)) if chain.has_pool else [n * n for n in range(5)]
        assert [f.result(timeout=0) for f in futures] == expected


@every_chain
def test_no_thread_survives_an_executor_dropped_without_shutdown(chain):
    before = set(threading.enumerate())
    futures, gate = _submit_then_let_go(chain, shutdown=False)
    gate.set()
    assert wait(futures, timeout=TIMEOUT).not_done == set()

    del futures
    gc.collect()

    assert surviving_library_threads(before) == []


@every_chain
def test_shutdown_with_wait_returns_once_every_future_is_done(chain, make):
    executor = make(chain).outer
    futures = [executor.submit(square, n) for n in range(20)]

    bounded(executor.shutdown, wait=True)

    assert [f for f in futures if not f.done()] == []
    if CANCEL_ON_SHUTDOWN not in chain.layers:
        assert [f.result(timeout=0) for f in futures] == [n * n for n in range(20)]


@pool_chains
def test_shutdown_cancelling_futures_cancels_pending_work_and_ends(chain):
    before = set(threading.enumerate())
    built = chain.build()
    gate = built.block_inner()
    try:
        futures = [built.outer.submit(square, n) for n in range(10)]

        bounded(built.outer.shutdown, wait=False, cancel_futures=True)
    finally:
        gate.set()

    assert wait(futures, timeout=TIMEOUT).not_done == set()
    assert [f for f in futures if not f.cancelled()] == []
    assert surviving_library_threads(before) == []


@every_chain
def test_double_shutdown_is_harmless(chain, make):
    executor = make(chain).outer
    future = executor.submit(square, 3)
    assert future.result(timeout=TIMEOUT) == 9

    bounded(executor.shutdown)
    bounded(executor.shutdown)
    bounded(executor.shutdown, wait=False)
    bounded(executor.shutdown, wait=True, cancel_futures=True)

    assert future.result(timeout=0) == 9
    with pytest.raises(RuntimeError):
        executor.submit(square, 4)


@every_chain
@pytest.mark.parametrize("wait_", [True, False], ids=["wait", "nowait"])
def test_submit_after_shutdown_raises_runtime_error(chain, make, wait_):
    executor = make(chain).outer

    bounded(executor.shutdown, wait=wait_)

    with pytest.raises(RuntimeError):
        executor.submit(square, 1)


@every_chain
@pytest.mark.parametrize("cancel_futures", [False, True], ids=["keep", "cancel"])
def test_shutdown_propagates_to_the_innermost_executor(chain, make, cancel_futures):
    built = make(chain)
    assert built.outer.submit(square, 2).result(timeout=TIMEOUT) == 4

    bounded(built.outer.shutdown, wait=True, cancel_futures=cancel_futures)

    with pytest.raises(RuntimeError):
        built.inner.submit(square, 1)


@every_chain
def test_shutdown_without_wait_reaches_the_innermost_executor_once_work_is_done(
    chain, make
):
    built = make(chain)
    signal = ShutdownSignal(built.inner)
    executor = chain.wrap(signal)
    gate = threading.Event()

    def gated(value: int) -> int:
        gate.wait(TIMEOUT)
        return value

    futures = [
        executor.submit(gated if chain.has_pool else square, n) for n in range(5)
    ]

    bounded(executor.shutdown, wait=False)
    gate.set()

    assert wait(futures, timeout=TIMEOUT).not_done == set()
    assert signal.shut_down.wait(TIMEOUT)
    with pytest.raises(RuntimeError):
        built.inner.submit(square, 1)


@every_chain
def test_submits_racing_shutdown_are_either_refused_or_done(chain, make):
    executor = make(chain).outer
    accepted: list[Future[Any]] = []
    refused: list[BaseException] = []
    submitting = threading.Event()

    def submit_until_refused() -> None:
        for n in itertools.count():
            try:
                accepted.append(executor.submit(square, n))
            except BaseException as error:
                refused.append(error)
                return
            if n == 20:
                submitting.set()

    submitter = threading.Thread(target=submit_until_refused, name="contract-submit")
    submitter.start()
    assert submitting.wait(TIMEOUT)

    bounded(executor.shutdown, wait=True)

    submitter.join(TIMEOUT)
    assert not submitter.is_alive()
    assert [type(error) for error in refused] == [RuntimeError]
    assert wait(accepted, timeout=TIMEOUT).not_done == set()
    if CANCEL_ON_SHUTDOWN not in chain.layers:  # its shutdown cancels what is left
        outcomes = [outcome(future) for future in accepted]
        wrong = [(n, got) for n, got in enumerate(outcomes) if got != n * n]
        assert wrong == []


@every_chain
@pytest.mark.parametrize("wait_", [True, False], ids=["wait", "nowait"])
def test_no_thread_started_by_the_library_survives_shutdown(chain, wait_):
    before = set(threading.enumerate())
    built = chain.build()
    try:
        futures = [built.outer.submit(StressWork(), n) for n in range(20)]
        bounded(built.outer.shutdown, wait=wait_)
        assert wait(futures, timeout=TIMEOUT).not_done == set()
    finally:
        built.release()

    assert surviving_library_threads(before) == []


@every_chain
def test_shutdown_with_wait_joins_every_thread_it_started(chain, monkeypatch):
    # As real programs check (threading.active_count() before and after a with
    # block), and as the standard pools promise: no thread started for the
    # executor's futures (pool workers, poll thread, the scheduler and its workers,
    # which retries, timeouts and rate limits use) is alive when shutdown returns.
    monkeypatch.setattr(_scheduler, "LINGER", 0.05)  # the default, not the suite's
    before = set(threading.enumerate())
    count = threading.active_count()
    work = StressWork()  # one value in ten fails: retried where it can be

    with chain.build().outer as executor:
        futures = [executor.submit(work, n) for n in range(20)]
        assert wait(futures, timeout=TIMEOUT).not_done == set()

    started = [thread.name for thread in threading.enumerate() if thread not in before]
    assert started == []
    assert threading.active_count() <= count


# -- a delegate whose submit() raises ------------------------------------------------


@pytest.mark.parametrize(
    "chain", WRAPPER_CHAINS, ids=lambda chain: f"broken_submit.{chain.layers_id}"
)
def test_delegate_whose_submit_raises_fails_the_future_or_the_submit(chain):
    broken = BrokenSubmitExecutor()
    executor: Executor = chain.wrap(broken)

    for n in range(10):  # more than any limit of the chain: nothing stays taken
        future = submit_catching(executor, square, n)
        assert future.exception(timeout=TIMEOUT) is broken.error

    bounded(executor.shutdown, wait=True)
    assert broken.shutdowns != []
    assert_settled(executor)
    for stats in layer_stats(executor):  # a future it returned failed, if any
        assert (stats.failed, stats.cancelled) == (stats.done, 0), stats


@pytest.mark.parametrize(
    "chain", WRAPPER_CHAINS, ids=lambda chain: f"flaky_submit.{chain.layers_id}"
)
def test_delegate_whose_submit_raises_sometimes_fails_only_those_futures(chain):
    before = set(threading.enumerate())
    flaky = FlakySubmitExecutor(Executors.thread_pool(max_workers=2, name="flaky"))
    executor: Executor = chain.wrap(flaky)

    futures = [submit_catching(executor, square, n) for n in range(30)]

    assert wait(futures, timeout=TIMEOUT).not_done == set()
    for n, future in enumerate(futures):
        error = future.exception(timeout=0)
        assert error is None or error is flaky.error
        if error is None:
            assert future.result(timeout=0) == n * n
    bounded(executor.shutdown, wait=True)
    assert surviving_library_threads(before) == []
    assert_settled(executor)


# -- stress --------------------------------------------------------------------------


@every_chain
def test_stress_random_cancels_leave_every_future_done(chain, make, caplog):
    caplog.set_level(logging.DEBUG)
    executor = make(chain).outer
    work = StressWork()
    rng = random.Random(chain.id)
    agreed: list[Future[Any]] = []  # futures whose cancel() returned True
    later: queue.SimpleQueue[Future[Any] | None] = queue.SimpleQueue()

    def cancel_later() -> None:
        while (future := later.get()) is not None:
            if future.cancel():
                agreed.append(future)

    canceller = threading.Thread(target=cancel_later, name="contract-canceller")
    canceller.start()
    futures: list[Future[Any]] = []
    try:
        for n in range(STRESS_SUBMITS):
            future = executor.submit(work, n)
            futures.append(future)
            draw = rng.random()
            if draw < 0.1 and future.cancel():
                agreed.append(future)
            elif draw < 0.3:
                later.put(rng.choice(futures))
    finally:
        later.put(None)
        canceller.join(TIMEOUT)
    assert not canceller.is_alive()

    assert wait(futures, timeout=TIMEOUT).not_done == set()
    for n, future in enumerate(futures):
        if future.cancelled():
            continue
        if n % 10 == 7:
            error = future.exception(timeout=0)
            assert type(error) is WorkError
            assert error.args == (n,)
        else:
            assert future.result(timeout=0) == n
    assert [f for f in agreed if not f.cancelled()] == []
    # A polled future is cancelled after its callable ran: with a cancel function the
    # remote side is what is cancelled, without one nothing remote is.
    if not {POLL, POLL_CANCEL_FN, POLL_IN_TIMEOUT} & set(chain.layers):
        position = {id(future): n for n, future in enumerate(futures)}
        ran_anyway = {position[id(f)] for f in agreed} & work.ran
        assert [n for n in ran_anyway if n % 10 != 7] == []  # 7s may be retried
    bounded(executor.shutdown, wait=True)
    assert invalid_state_errors(caplog.records) == []
    assert error_records(caplog.records) == []
    # The outer executor's counts are those of its futures, exactly.
    assert_settled(executor, retries_cancelled=True)
    outer = layer_stats(executor)[0]
    assert (outer.submitted, outer.cancelled, outer.failed) == (
        STRESS_SUBMITS,
        sum(future.cancelled() for future in futures),
        sum(not f.cancelled() and f.exception() is not None for f in futures),
    )
