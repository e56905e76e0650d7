"""Delegates whose ``submit()`` raises, under every wrapper.

A delegate may refuse work synchronously: a raising executor, a pool that has been
shut down, Dask with an argument it cannot pickle. Whatever the wrapper, the error
must reach the caller: through ``submit`` when the wrapper submits at once, through
the future when it submits later (a queued callable, a retry). No future may hang,
no internal thread may die, and the wrapper must go on working for later submits.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, wait
from dataclasses import dataclass
from typing import Any

import pytest
from wrapper_doubles import TIMEOUT, BrokenSubmitExecutor

from fluent_executors import Executors, PollDescriptor, f_return
from fluent_executors.testing import virtual_time

# -- delegates that refuse work -------------------------------------------------------


@dataclass
class Refusing:
    """A delegate, the arguments it refuses, and a check of the error it raises."""

    executor: Executor
    args: tuple[Any, ...]  # arguments of ``echo`` that make submit() raise
    is_its_error: Callable[[BaseException], bool]


def echo(*args: Any) -> tuple[Any, ...]:
    return args


def raising_delegate() -> Refusing:
    broken = BrokenSubmitExecutor()
    return Refusing(broken, (1,), lambda error: error is broken.error)


def shut_down_pool() -> Refusing:
    pool = Executors.thread_pool(max_workers=2, name="closed")
    pool.shutdown()
    return Refusing(
        pool,
        (1,),
        lambda error: isinstance(error, RuntimeError) and "shutdown" in str(error),
    )


@pytest.fixture(scope="module")
def dask_client() -> Iterator[Any]:
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=False,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": ":0"},
    )
    client = distributed.Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


def dask_unpicklable(client: Any) -> Refusing:
    # A lock cannot be pickled, so Dask cannot send it to a worker.
    return Refusing(
        Executors.dask(client=client, name="dask"),
        (threading.Lock(),),
        lambda error: isinstance(error, TypeError),
    )


DELEGATES = ["raising", "shut_down_pool", "dask_unpicklable"]


@pytest.fixture(params=DELEGATES)
def refusing(request: pytest.FixtureRequest) -> Refusing:
    if request.param == "raising":
        return raising_delegate()
    if request.param == "shut_down_pool":
        return shut_down_pool()
    return dask_unpicklable(request.getfixturevalue("dask_client"))


# -- the wrappers ---------------------------------------------------------------------


def resolve_all(descriptors: list[PollDescriptor[Any]]) -> float:
    for descriptor in descriptors:
        descriptor.yield_result()
    return 0.002


def accept_cancel(_: Any) -> bool:
    return True


def same(value: Any) -> Any:
    return value


WRAPPERS: dict[str, Callable[[Executor], Any]] = {
    "poll": lambda e: Executors.with_poll(e, resolve_all),
    "poll_cancel_fn": lambda e: Executors.with_poll(e, resolve_all, accept_cancel),
    "retry": lambda e: Executors.with_retry(e, sleep=0.0),
    "timeout": lambda e: Executors.with_timeout(e, 600.0),
    "map": lambda e: Executors.with_map(e, same),
    "flat_map": lambda e: Executors.with_flat_map(e, f_return),
    "throttle": lambda e: Executors.with_throttle(e, 2),
    "throttle_block": lambda e: Executors.with_throttle(e, 2, block=True),
    "rate_limit": lambda e: Executors.with_rate_limit(e, 3, period=0.01),
    "cancel_on_shutdown": lambda e: Executors.with_cancel_on_shutdown(e),
    "every_wrapper": lambda e: Executors.with_retry(
        Executors.with_cancel_on_shutdown(
            Executors.with_rate_limit(
                Executors.with_timeout(
                    Executors.with_throttle(
                        Executors.with_flat_map(
                            Executors.with_map(
                                Executors.with_poll(e, resolve_all, accept_cancel),
                                same,
                            ),
                            f_return,
                        ),
                        2,
                    ),
                    600.0,
                ),
                3,
                period=0.01,
            )
        ),
        sleep=0.0,
    ),
}


@pytest.fixture
def thread_errors(monkeypatch: pytest.MonkeyPatch) -> list[BaseException]:
    """The exceptions that escape any thread during the test."""
    escaped: list[BaseException] = []

    def hook(args: threading.ExceptHookArgs) -> None:
        escaped.append(args.exc_value or RuntimeError(str(args.exc_type)))

    monkeypatch.setattr(threading, "excepthook", hook)
    return escaped


def bounded(call: Callable[[], object]) -> None:
    """Run ``call`` in a thread; fail the test if it does not return in time."""
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(TIMEOUT)
    assert not thread.is_alive(), f"{call} did not return in {TIMEOUT} s"


# -- every wrapper, every refusing delegate --------------------------------------------


@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_submit_error_reaches_the_caller_or_the_future(
    wrapper: str, refusing: Refusing, thread_errors: list[BaseException]
):
    executor = WRAPPERS[wrapper](refusing.executor)
    futures: list[Future[Any]] = []
    raised: list[BaseException] = []

    for _ in range(8):  # more than any limit of the wrappers: nothing stays taken
        try:
            futures.append(executor.submit(echo, *refusing.args))
        except Exception as error:
            raised.append(error)

    assert wait(futures, timeout=TIMEOUT).not_done == set()
    errors = raised + [future.exception(timeout=0) for future in futures]
    assert len(errors) == 8
    assert all(error is not None and refusing.is_its_error(error) for error in errors)
    bounded(executor.shutdown)
    assert thread_errors == []


@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_wrapper_keeps_working_after_dask_refused_a_submit(
    wrapper: str, dask_client: Any, thread_errors: list[BaseException]
):
    refusing = dask_unpicklable(dask_client)
    executor = WRAPPERS[wrapper](refusing.executor)

    with contextlib.suppress(TypeError):  # raised by submit itself: as good
        executor.submit(echo, *refusing.args).exception(timeout=TIMEOUT)
    futures = [executor.submit(echo, n) for n in range(4)]

    assert [f.result(timeout=TIMEOUT) for f in futures] == [(n,) for n in range(4)]
    bounded(executor.shutdown)
    assert thread_errors == []


def test_asyncio_wrapper_raises_the_submit_error(refusing: Refusing):
    executor = Executors.with_asyncio(refusing.executor)

    async def submit() -> BaseException | None:
        try:
            await executor.submit(echo, *refusing.args)
        except Exception as error:
            return error
        return None

    error = asyncio.run(submit())

    assert error is not None
    assert refusing.is_its_error(error)
    bounded(executor.shutdown)


def test_bound_callable_raises_the_submit_error(refusing: Refusing):
    bound = Executors.bind(refusing.executor, echo)

    with pytest.raises((OSError, RuntimeError, TypeError)) as caught:
        bound(*refusing.args)

    assert refusing.is_its_error(caught.value)


# -- a pool shut down while the wrapper still has work for it -----------------------


def test_retry_after_the_pool_was_shut_down_fails_the_future(
    thread_errors: list[BaseException],
):
    pool = Executors.thread_pool(max_workers=1, name="closing")

    def fail_and_close_the_pool() -> None:
        pool.shutdown(wait=False)
        raise OSError("transient")

    future = pool.with_retry(sleep=0.0).submit(fail_and_close_the_pool)

    with pytest.raises(RuntimeError, match="shutdown"):
        future.result(timeout=TIMEOUT)
    assert thread_errors == []


@pytest.mark.parametrize(
    "wrap",
    [
        lambda e: Executors.with_throttle(e, 1),
        lambda e: Executors.with_rate_limit(e, 1, period=0.2),
    ],
    ids=["throttle", "rate_limit"],
)
def test_queued_work_for_a_pool_shut_down_meanwhile_fails_its_futures(
    wrap: Callable[[Executor], Executor], thread_errors: list[BaseException]
):
    gate = threading.Event()
    started = threading.Event()

    def first() -> str:
        started.set()
        assert gate.wait(TIMEOUT)
        return "first"

    # On the virtual clock the rate limit's window stays open until advance(): the
    # three submits are queued, whatever the speed of the machine.
    with virtual_time() as clock:
        pool = Executors.thread_pool(max_workers=1, name="closing")
        executor = wrap(pool)
        running = executor.submit(first)
        assert started.wait(TIMEOUT)
        pool.shutdown(wait=False)  # the running callable goes on
        queued = [executor.submit(echo, n) for n in range(3)]
        gate.set()

        assert running.result(timeout=TIMEOUT) == "first"
        clock.advance(1.0)  # the rate limit's next windows: 0.2, 0.4, 0.6 s
        assert wait(queued, timeout=TIMEOUT).not_done == set()
        errors = [future.exception(timeout=0) for future in queued]
        assert all(isinstance(error, RuntimeError) for error in errors)
        bounded(executor.shutdown)
    assert thread_errors == []
