"""Metrics: exact counts through Prometheus and OpenTelemetry, and no metric code at
all when they are turned off or not installed."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import metrics_workload
import pytest
from wrapper_doubles import examples

from _fluent_executors import metrics as _metrics
from _fluent_executors.metrics import ENV_VAR
from fluent_executors import Executors

TESTS = Path(__file__).parent

# The tests that read what is recorded; those of the disabled paths run regardless.
recording = pytest.mark.skipif(
    _metrics.BACKENDS != ("prometheus", "otel"),
    reason=f"needs the prometheus and otel extras installed and {ENV_VAR} unset",
)

PROMETHEUS_NAMES = {
    "executors_created": "fluent_executors_executors_created_total",
    "executors_in_use": "fluent_executors_executors_in_use",
    "futures_created": "fluent_executors_futures_created_total",
    "futures_in_progress": "fluent_executors_futures_in_progress",
    "futures_cancelled": "fluent_executors_futures_cancelled_total",
    "futures_failed": "fluent_executors_futures_failed_total",
    "future_duration_count": "fluent_executors_future_duration_seconds_count",
    "poll_calls": "fluent_executors_poll_calls_total",
    "poll_errors": "fluent_executors_poll_errors_total",
    "poll_duration_count": "fluent_executors_poll_duration_seconds_count",
    "retry_attempts": "fluent_executors_retry_attempts_total",
    "throttle_queue_length": "fluent_executors_throttle_queue_length",
    "timeouts": "fluent_executors_timeouts_total",
}


def unique_name() -> str:
    return f"metrics-{uuid.uuid4().hex[:12]}"


def prometheus(measure: str, kind: str, name: str) -> float:
    """The value of a measure in the default registry; 0 without a series."""
    import prometheus_client

    value = prometheus_client.REGISTRY.get_sample_value(
        PROMETHEUS_NAMES[measure], {"type": kind, "executor": name}
    )
    return 0.0 if value is None else float(value)


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that can import the tests' helpers."""
    environ = {name: value for name, value in os.environ.items() if name != ENV_VAR}
    environ["PYTHONPATH"] = os.pathsep.join([str(TESTS), environ.get("PYTHONPATH", "")])
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# -- exact counts ---------------------------------------------------------------------


# The measures that an executor's stats() also holds, read from them.
STATS_OF_MEASURES: dict[str, Callable[[Any], int]] = {
    "futures_created": lambda s: s.submitted,
    "futures_in_progress": lambda s: s.in_progress,
    "futures_cancelled": lambda s: s.cancelled,
    "futures_failed": lambda s: s.failed,
    "poll_calls": lambda s: getattr(s, "polls", 0),
    "poll_errors": lambda s: getattr(s, "poll_errors", 0),
    "retry_attempts": lambda s: getattr(s, "attempts", s.submitted) - s.submitted,
    "throttle_queue_length": lambda s: getattr(s, "queued", 0),
    "timeouts": lambda s: getattr(s, "timeouts", 0),
}


@recording
def test_prometheus_records_the_exact_counts_of_a_known_workload() -> None:
    prefix = unique_name()
    at_queue_full: dict[tuple[str, str], dict[str, float]] = {}

    def read_queue() -> None:
        for (kind, suffix), measures in metrics_workload.EXPECTED_AT_QUEUE_FULL.items():
            at_queue_full[kind, suffix] = {
                measure: prometheus(measure, kind, prefix + suffix)
                for measure in measures
            }

    stats = metrics_workload.run(prefix, read_queue)

    assert at_queue_full == metrics_workload.EXPECTED_AT_QUEUE_FULL
    # Each executor's stats() holds the counts its metrics were fed.
    for (kind, suffix), executor_stats in stats.items():
        assert {
            measure: prometheus(measure, kind, prefix + suffix)
            for measure in STATS_OF_MEASURES
        } == {
            measure: float(read(executor_stats))
            for measure, read in STATS_OF_MEASURES.items()
        }, (kind, suffix)
    recorded = {
        (kind, suffix): {
            measure: prometheus(measure, kind, prefix + suffix) for measure in measures
        }
        for (kind, suffix), measures in metrics_workload.EXPECTED.items()
    }
    assert recorded == metrics_workload.EXPECTED
    polls = prometheus("poll_calls", "poll", prefix)
    assert polls >= 1
    assert prometheus("poll_duration_count", "poll", prefix) == polls


_OTEL_WORKLOAD = """
    import json

    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

    import metrics_workload

    def read():
        points = {}
        for resource in reader.get_metrics_data().resource_metrics:
            for scope in resource.scope_metrics:
                assert scope.scope.name == "fluent_executors"
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        a = point.attributes
                        key = f"{metric.name} {a['type']} {a['executor']}"
                        points[key] = getattr(point, "value", None)
                        if hasattr(point, "count"):
                            points[key] = [point.count, point.sum, metric.unit]
        return points

    at_queue_full = {}
    metrics_workload.run("otel", lambda: at_queue_full.update(read()))
    print(json.dumps({"at_queue_full": at_queue_full, "end": read()}))
"""

OTEL_NAMES = {
    "executors_created": "fluent_executors.executors.created",
    "executors_in_use": "fluent_executors.executors.in_use",
    "futures_created": "fluent_executors.futures.created",
    "futures_in_progress": "fluent_executors.futures.in_progress",
    "futures_cancelled": "fluent_executors.futures.cancelled",
    "futures_failed": "fluent_executors.futures.failed",
    "future_duration_count": "fluent_executors.future.duration",
    "poll_calls": "fluent_executors.poll.calls",
    "poll_errors": "fluent_executors.poll.errors",
    "poll_duration_count": "fluent_executors.poll.duration",
    "retry_attempts": "fluent_executors.retry.attempts",
    "throttle_queue_length": "fluent_executors.throttle.queue_length",
    "timeouts": "fluent_executors.timeouts",
}


def _otel_value(points: dict[str, Any], measure: str, kind: str, name: str) -> float:
    point = points.get(f"{OTEL_NAMES[measure]} {kind} {name}")
    if point is None:
        return 0.0
    return float(point[0] if isinstance(point, list) else point)


@recording
def test_opentelemetry_records_the_exact_counts_of_a_known_workload() -> None:
    # In a subprocess: the global meter provider can be set only once per process.
    completed = run_python(_OTEL_WORKLOAD)

    assert completed.returncode == 0, completed.stderr
    points = json.loads(completed.stdout)
    for moment, expected in [
        ("at_queue_full", metrics_workload.EXPECTED_AT_QUEUE_FULL),
        ("end", metrics_workload.EXPECTED),
    ]:
        recorded = {
            (kind, suffix): {
                measure: _otel_value(points[moment], measure, kind, "otel" + suffix)
                for measure in measures
            }
            for (kind, suffix), measures in expected.items()
        }
        assert recorded == expected, moment
    end = points["end"]
    polls = _otel_value(end, "poll_calls", "poll", "otel")
    assert polls >= 1
    assert _otel_value(end, "poll_duration_count", "poll", "otel") == polls
    count, seconds, unit = end["fluent_executors.future.duration retry otel"]
    assert (count, unit) == (15, "s")
    assert 0 < seconds < 60


# -- every executor, once per layer ---------------------------------------------------


def _wrap(kind: str, name: str) -> Callable[[], Executor]:
    """A factory of a one-layer chain on a sync executor whose outer kind is
    ``kind``."""
    base = {"name": name}
    if kind == "threadpool":
        return lambda: Executors.thread_pool(1, **base)
    if kind == "processpool":
        return lambda: Executors.process_pool(1, **base)
    if kind == "sync":
        return lambda: Executors.sync(**base)
    wrap = examples()[kind]
    return lambda: wrap(Executors.sync(name=name))  # the wrapper takes its name


# The pools, the sync executor and every wrapper whose futures are concurrent ones.
KINDS = [
    *("sync", "threadpool", "processpool"),
    *examples(concurrent=True),
]


@recording
@pytest.mark.parametrize("kind", KINDS)
def test_each_executor_counts_itself_and_its_own_futures(kind: str) -> None:
    name = unique_name()
    executor = _wrap(kind, name)()
    in_use = prometheus("executors_in_use", kind, name)

    with executor:
        future = executor.submit(abs, -1)
        metrics_workload.wait_recorded([future])

    assert in_use == 1
    assert prometheus("executors_created", kind, name) == 1
    assert prometheus("executors_in_use", kind, name) == 0
    assert prometheus("futures_created", kind, name) == 1
    assert prometheus("futures_in_progress", kind, name) == 0
    assert prometheus("future_duration_count", kind, name) == 1
    stats = executor.stats()  # the same counts, read from the executor
    assert (stats.submitted, stats.done, stats.in_progress) == (1, 1, 0)


@recording
def test_the_asyncio_executor_counts_its_asyncio_futures() -> None:
    name = unique_name()
    executor = Executors.thread_pool(1, name=name).with_asyncio()

    async def main() -> int:
        future = executor.submit(abs, -1)
        result = await future
        await asyncio.sleep(0)  # let the future's done callbacks run
        return result

    with executor:
        assert asyncio.run(main()) == 1

    assert prometheus("executors_created", "asyncio", name) == 1
    assert prometheus("executors_in_use", "asyncio", name) == 0
    assert prometheus("futures_created", "asyncio", name) == 1
    assert prometheus("futures_in_progress", "asyncio", name) == 0


@recording
def test_a_collected_executor_is_no_longer_in_use() -> None:
    name = unique_name()
    executor = Executors.sync(name=name)
    assert prometheus("executors_in_use", "sync", name) == 1

    del executor
    gc.collect()

    assert prometheus("executors_in_use", "sync", name) == 0
    assert prometheus("executors_created", "sync", name) == 1


@recording
def test_shutting_down_twice_counts_the_executor_out_of_use_once() -> None:
    name = unique_name()
    executor = Executors.sync(name=name).with_timeout(60)

    executor.shutdown()
    executor.shutdown()

    assert prometheus("executors_in_use", "timeout", name) == 0
    assert prometheus("executors_in_use", "sync", name) == 0


@recording
def test_an_executor_whose_construction_raises_is_not_counted() -> None:
    name = unique_name()
    with pytest.raises(ValueError, match="timeout"):
        Executors.sync(name=name).with_timeout(-1)

    assert prometheus("executors_created", "timeout", name) == 0


@recording
def test_the_default_registry_exposes_the_metrics_as_text() -> None:
    from prometheus_client import generate_latest

    name = unique_name()
    with Executors.sync(name=name) as executor:
        executor.submit(abs, -1)

    lines = generate_latest().decode().splitlines()

    created = f'fluent_executors_futures_created_total{{executor="{name}",type="sync"}}'
    bucket = "fluent_executors_future_duration_seconds_bucket"
    all_durations = f'{bucket}{{executor="{name}",le="+Inf",type="sync"}}'
    assert f"{created} 1.0" in lines
    assert f"{all_durations} 1.0" in lines


def test_a_duration_equal_to_a_bucket_bound_falls_in_that_bucket() -> None:
    histogram = _metrics.Histogram((0.1, 1.0))

    for seconds in (0.1, 0.5, 1.0, 7.0):
        histogram.observe(seconds)

    assert histogram.counts == [1, 2, 1]
    assert histogram.total == pytest.approx(8.6)


# -- turned off, or not installed -----------------------------------------------------

_CHECK_DISABLED = """
    import sys

    from _fluent_executors import metrics as _metrics
    from fluent_executors import Executors

    executor = Executors.thread_pool(2).with_map(str).with_retry().with_timeout(60)
    layers = [executor, executor.delegate, executor.delegate.delegate]
    layers.append(layers[-1].delegate)
    with executor:
        assert executor.submit(abs, -1).result(timeout=30) == "1"
    stats = [layer.stats() for layer in layers]  # counted all the same
    assert [(s.submitted, s.done, s.in_progress) for s in stats] == [(1, 1, 0)] * 4
    print(
        _metrics.ENABLED,
        _metrics.BACKENDS,
        [layer._counts.metrics for layer in layers],
        sorted(
            {
                name.split(".")[0]
                for name, module in sys.modules.items()
                if name.startswith(("prometheus_client", "opentelemetry"))
                and module is not None
            }
        ),
    )
"""

_BLOCK_IMPORTS = """
    import sys

    sys.modules["prometheus_client"] = None  # import raises ImportError
    sys.modules["opentelemetry"] = None
"""


def test_metrics_turned_off_by_the_environment_import_no_backend() -> None:
    completed = run_python(_CHECK_DISABLED, **{ENV_VAR: "0"})

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split("\n")[0] == "False () [None, None, None, None] []"


def test_metrics_without_the_packages_record_nothing() -> None:
    completed = run_python(_BLOCK_IMPORTS + _CHECK_DISABLED)

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split("\n")[0] == "False () [None, None, None, None] []"


@recording
@pytest.mark.parametrize(
    ("setting", "backends"),
    [
        ("prometheus", "('prometheus',)"),
        ("otel", "('otel',)"),
        ("OpenTelemetry, prometheus", "('prometheus', 'otel')"),
        ("1", "('prometheus', 'otel')"),
    ],
)
def test_the_environment_picks_the_backends(setting: str, backends: str) -> None:
    completed = run_python(
        "from _fluent_executors import metrics as _metrics; print(_metrics.BACKENDS)",
        **{ENV_VAR: setting},
    )

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == backends


def test_an_unknown_backend_in_the_environment_is_logged_and_ignored() -> None:
    completed = run_python(
        "from _fluent_executors import metrics as _metrics; print(_metrics.BACKENDS)",
        **{ENV_VAR: "statsd"},
    )

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "()"
    assert "unknown backend 'statsd'" in completed.stderr


def test_an_executor_collected_inside_a_locked_section_of_its_tally_counts_closed():
    # The garbage collector runs the finalizer of a collected executor at any
    # allocation, in whatever thread: inside a section that holds the tally's lock
    # already (a histogram's observe(), say). That deadlocked with a plain Lock.
    tally = _metrics.Tally("retry", "collected")
    done = threading.Event()

    def inside_a_locked_section() -> None:
        with tally.lock:
            _metrics._count_closed(tally)  # as the finalizer would, from the GC
        done.set()

    threading.Thread(target=inside_a_locked_section, daemon=True).start()

    assert done.wait(10)
    assert tally.executors_closed == 1
