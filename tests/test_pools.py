"""The library's pools hand the caller's arguments to the standard pools as given,
and the thread pool's futures are the library's, resolved by its own work items
(docs/api.rst, ThreadPoolExecutor and ProcessPoolExecutor; docs/performance.rst)."""

from __future__ import annotations

import ast
import concurrent.futures
import hashlib
import inspect
import queue
import sys
import textwrap
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, thread
from typing import Any
from unittest import mock

import pytest
from wrapper_doubles import TIMEOUT

from _fluent_executors.stdlib_compat import PORTABLE
from fluent_executors import (
    Executors,
    ProcessPoolExecutor,
    ProxyFuture,
    ThreadPoolExecutor,
    pools,
)

Call = tuple[tuple[Any, ...], dict[str, Any]]


def spy_on_init(monkeypatch: pytest.MonkeyPatch, cls: type[Any]) -> list[Call]:
    """Record the arguments that ``cls.__init__`` receives, then let it run."""
    calls: list[Call] = []
    original = cls.__init__

    def spy(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append((args, kwargs))
        original(self, *args, **kwargs)

    monkeypatch.setattr(cls, "__init__", spy)
    return calls


THREAD_CASES: list[tuple[Callable[[], Any], Call]] = [
    # Executors.thread_pool() has the standard class's parameters (and name), and
    # passes them on positionally, with the prefix fluent-executors-<name> unless
    # one is given.
    (
        lambda: Executors.thread_pool(max_workers=3),
        ((3, "fluent-executors-default", None, ()), {}),
    ),
    (
        lambda: Executors.thread_pool(),
        ((None, "fluent-executors-default", None, ()), {}),
    ),
    (
        lambda: Executors.thread_pool(name="io"),
        ((None, "fluent-executors-io", None, ()), {}),
    ),
    (
        lambda: Executors.thread_pool(2, "mine", name="io"),
        ((2, "mine", None, ()), {}),
    ),
    # The class itself passes the caller's arguments on as given.
    (
        lambda: ThreadPoolExecutor(3),
        ((3,), {"thread_name_prefix": "fluent-executors-default"}),
    ),
    (
        lambda: ThreadPoolExecutor(max_workers=2, thread_name_prefix="mine"),
        ((), {"max_workers": 2, "thread_name_prefix": "mine"}),
    ),
    (
        lambda: ThreadPoolExecutor(4, initargs=(), name="io"),
        ((4,), {"initargs": (), "thread_name_prefix": "fluent-executors-io"}),
    ),
]


@pytest.mark.parametrize(("build", "expected"), THREAD_CASES)
def test_thread_pool_passes_the_arguments_through(
    monkeypatch: pytest.MonkeyPatch, build: Callable[[], Any], expected: Call
) -> None:
    calls = spy_on_init(monkeypatch, concurrent.futures.ThreadPoolExecutor)

    with build():
        pass

    assert calls == [expected]


PROCESS_CASES: list[tuple[Callable[[], Any], Call]] = [
    (lambda: Executors.process_pool(max_workers=2), ((2, None, None, ()), {})),
    (lambda: Executors.process_pool(), ((None, None, None, ()), {})),
    (lambda: Executors.process_pool(name="cpu"), ((None, None, None, ()), {})),
    (lambda: ProcessPoolExecutor(2), ((2,), {})),
    (lambda: ProcessPoolExecutor(1, initargs=(), name="cpu"), ((1,), {"initargs": ()})),
]


@pytest.mark.parametrize(("build", "expected"), PROCESS_CASES)
def test_process_pool_passes_the_arguments_through(
    monkeypatch: pytest.MonkeyPatch, build: Callable[[], Any], expected: Call
) -> None:
    calls = spy_on_init(monkeypatch, concurrent.futures.ProcessPoolExecutor)

    with build():
        pass

    assert calls == [expected]


def test_thread_pool_reads_its_settings_after_the_standard_constructor() -> None:
    with Executors.thread_pool(3, name="io") as pool:
        assert pool.name == "io"
        assert pool._max_workers == 3
        assert pool.submit(lambda: 1).result() == 1


def test_thread_pool_name_must_be_a_str_before_anything_starts() -> None:
    with pytest.raises(TypeError, match="name must be a str"):
        Executors.thread_pool(2, name=3)  # type: ignore[arg-type]


# -- the thread pool's own work items -------------------------------------------------

# The AST of the standard ThreadPoolExecutor.submit, which the library's pool
# reproduces with its own work item, by Python version (ast.dump differs between
# versions for the same source). If this fails, the standard submit changed:
# compare it with ThreadPoolExecutor._submit in fluent_executors/pools.py, update
# that one, then the digest.
SUBMIT_DIGESTS = {
    (3, 10): "5cbd7d30457dcb4d",
    (3, 11): "5cbd7d30457dcb4d",
    (3, 12): "b7ac4408c9a32cee",
    (3, 13): "022ed7c79ac42397",
    (3, 14): "e1c8fdf7b1441480",
    (3, 15): "2b9db4a0d68d1a60",
}


def digest(function: Callable[..., Any]) -> str:
    return hashlib.sha256(ast.dump(ast_of(function)).encode()).hexdigest()[:16]


VERSION = sys.version_info[:2]


def ast_of(function: Callable[..., Any]) -> ast.Module:
    return ast.parse(textwrap.dedent(inspect.getsource(function)))


def calls_in(function: Callable[..., Any]) -> set[str]:
    """The calls that ``function`` makes, as source text (``work_item.run()``)."""
    return {
        ast.unparse(node)
        for node in ast.walk(ast_of(function))
        if isinstance(node, ast.Call)
    }


def test_the_pool_makes_its_own_work_items_on_the_versions_it_knows() -> None:
    assert pools._OWN_WORK_ITEMS is (VERSION in SUBMIT_DIGESTS and not PORTABLE)
    with Executors.thread_pool(1) as pool:
        assert pool._own_items is pools._OWN_WORK_ITEMS


@pytest.mark.skipif(VERSION < (3, 14), reason="prepare_context is 3.14's")
def test_a_subclass_with_its_own_worker_contexts_takes_the_standard_submit() -> None:
    # Its contexts may run a task elsewhere (as InterpreterPoolExecutor's do): the
    # library's work item, which calls fn itself, would bypass them.
    ran: list[tuple[Any, ...]] = []

    class Recording(thread.WorkerContext):
        def run(self, task: tuple[Any, ...]) -> Any:
            ran.append(task)
            return super().run(task)

    class OwnContexts(ThreadPoolExecutor):
        @classmethod
        def prepare_context(cls, initializer: Any, initargs: Any) -> Any:
            return Recording.prepare(initializer, initargs)

    with OwnContexts(1) as pool:
        assert not pool._own_items
        assert pool.submit(pow, 2, 3).result(timeout=TIMEOUT) == 8
    assert len(ran) == 1


@pytest.mark.skipif(VERSION not in SUBMIT_DIGESTS, reason="standard submit used")
def test_the_standard_pool_internals_that_submit_relies_on_are_unchanged() -> None:
    # The submit that the library's pool reproduces.
    assert (
        digest(concurrent.futures.ThreadPoolExecutor.submit)
        == (SUBMIT_DIGESTS[VERSION])
    )
    # The fields and methods that it uses.
    standard = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        assert type(standard._shutdown_lock) is type(threading.Lock())
        assert isinstance(standard._work_queue, queue.SimpleQueue)
        assert standard._broken is False
        assert standard._shutdown is False
        assert not inspect.signature(standard._adjust_thread_count).parameters
    finally:
        standard.shutdown()
    assert type(thread._global_shutdown_lock) is type(threading.Lock())
    assert thread._shutdown is False
    assert issubclass(thread.BrokenThreadPool, concurrent.futures.BrokenExecutor)
    # What the workers, shutdown and a failed initializer do with a work item.
    contexts = VERSION >= (3, 14)  # a worker's context, passed to run()
    assert ("work_item.run(ctx)" if contexts else "work_item.run()") in calls_in(
        thread._worker
    )
    assert "work_item.future.cancel()" in calls_in(
        concurrent.futures.ThreadPoolExecutor.shutdown
    )
    broken = "self.BROKEN" if contexts else "BrokenThreadPool"
    assert f"work_item.future.set_exception({broken}(self._broken))" in (
        calls_in(concurrent.futures.ThreadPoolExecutor._initializer_failed)
    )
    # The standard work item, which the library's stands for: its constructor,
    # and what run() takes (the library's takes either).
    standard_item = inspect.signature(thread._WorkItem).parameters
    standard_run = inspect.signature(thread._WorkItem.run).parameters
    if contexts:
        assert list(standard_item) == ["future", "task"]
        assert list(standard_run) == ["self", "ctx"]
        # The pool's broken error, and what the standard context does with a task
        # (made by the standard prepare_context, which the library's pool keeps):
        # fn(*args, **kwargs), as the library's work item calls it.
        assert concurrent.futures.ThreadPoolExecutor.BROKEN is thread.BrokenThreadPool
        assert ThreadPoolExecutor.BROKEN is thread.BrokenThreadPool
        assert "ctx.run(self.task)" in calls_in(thread._WorkItem.run)
        assert calls_in(thread.WorkerContext.run) == {"fn(*args, **kwargs)"}
        assert "(fn, args, kwargs)" in inspect.getsource(thread.WorkerContext.prepare)
    else:
        assert list(standard_item) == ["future", "fn", "args", "kwargs"]
        assert list(standard_run) == ["self"]
    # _adjust_thread_count takes an idle worker's token, else starts a thread
    # below max_workers only: with all started, _queue takes the token itself.
    adjust = inspect.getsource(
        concurrent.futures.ThreadPoolExecutor._adjust_thread_count
    )
    assert "num_threads = len(self._threads)" in adjust
    assert "if num_threads < self._max_workers:" in adjust
    # What the standard code does with the idle workers' count, which the library's
    # pool replaces with its own (pools._IdleWorkers): made in __init__, released by
    # a worker as it goes idle, tried at once by _adjust_thread_count; nothing else.
    assert idle_semaphore_uses() == [
        "executor._idle_semaphore.release()",
        "self._idle_semaphore = threading.Semaphore(0)",
        "self._idle_semaphore.acquire(timeout=0)",
    ]


def idle_semaphore_uses() -> list[str]:
    """Every use of ``_idle_semaphore`` in the standard thread module, as source
    text, sorted: an assignment, a method call, or ``"<other>"`` for any other."""
    nodes = list(ast.walk(ast.parse(inspect.getsource(thread))))
    uses = []
    for node in nodes:
        if isinstance(node, ast.Assign):
            target = ast.unparse(node.targets[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = ast.unparse(node.func.value)
        else:
            continue
        if target.endswith("._idle_semaphore"):
            uses.append(ast.unparse(node))
    named = [n for n in nodes if isinstance(n, ast.Attribute)]
    others = sum(n.attr == "_idle_semaphore" for n in named) - len(uses)
    return sorted(uses + ["<other>"] * others)


@pytest.mark.skipif(not pools._OWN_WORK_ITEMS, reason="the standard submit here")
def test_thread_pool_futures_are_the_librarys_with_no_standard_future() -> None:
    release = threading.Event()
    with Executors.thread_pool(1) as pool:
        future = pool.submit(release.wait, TIMEOUT)
        assert type(future) is ProxyFuture
        assert future._upstream is None  # it follows no standard future
        release.set()
        assert future.result(timeout=TIMEOUT) is True


def test_a_running_future_is_running_and_cannot_be_cancelled() -> None:
    started, release = threading.Event(), threading.Event()

    def work() -> str:
        started.set()
        release.wait(TIMEOUT)
        return "done"

    with Executors.thread_pool(1) as pool:
        future = pool.submit(work)
        assert started.wait(TIMEOUT)
        assert future.running()
        assert not future.cancel()
        assert not future.cancelled()
        release.set()
        assert future.result(timeout=TIMEOUT) == "done"
        assert not future.running()


def test_a_queued_future_cancels_and_its_callable_never_runs() -> None:
    started, release = threading.Event(), threading.Event()
    ran: list[int] = []
    with Executors.thread_pool(1) as pool:
        blocker = pool.submit(lambda: started.set() or release.wait(TIMEOUT))
        assert started.wait(TIMEOUT)
        queued = pool.submit(ran.append, 1)
        assert not queued.running()
        assert queued.cancel()
        release.set()
        assert blocker.result(timeout=TIMEOUT) is True
    assert queued.cancelled()
    assert ran == []


def test_shutdown_cancel_futures_cancels_the_queued_futures() -> None:
    started, release = threading.Event(), threading.Event()
    pool = Executors.thread_pool(1)
    blocker = pool.submit(lambda: started.set() or release.wait(TIMEOUT))
    assert started.wait(TIMEOUT)
    queued = [pool.submit(pow, 2, i) for i in range(3)]
    done, _ = concurrent.futures.wait(queued, timeout=0)
    assert not done

    pool.shutdown(wait=False, cancel_futures=True)
    # wait() sees them cancelled at once: no set_running_or_notify_cancel() needed.
    done, _ = concurrent.futures.wait(queued, timeout=TIMEOUT)
    assert done == set(queued)
    assert all(f.cancelled() for f in queued)
    release.set()
    pool.shutdown(wait=True)
    assert blocker.result(timeout=TIMEOUT) is True


def test_a_failed_initializer_breaks_the_pool_and_fails_its_futures() -> None:
    def initializer() -> None:
        raise ValueError("no")

    with mock.patch.object(thread._base.LOGGER, "critical"):  # the standard log
        pool = Executors.thread_pool(1, initializer=initializer)
        future = pool.submit(pow, 2, 3)
        with pytest.raises(thread.BrokenThreadPool):
            future.result(timeout=TIMEOUT)
        with pytest.raises(thread.BrokenThreadPool):
            pool.submit(pow, 2, 3)
        pool.shutdown()


def test_submit_after_shutdown_raises_runtime_error() -> None:
    pool = Executors.thread_pool(1)
    pool.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(pow, 2, 3)


def test_the_callables_exception_fails_the_future_without_a_cycle() -> None:
    error = KeyError("k")
    with Executors.thread_pool(1) as pool:
        future = pool.submit(lambda: (_ for _ in ()).throw(error))
        assert future.exception(timeout=TIMEOUT) is error
    # The traceback's frames hold neither the work item nor the future.
    tb = error.__traceback__
    while tb is not None:
        assert future not in tb.tb_frame.f_locals.values()
        tb = tb.tb_next


def test_a_future_resolved_by_hand_while_running_keeps_the_worker_alive() -> None:
    started, release = threading.Event(), threading.Event()
    with Executors.thread_pool(1) as pool:
        future = pool.submit(lambda: started.set() or release.wait(TIMEOUT))
        assert started.wait(TIMEOUT)
        future.set_result(False)
        release.set()
        assert future.result(timeout=TIMEOUT) is False
        # The same worker thread runs the next callable.
        assert pool.submit(pow, 2, 3).result(timeout=TIMEOUT) == 8
        assert len(pool._threads) == 1


def test_wait_and_as_completed_see_the_pools_futures() -> None:
    with Executors.thread_pool(2) as pool:
        futures = [pool.submit(pow, 2, i) for i in range(20)]
        assert sorted(
            f.result() for f in concurrent.futures.as_completed(futures, TIMEOUT)
        ) == [2**i for i in range(20)]
        done, not_done = concurrent.futures.wait(futures, TIMEOUT)
        assert len(done) == 20
        assert not not_done


def test_without_its_own_work_items_the_pool_follows_the_standard_future(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pools, "_OWN_WORK_ITEMS", False)
    started, release = threading.Event(), threading.Event()
    with Executors.thread_pool(1) as pool:
        blocker = pool.submit(lambda: started.set() or release.wait(TIMEOUT))
        assert started.wait(TIMEOUT)
        queued = pool.submit(pow, 2, 3)
        assert type(queued) is ProxyFuture
        assert type(queued._upstream) is Future
        assert queued.cancel()
        release.set()
        assert blocker.result(timeout=TIMEOUT) is True
        assert pool.submit(pow, 2, 3).result(timeout=TIMEOUT) == 8
    with pytest.raises(CancelledError):
        queued.result()


class StandardSubclass(concurrent.futures.ThreadPoolExecutor):
    """A subclass of the standard pool that overrides ``submit``."""

    submitted = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


class LibrarySubclass(ThreadPoolExecutor):
    """A subclass of the library's pool that overrides ``submit``."""

    submitted = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


@pytest.mark.parametrize("cls", [StandardSubclass, LibrarySubclass])
def test_wrappers_call_a_subclass_submit(cls: type[Any]) -> None:
    pool = cls(max_workers=1)
    with Executors.with_retry(pool).with_timeout(60.0).with_map(str) as executor:
        assert executor.submit(pow, 2, 3).result(timeout=TIMEOUT) == "8"
    assert pool.submitted == 1


def test_wrappers_call_a_magicmock_wrapping_the_pool() -> None:
    pool = Executors.thread_pool(1)
    spy = mock.MagicMock(wraps=pool)
    with Executors.with_map(spy, str) as executor:
        assert executor.submit(pow, 2, 3).result(timeout=TIMEOUT) == "8"
    spy.submit.assert_called_once_with(pow, 2, 3)
    assert pool._shutdown


def test_a_spy_patched_onto_the_pool_after_wrapping_is_called(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = Executors.thread_pool(1)
    executor = pool.with_timeout(60.0)
    spy = mock.Mock(wraps=pool.submit)
    monkeypatch.setattr(pool, "submit", spy)
    with executor:
        assert executor.submit(pow, 2, 3).result(timeout=TIMEOUT) == 8
    spy.assert_called_once_with(pow, 2, 3)


def test_the_pool_reuses_an_idle_worker_rather_than_start_another() -> None:
    with Executors.thread_pool(4) as pool:
        idle = pool._idle_semaphore
        release, released = idle.release, threading.Semaphore(0)

        def counted() -> None:  # the worker counts itself idle after each item
            release()
            released.release()

        idle.release = counted  # type: ignore[method-assign]
        for i in range(20):  # one at a time: a worker is idle at each submit
            assert pool.submit(pow, 2, i).result(timeout=TIMEOUT) == 2**i
            assert released.acquire(timeout=TIMEOUT)
        assert len(pool._threads) == 1


@pytest.mark.skipif(not pools._OWN_WORK_ITEMS, reason="the standard Semaphore")
def test_with_every_worker_started_a_submit_takes_an_idle_workers_token() -> None:
    # As the standard _adjust_thread_count would: the tokens, one per worker gone
    # idle, do not pile up, and no thread is started beyond max_workers.
    with Executors.thread_pool(2) as pool:
        tokens = pool._idle_semaphore.tokens
        for i in range(200):  # one at a time: a worker is idle at each submit
            assert pool.submit(pow, 2, i).result(timeout=TIMEOUT) == 2**i
            assert len(tokens) <= 2
        assert len(pool._threads) <= 2


def test_a_subclass_adjust_thread_count_is_called_at_every_submit() -> None:
    calls: list[int] = []

    class Counting(ThreadPoolExecutor):
        def _adjust_thread_count(self) -> None:
            calls.append(len(self._threads))
            super()._adjust_thread_count()

    with Counting(1) as pool:
        for i in range(5):
            assert pool.submit(pow, 2, i).result(timeout=TIMEOUT) == 2**i
    assert len(calls) == 5
    assert calls[1:] == [1, 1, 1, 1]  # called with its one worker started


@pytest.mark.skipif(not pools._OWN_WORK_ITEMS, reason="the standard Semaphore")
def test_the_idle_workers_count_is_taken_at_once_and_never_waited_for() -> None:
    idle = pools._IdleWorkers()
    assert idle.acquire(timeout=0) is False
    idle.release()
    idle.release()
    assert idle.acquire(timeout=0) is True
    assert idle.acquire(blocking=False) is True
    assert idle.acquire(timeout=0) is False
    with pytest.raises(ValueError, match="cannot be waited for"):
        idle.acquire()
    with pytest.raises(ValueError, match="cannot be waited for"):
        idle.acquire(timeout=1.0)


def test_the_pool_starts_its_workers_as_needed_up_to_max_workers() -> None:
    release = threading.Event()
    with Executors.thread_pool(3) as pool:
        started = threading.Semaphore(0)

        def block() -> None:
            started.release()
            release.wait(TIMEOUT)

        blockers = [pool.submit(block) for _ in range(3)]
        for _ in range(3):
            assert started.acquire(timeout=TIMEOUT)
        assert len(pool._threads) == 3
        queued = [pool.submit(pow, 2, i) for i in range(10)]
        assert len(pool._threads) == 3
        release.set()
        assert [f.result(timeout=TIMEOUT) for f in queued] == [2**i for i in range(10)]
        assert all(f.result(timeout=TIMEOUT) is None for f in blockers)
