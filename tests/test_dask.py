"""DaskExecutor, on local Dask clusters of threads and of processes.

The clusters are started once per session (a cluster of processes takes seconds)
and shared; each test makes its own executor on the cluster's client. Tasks that
must wait for the test block on a Dask ``Event`` and report through a Dask
``Queue``, so the test knows where they are without sleeping.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError, Future, wait
from pathlib import Path
from typing import Any

import pytest

distributed = pytest.importorskip("distributed")

import dask.config  # noqa: E402
from distributed.scheduler import KilledWorker  # noqa: E402

from fluent_executors import DaskExecutor, Executors, PollDescriptor  # noqa: E402

TIMEOUT = 60.0  # seconds: generous, for a loaded machine with worker processes
EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


# -- clusters -------------------------------------------------------------------------


# Dask gives up on a task (KilledWorker) once more than ALLOWED_FAILURES workers
# have died running it. And a local cluster closes for good a worker that is still
# dead (restarting) lost-worker-timeout after one of its deaths: the fault tests,
# which kill workers in quick succession, must not leave the cluster without any.
DASK_CONFIG = {
    "distributed.scheduler.allowed-failures": 1,
    "distributed.deploy.lost-worker-timeout": "1h",
}


@pytest.fixture(scope="module")
def clusters() -> Iterator[Callable[[bool], Any]]:
    """Returns the client of a 2-worker local cluster of processes or threads,
    started at first use and closed at the end of this module: the scheduler's
    threads draw from the global random state, which must not change while
    Hypothesis draws the data of a later module's test."""
    with dask.config.set(DASK_CONFIG):
        yield from _clusters()


def _clusters() -> Iterator[Callable[[bool], Any]]:
    made: dict[bool, tuple[Any, Any]] = {}

    def get(processes: bool) -> Any:
        if processes not in made:
            cluster = distributed.LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=processes,
                dashboard_address=None,
                scheduler_kwargs={"dashboard_address": ":0"},
            )
            made[processes] = (
                cluster,
                distributed.Client(cluster, set_as_default=False),
            )
        return made[processes][1]

    yield get
    for cluster, client in made.values():
        client.close()
        cluster.close()


@pytest.fixture(params=["threads", "processes"])
def client(request: pytest.FixtureRequest, clusters: Callable[[bool], Any]) -> Any:
    return clusters(request.param == "processes")


@pytest.fixture
def process_client(clusters: Callable[[bool], Any]) -> Any:
    return clusters(True)


@pytest.fixture
def executor(client: Any) -> Iterator[DaskExecutor]:
    executor = DaskExecutor(client=client, name="test")
    yield executor
    executor.shutdown(cancel_futures=True)


class Gate:
    """A Dask ``Event`` that tasks wait on, and a ``Queue`` where each task puts
    its worker's process id when it starts."""

    def __init__(self, client: Any) -> None:
        self.name = f"gate-{uuid.uuid4().hex}"
        self.event = distributed.Event(self.name, client=client)
        self.started = distributed.Queue(self.name, client=client)

    def wait_started(self, count: int) -> list[int]:
        """Wait until ``count`` tasks have started; return their process ids."""
        return [self.started.get(timeout=TIMEOUT) for _ in range(count)]

    def open(self) -> None:
        self.event.set()


def gated(name: str, value: Any) -> Any:
    """A task: report its start, wait for the gate to open, return ``value``."""
    distributed.Queue(name).put(os.getpid())
    if not distributed.Event(name).wait(timeout=TIMEOUT):
        raise TimeoutError("the gate stayed closed")
    return value


def keywords(**kwargs: Any) -> dict[str, Any]:
    return kwargs


def fail_until(path: str, failures: int, value: Any) -> Any:
    """A task that raises ``OSError`` on its first ``failures`` runs (counted in a
    file, so across processes), then returns ``value``."""
    counter = Path(path)
    with counter.open("a") as file:
        file.write("x")
    runs = len(counter.read_text())
    if runs <= failures:
        raise OSError(f"transient failure {runs}")
    return value


def die_until(path: str, deaths: int, value: Any) -> Any:
    """A task that kills its own worker process on its first ``deaths`` runs."""
    counter = Path(path)
    with counter.open("a") as file:
        file.write("x")
    if len(counter.read_text()) <= deaths:
        os.kill(os.getpid(), signal.SIGKILL)
    return value


def worker_address() -> str:
    return str(distributed.get_worker().address)


# -- results and errors ---------------------------------------------------------------


def test_submit_returns_standard_futures_with_the_results(executor: DaskExecutor):
    futures = [executor.submit(pow, 2, n) for n in range(8)]

    assert all(isinstance(future, Future) for future in futures)
    assert [future.result(timeout=TIMEOUT) for future in futures] == [
        2**n for n in range(8)
    ]
    stats = executor.stats()  # counted as done before the results were seen
    assert (stats.kind, stats.name) == ("dask", "test")
    assert (stats.submitted, stats.done, stats.in_progress) == (8, 8, 0)


def test_exception_of_the_callable_fails_the_future(executor: DaskExecutor):
    future = executor.submit(int, "not a number")

    with pytest.raises(ValueError, match="not a number"):
        future.result(timeout=TIMEOUT)
    assert (executor.stats().failed, executor.stats().done) == (1, 1)


def test_keyword_arguments_named_like_dask_options_reach_the_callable(
    executor: DaskExecutor,
):
    names = ["key", "workers", "resources", "retries", "priority", "pure"]
    names += ["fifo_timeout", "allow_other_workers", "actor", "actors"]
    arguments = {name: f"value of {name}" for name in names}

    future = executor.submit(keywords, **arguments)

    assert future.result(timeout=TIMEOUT) == arguments


def test_identical_submits_run_each_time(executor: DaskExecutor):
    first = executor.submit(uuid.uuid4)
    second = executor.submit(uuid.uuid4)

    assert first.result(timeout=TIMEOUT) != second.result(timeout=TIMEOUT)


def test_with_retry_retries_a_transient_failure(executor: DaskExecutor, tmp_path: Path):
    retrying = executor.with_retry(sleep=0.0, max_attempts=3)

    future = retrying.submit(fail_until, str(tmp_path / "runs"), 2, "done")

    assert future.result(timeout=TIMEOUT) == "done"
    assert len((tmp_path / "runs").read_text()) == 3


def test_submit_options_apply_to_every_task(client: Any):
    target = sorted(client.scheduler_info()["workers"])[0]
    executor = DaskExecutor(client=client, workers=[target])

    futures = [executor.submit(worker_address) for _ in range(4)]

    assert {future.result(timeout=TIMEOUT) for future in futures} == {target}
    executor.shutdown()


# -- chains ---------------------------------------------------------------------------


def resolve_all(descriptors: list[PollDescriptor[Any]]) -> float:
    for descriptor in descriptors:
        descriptor.yield_result(descriptor.result * 10)
    return 0.01


def test_poll_chain_resolves_through_the_poll_function(executor: DaskExecutor):
    polling = executor.with_poll(resolve_all)

    futures = [polling.submit(abs, -n) for n in range(4)]

    assert [future.result(timeout=TIMEOUT) for future in futures] == [0, 10, 20, 30]
    polling.shutdown()


def test_timeout_chain_cancels_a_task_not_done_in_time(client: Any):
    executor = DaskExecutor(client=client)
    gate = Gate(client)
    timing_out = executor.with_timeout(TIMEOUT)

    stuck = timing_out.submit_timeout(0.05, gated, gate.name, "late")
    quick = timing_out.submit(abs, -1)

    assert wait([stuck], timeout=TIMEOUT).not_done == set()
    assert stuck.cancelled()
    # The stuck task holds its worker's thread until the gate opens; the quick one
    # may have been given the same worker (the other one still starting), behind it.
    gate.open()
    assert quick.result(timeout=TIMEOUT) == 1
    timing_out.shutdown()


def test_retry_and_timeout_chain_runs_to_the_result(executor: DaskExecutor):
    chain = executor.with_timeout(TIMEOUT).with_retry(sleep=0.0)

    assert chain.submit(divmod, 7, 2).result(timeout=TIMEOUT) == (3, 1)


# -- futures and callbacks ------------------------------------------------------------


def test_done_callbacks_run_in_the_executors_threads(executor: DaskExecutor):
    ran_in: list[str] = []
    ran = threading.Event()
    future = executor.submit(abs, -3)

    future.add_done_callback(
        lambda _: (ran_in.append(threading.current_thread().name), ran.set())
    )

    assert ran.wait(TIMEOUT)
    assert ran_in[0].startswith("fluent-executors-dask-test")


def test_a_done_callback_may_block_on_another_future(client: Any):
    executor = DaskExecutor(client=client)
    gate = Gate(client)
    later = executor.submit(gated, gate.name, "later")
    seen: list[Any] = []
    seen_done = threading.Event()

    def wait_for_later(_: Future[Any]) -> None:
        gate.open()
        seen.append(later.result(timeout=TIMEOUT))
        seen_done.set()

    executor.submit(abs, -1).add_done_callback(wait_for_later)

    assert seen_done.wait(TIMEOUT)
    assert seen == ["later"]
    executor.shutdown()


def test_cancel_cancels_a_running_task(client: Any):
    executor = DaskExecutor(client=client)
    gate = Gate(client)
    future = executor.submit(gated, gate.name, "never")
    gate.wait_started(1)

    assert future.cancel()
    assert future.cancelled()
    with pytest.raises(CancelledError):
        future.result(timeout=0)
    gate.open()
    executor.shutdown()


def test_cancel_of_a_done_future_returns_false(executor: DaskExecutor):
    future = executor.submit(abs, -1)
    future.result(timeout=TIMEOUT)

    assert not future.cancel()


def test_running_is_false_since_dask_does_not_say(executor: DaskExecutor):
    future = executor.submit(abs, -1)

    assert not future.running()


# -- shutdown and ownership -----------------------------------------------------------


def test_shutdown_leaves_a_users_client_open(client: Any):
    executor = DaskExecutor(client=client)
    executor.submit(abs, -1).result(timeout=TIMEOUT)

    executor.shutdown()

    assert client.status == "running"
    assert client.submit(abs, -2).result(timeout=TIMEOUT) == 2


def test_shutdown_closes_the_embedded_cluster():
    executor = Executors.dask(cluster_options={"processes": False, "n_workers": 1})
    cluster = executor._cluster
    assert executor.owns_cluster
    assert executor.submit(abs, -4).result(timeout=TIMEOUT) == 4

    executor.shutdown()

    assert executor.client.status == "closed"
    assert cluster.status.name == "closed"


def test_embedded_cluster_runs_worker_processes_without_dashboard(
    monkeypatch: pytest.MonkeyPatch, clusters: Callable[[bool], Any]
):
    made: list[dict[str, Any]] = []
    threads = clusters(False)

    def local_cluster(**options: Any) -> Any:
        made.append(options)
        return threads.cluster

    monkeypatch.setattr(distributed, "LocalCluster", local_cluster)
    monkeypatch.setattr(DaskExecutor, "_close_cluster", lambda self: None)
    executor = DaskExecutor(cluster_options={"n_workers": 3})
    executor.shutdown()

    assert made == [
        {
            "processes": True,
            "dashboard_address": None,
            "scheduler_kwargs": {"dashboard_address": ":0"},
            "n_workers": 3,
        }
    ]


def test_address_connects_and_shutdown_leaves_the_cluster_running(client: Any):
    executor = DaskExecutor(client.scheduler.address)
    assert not executor.owns_cluster
    assert executor.submit(abs, -5).result(timeout=TIMEOUT) == 5

    executor.shutdown()

    assert executor.client.status == "closed"
    assert client.submit(abs, -6).result(timeout=TIMEOUT) == 6


def test_shutdown_with_cancel_futures_cancels_pending_tasks(client: Any):
    executor = DaskExecutor(client=client)
    gate = Gate(client)
    futures = [executor.submit(gated, gate.name, n) for n in range(4)]

    executor.shutdown(cancel_futures=True)

    assert all(future.cancelled() for future in futures)
    gate.open()


def test_shutdown_without_wait_closes_once_the_last_future_is_done():
    executor = DaskExecutor(cluster_options={"processes": False, "n_workers": 1})
    gate = Gate(executor.client)
    future = executor.submit(gated, gate.name, "last")
    closed = threading.Event()
    original = executor._close_resources

    def close() -> None:
        original()
        closed.set()

    executor._close_resources = close  # type: ignore[method-assign]

    executor.shutdown(wait=False)
    assert not closed.is_set()
    gate.open()

    assert future.result(timeout=TIMEOUT) == "last"
    assert closed.wait(TIMEOUT)
    assert executor.client.status == "closed"


def test_submit_after_shutdown_raises_runtime_error(client: Any):
    executor = DaskExecutor(client=client)
    executor.shutdown()

    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(abs, -1)


def test_executor_is_a_fluent_executor_with_its_name(client: Any):
    executor = Executors.dask(client=client, name="cluster")

    assert executor.with_retry().name == "cluster"
    executor.shutdown()


# -- arguments ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"address": 8786}, TypeError, "address must be a str"),
        ({"address": ""}, ValueError, "address must not be empty"),
        ({"client": "tcp://x:1"}, TypeError, "client must be a distributed.Client"),
        ({"name": 3}, TypeError, "name must be a str"),
        ({"pure": True}, TypeError, "unexpected submit options: pure"),
        ({"key": "k"}, TypeError, "unexpected submit options: key"),
        ({"n_workers": 2}, TypeError, "cluster_options"),
        ({"cluster_options": [1]}, TypeError, "cluster_options must be a mapping"),
    ],
)
def test_bad_arguments_are_refused_early(
    arguments: dict[str, Any], error: type[Exception], match: str
):
    with pytest.raises(error, match=match):
        DaskExecutor(**arguments)


def test_address_and_client_together_are_refused(client: Any):
    with pytest.raises(TypeError, match="address or client, not both"):
        DaskExecutor("tcp://127.0.0.1:8786", client=client)


def test_cluster_options_with_a_client_are_refused(client: Any):
    with pytest.raises(TypeError, match="cannot be given with address or client"):
        DaskExecutor(client=client, cluster_options={"n_workers": 1})


def test_submit_refuses_a_non_callable(executor: DaskExecutor):
    with pytest.raises(TypeError, match="fn must be callable"):
        executor.submit(42)  # type: ignore[arg-type]


# -- faults ---------------------------------------------------------------------------


def test_fault_worker_killed_while_tasks_run_every_future_ends(process_client: Any):
    executor = DaskExecutor(client=process_client)
    gate = Gate(process_client)
    futures = [executor.submit(gated, gate.name, n) for n in range(6)]
    victim, _ = gate.wait_started(2)  # one task on each worker

    os.kill(victim, signal.SIGKILL)
    gate.open()

    not_done = wait(futures, timeout=TIMEOUT).not_done
    assert not_done == set()
    for n, future in enumerate(futures):
        # Recomputed on a live worker, or failed with Dask's error for it.
        error = future.exception()
        assert error is None or isinstance(error, KilledWorker)
        if error is None:
            assert future.result() == n
    executor.shutdown()


def test_fault_killed_worker_error_is_recovered_by_with_retry(
    process_client: Any, tmp_path: Path
):
    executor = DaskExecutor(client=process_client)
    retrying = executor.with_retry(
        sleep=0.0, max_attempts=5, exception_base=KilledWorker
    )
    # A task that kills its worker twice fails with KilledWorker (see DASK_CONFIG);
    # retried, it then succeeds.
    plain = executor.submit(die_until, str(tmp_path / "plain"), 2, "plain")
    assert isinstance(plain.exception(timeout=TIMEOUT), KilledWorker)

    retried = retrying.submit(die_until, str(tmp_path / "retried"), 2, "retried")

    assert retried.result(timeout=TIMEOUT) == "retried"
    retrying.shutdown()


# -- the example ----------------------------------------------------------------------


def test_fan_out_example_counts_the_primes_on_a_cluster(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    fan_out = importlib.import_module("fan_out")

    outcome = fan_out.run(["--limit", "20000", "--chunks", "8", "--workers", "2"])

    assert outcome.primes == 2262  # the primes below 20,000
    assert outcome.workers == 2
    assert outcome.speed_up > 0


def test_an_embedded_cluster_that_fails_to_start_is_started_again(monkeypatch, caplog):
    distributed = pytest.importorskip("distributed")
    real = distributed.LocalCluster
    attempts = []

    def flaky_cluster(**options):
        attempts.append(options)
        if len(attempts) < 3:
            raise OSError("address already in use")
        return real(**options)

    monkeypatch.setattr(distributed, "LocalCluster", flaky_cluster)
    executor = DaskExecutor(cluster_options={"processes": False, "n_workers": 1})
    try:
        assert executor.submit(pow, 2, 5).result(timeout=60) == 32
    finally:
        executor.shutdown()
    assert len(attempts) == 3
    assert [r.levelname for r in caplog.records if "attempt" in r.getMessage()] == [
        "WARNING",
        "WARNING",
    ]


def test_an_embedded_cluster_failing_three_times_raises_naming_the_cause(monkeypatch):
    distributed = pytest.importorskip("distributed")
    attempts = []

    def broken_cluster(**options):
        attempts.append(options)
        raise OSError("address already in use")

    monkeypatch.setattr(distributed, "LocalCluster", broken_cluster)
    with pytest.raises(
        RuntimeError, match="after 3 attempts: OSError: address already"
    ):
        DaskExecutor()
    assert len(attempts) == 3


def test_bad_cluster_options_are_not_retried(monkeypatch):
    distributed = pytest.importorskip("distributed")
    attempts = []

    def picky_cluster(**options):
        attempts.append(options)
        raise TypeError("unexpected keyword 'n_wrokers'")

    monkeypatch.setattr(distributed, "LocalCluster", picky_cluster)
    with pytest.raises(TypeError, match="n_wrokers"):
        DaskExecutor(cluster_options={"n_wrokers": 1})
    assert len(attempts) == 1


UNGUARDED_SCRIPT = """\
from fluent_executors import Executors

executor = Executors.dask(cluster_options={"n_workers": 1})
executor.shutdown()
"""


def test_an_embedded_cluster_started_without_the_main_guard_stops_with_one_error(
    tmp_path: Path,
) -> None:
    """A script that starts the embedded cluster at its top level, without
    ``if __name__ == "__main__":``, stops at once with one error naming the guard
    (each spawned worker would run the script again: docs/scaling.rst), rather than
    starting workers that fail in thousands of lines."""
    import subprocess

    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED_SCRIPT)
    source = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), *sys.path])}
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )

    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("Traceback") == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: an embedded Dask LocalCluster"), last
    assert f"({script}, line 3)" in last
    assert 'if __name__ == "__main__":' in last


def test_the_main_guard_check_passes_a_call_under_the_guard(tmp_path: Path) -> None:
    """The check reads the main module's source: a line under the guard passes (the
    cluster is not started here: the check is called as DaskExecutor calls it)."""
    import runpy

    script = tmp_path / "guarded.py"
    script.write_text(
        "from fluent_executors import dask\n"
        "if __name__ == '__main__':\n"
        "    found = dask._unguarded_main_line()\n"
        "unguarded = dask._unguarded_main_line()\n"
    )
    main = sys.modules["__main__"]
    try:
        found = runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.modules["__main__"] = main
    assert found["found"] is None
    assert found["unguarded"] == f"{script}, line 4"
