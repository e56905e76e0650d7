"""RayExecutor, on a local Ray instance started once for the module.

Skipped where Ray is not installed; ``nox -s ray`` installs it and runs this module
(and makes a failing ``import ray`` an error rather than a skip).
The first executor starts Ray and owns it; the tests make executors that use the
running Ray, and the last test checks that the owner shuts it down.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import CancelledError, Future, wait
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("FLUENT_EXECUTORS_REQUIRE_RAY") == "1":  # set by nox -s ray
    import ray
    import ray.cloudpickle as ray_cloudpickle
else:
    ray = pytest.importorskip("ray")
    ray_cloudpickle = pytest.importorskip("ray.cloudpickle")

from fluent_executors import Executors, PollDescriptor, RayExecutor

TIMEOUT = 60.0  # seconds: Ray's workers start slowly on a loaded machine
RAY_INIT = {"num_cpus": 2, "include_dashboard": False, "log_to_driver": False}

# Ray's workers cannot import this test module: send its functions by value.
ray_cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def owner() -> Iterator[RayExecutor]:
    """The executor that started Ray; shut down by the last test."""
    if ray.is_initialized():
        pytest.skip("Ray was initialized by someone else")
    owner = Executors.ray(name="owner", **RAY_INIT)
    yield owner
    owner.shutdown()


@pytest.fixture
def executor(owner: RayExecutor) -> Iterator[RayExecutor]:
    executor = Executors.ray(name="test")
    yield executor
    executor.shutdown(cancel_futures=True)


def keywords(**kwargs: Any) -> dict[str, Any]:
    return kwargs


def fail_until(path: str, failures: int, value: Any) -> Any:
    """Raise ``OSError`` on the first ``failures`` calls (counted in a file)."""
    counter = Path(path)
    with counter.open("a") as file:
        file.write("x")
    calls = len(counter.read_text())
    if calls <= failures:
        raise OSError(f"transient failure {calls}")
    return value


def busy(seconds: float) -> None:
    """Work for ``seconds``, in Python: Ray's cancel interrupts it between two
    steps (it cannot interrupt a blocking C call like one long ``time.sleep``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.01)


def resolve_doubled(descriptors: list[PollDescriptor[Any]]) -> float:
    for descriptor in descriptors:
        descriptor.yield_result(descriptor.result * 2)
    return 0.01


def test_submit_runs_ray_tasks_and_returns_standard_futures(executor: RayExecutor):
    futures = [executor.submit(pow, 2, n) for n in range(6)]

    assert all(isinstance(future, Future) for future in futures)
    assert [f.result(timeout=TIMEOUT) for f in futures] == [2**n for n in range(6)]
    stats = executor.stats()  # counted as done before the results were seen
    assert (stats.kind, stats.name) == ("ray", "test")
    assert (stats.submitted, stats.done, stats.in_progress) == (6, 6, 0)


def test_exception_of_the_task_keeps_its_type(executor: RayExecutor):
    future = executor.submit(int, "not a number")

    with pytest.raises(ValueError, match="not a number"):
        future.result(timeout=TIMEOUT)
    assert (executor.stats().failed, executor.stats().done) == (1, 1)


def test_keyword_arguments_named_like_ray_options_reach_the_callable(
    executor: RayExecutor,
):
    names = ["num_cpus", "num_gpus", "resources", "max_retries", "name", "options"]
    arguments = {name: f"value of {name}" for name in names}

    assert executor.submit(keywords, **arguments).result(timeout=TIMEOUT) == arguments


def test_with_retry_retries_a_transient_failure(executor: RayExecutor, tmp_path: Path):
    retrying = executor.with_retry(sleep=0.0, max_attempts=3)

    future = retrying.submit(fail_until, str(tmp_path / "calls"), 2, "done")

    assert future.result(timeout=TIMEOUT) == "done"
    assert len((tmp_path / "calls").read_text()) == 3


def test_poll_chain_resolves_through_the_poll_function(executor: RayExecutor):
    polling = executor.with_poll(resolve_doubled)

    futures = [polling.submit(abs, -n) for n in range(4)]

    assert [f.result(timeout=TIMEOUT) for f in futures] == [0, 2, 4, 6]
    polling.shutdown()


def test_timeout_chain_cancels_a_task_not_done_in_time(executor: RayExecutor):
    timing_out = executor.with_timeout(TIMEOUT)

    stuck = timing_out.submit_timeout(0.05, busy, TIMEOUT)
    quick = timing_out.submit(abs, -1)

    assert wait([stuck], timeout=TIMEOUT).not_done == set()
    assert stuck.cancelled()
    assert quick.result(timeout=TIMEOUT) == 1


def test_cancel_cancels_the_ray_task(executor: RayExecutor, monkeypatch):
    cancelled_refs: list[Any] = []
    cancel_remote = executor._cancel_remote

    def recording(handle: Any) -> bool:
        cancelled_refs.append(handle.ref)
        return cancel_remote(handle)

    monkeypatch.setattr(executor, "_cancel_remote", recording)
    future = executor.submit(busy, TIMEOUT)

    assert future.cancel()
    assert future.cancelled()
    with pytest.raises(CancelledError):
        future.result(timeout=0)
    with pytest.raises(ray.exceptions.TaskCancelledError):
        ray.get(cancelled_refs[0], timeout=TIMEOUT)


def test_done_callbacks_run_in_the_executors_threads(executor: RayExecutor):
    ran_in: list[str] = []
    ran = threading.Event()
    future = executor.submit(abs, -3)

    future.add_done_callback(
        lambda _: (ran_in.append(threading.current_thread().name), ran.set())
    )

    assert ran.wait(TIMEOUT)
    assert ran_in[0].startswith("fluent-executors-ray-test")


def test_unpicklable_argument_makes_submit_raise(executor: RayExecutor):
    with pytest.raises(TypeError, match="serialize"):
        executor.submit(abs, threading.Lock())


def test_remote_options_apply_to_every_task(owner: RayExecutor):
    executor = Executors.ray(remote_options={"num_cpus": 2})

    def cpus() -> float:
        return float(ray.get_runtime_context().get_assigned_resources()["CPU"])

    assert executor.submit(cpus).result(timeout=TIMEOUT) == 2.0
    executor.shutdown()


def test_init_kwargs_are_refused_when_ray_is_running(owner: RayExecutor):
    with pytest.raises(ValueError, match="already initialized"):
        Executors.ray(num_cpus=1)


def test_bad_remote_options_are_refused_early(owner: RayExecutor):
    with pytest.raises(TypeError, match="remote_options must be a mapping"):
        Executors.ray(remote_options=[("num_cpus", 1)])  # type: ignore[arg-type]


def test_shutdown_of_an_executor_using_a_running_ray_leaves_it_running(
    owner: RayExecutor,
):
    executor = Executors.ray()
    executor.submit(abs, -1).result(timeout=TIMEOUT)

    executor.shutdown()

    assert not executor.owns_ray
    assert ray.is_initialized()


def test_shutdown_of_the_executor_that_started_ray_stops_it(owner: RayExecutor):
    assert owner.owns_ray
    assert owner.submit(abs, -2).result(timeout=TIMEOUT) == 2

    owner.shutdown()

    assert not ray.is_initialized()
