"""The submitter's contextvars context in the work, and OpenTelemetry's spans (see
the guide's "Context variables" and the metrics page's "Tracing")."""

from __future__ import annotations

import contextvars
import pickle
import threading
from collections.abc import Iterator
from concurrent.futures import Executor, Future
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode
from test_init import run_python

from _fluent_executors import tracing as _tracing
from fluent_executors import ExceptionRetryPolicy, Executors, PollDescriptor

request_id: contextvars.ContextVar[str] = contextvars.ContextVar(
    "request_id", default="none"
)

TIMEOUT = 10.0  # seconds: a bound on waits that end at once when all is well


# -- the context ----------------------------------------------------------------------


def test_the_library_pool_runs_the_callable_in_a_copy_of_the_submitters_context() -> (
    None
):
    def set_and_read() -> str:
        seen = request_id.get()
        request_id.set("set by the callable")
        return seen

    with Executors.thread_pool(2) as pool:
        token = request_id.set("req-1")
        try:
            assert pool.submit(set_and_read).result(TIMEOUT) == "req-1"
            # The callable's changes stay in its copy.
            assert request_id.get() == "req-1"
        finally:
            request_id.reset(token)
        assert pool.submit(request_id.get).result(TIMEOUT) == "none"


def test_a_context_is_captured_once_per_submit_by_the_outermost_layer() -> None:
    seen: list[object] = []

    class Recording(Executor):
        """A delegate that records what it is given."""

        def __init__(self) -> None:
            self.pool = Executors.sync()

        def submit(  # type: ignore[override]
            self, fn: Any, *args: Any, **kwargs: Any
        ) -> Future[Any]:
            seen.append(fn)
            return self.pool.submit(fn, *args, **kwargs)

        def shutdown(self, wait: bool = True, **kwargs: Any) -> None:
            self.pool.shutdown(wait)

    recording = Recording()
    chain = Executors.with_timeout(
        Executors.with_map(Executors.with_retry(recording, max_attempts=1), str), 60
    )
    with chain:
        token = request_id.set("req-2")
        try:
            assert chain.submit(request_id.get).result(TIMEOUT) == "req-2"
        finally:
            request_id.reset(token)
    [given] = seen
    # One object stands for the callable, down the chain: it equals the callable,
    # has its attributes, and pickles as it.
    assert type(given) is _tracing.InContext
    assert given == request_id.get
    assert given.__name__ == "get"
    assert pickle.loads(pickle.dumps(_tracing.InContext(len, given.context, None))) is (
        len
    )


def test_later_attempts_of_a_retry_run_in_the_submitters_context() -> None:
    seen: list[tuple[str, str]] = []

    def flaky() -> str:
        seen.append((request_id.get(), threading.current_thread().name))
        if len(seen) < 3:
            raise ConnectionError("try again")
        return "done"

    policy = ExceptionRetryPolicy(max_attempts=3, sleep=0.0)
    with Executors.thread_pool(2).with_retry(policy) as executor:
        token = request_id.set("req-3")
        try:
            future = executor.submit(flaky)
        finally:
            request_id.reset(token)
        assert future.result(TIMEOUT) == "done"
    assert [value for value, _ in seen] == ["req-3"] * 3


def test_a_throttles_queued_callable_runs_in_its_own_submitters_context() -> None:
    release = threading.Event()

    def first() -> str:
        release.wait(TIMEOUT)
        return request_id.get()

    with Executors.thread_pool(2).with_throttle(1) as throttle:
        token = request_id.set("first")
        try:
            running = throttle.submit(first)
        finally:
            request_id.reset(token)
        token = request_id.set("second")
        try:
            queued = throttle.submit(request_id.get)  # queued behind the first
        finally:
            request_id.reset(token)
        assert not queued.done()
        release.set()  # the first's worker passes the second on
        assert running.result(TIMEOUT) == "first"
        assert queued.result(TIMEOUT) == "second"


def test_a_rate_limits_queued_callable_runs_in_its_own_submitters_context() -> None:
    with Executors.thread_pool(2).with_rate_limit(1, 0.01) as limited:
        futures = []
        for index in range(3):  # the later ones wait for their turn
            token = request_id.set(f"req-{index}")
            try:
                futures.append(limited.submit(request_id.get))
            finally:
                request_id.reset(token)
        assert [f.result(TIMEOUT) for f in futures] == ["req-0", "req-1", "req-2"]


# -- the spans ------------------------------------------------------------------------


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans the library makes during the test, through a provider of the test's
    own: the global provider of OpenTelemetry can be set once per process only."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _tracing.use_tracer_provider(provider)
    try:
        yield exporter
    finally:
        _tracing.use_tracer_provider(None)
        provider.shutdown()


def parent_of(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.span_id)


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def test_a_retried_call_makes_a_call_span_with_one_span_per_attempt(
    spans: InMemorySpanExporter,
) -> None:
    test_tracer = spans_tracer()
    attempts = []

    def flaky() -> str:
        with test_tracer.start_as_current_span("work"):
            attempts.append(1)
            if len(attempts) < 3:
                raise ConnectionError("try again")
            return "done"

    policy = ExceptionRetryPolicy(max_attempts=3, sleep=0.0)
    with Executors.thread_pool(2, name="svc").with_retry(policy) as executor:
        with test_tracer.start_as_current_span("request"):
            future = executor.submit(flaky)
        assert future.result(TIMEOUT) == "done"
    [request] = named(spans, "request")
    [call] = named(spans, _tracing.CALL)
    assert parent_of(call) == span_id(request)
    assert call.attributes is not None
    assert call.attributes[_tracing.EXECUTOR] == "svc"
    assert call.attributes[_tracing.KIND] == "retry"
    assert str(call.attributes[_tracing.FUNCTION]).endswith("flaky")
    attempt_spans = sorted(
        named(spans, _tracing.ATTEMPT),
        key=lambda s: str((s.attributes or {})[_tracing.ATTEMPT_NUMBER]),
    )
    assert [(s.attributes or {})[_tracing.ATTEMPT_NUMBER] for s in attempt_spans] == [
        1,
        2,
        3,
    ]
    assert all(parent_of(s) == span_id(call) for s in attempt_spans)
    # The delay that followed each failed attempt; none after the last.
    assert [(s.attributes or {}).get(_tracing.DELAY) for s in attempt_spans] == [
        0.0,
        0.0,
        None,
    ]
    assert [s.status.status_code for s in attempt_spans] == [
        StatusCode.ERROR,
        StatusCode.ERROR,
        StatusCode.UNSET,
    ]
    # The callable's own spans are children of its attempt's.
    works = named(spans, "work")
    assert sorted(parent_of(w) or 0 for w in works) == sorted(
        span_id(s) for s in attempt_spans
    )
    assert call.status.status_code == StatusCode.UNSET
    assert call.end_time is not None


def test_a_call_span_ends_with_the_futures_outcome(
    spans: InMemorySpanExporter,
) -> None:
    def fail() -> None:
        raise ValueError("bad")

    with Executors.thread_pool(1) as pool, pytest.raises(ValueError, match="bad"):
        pool.submit(fail).result(TIMEOUT)
    [call] = named(spans, _tracing.CALL)
    assert call.status.status_code == StatusCode.ERROR
    assert [event.name for event in call.events] == ["exception"]
    assert call.attributes is not None
    assert call.attributes[_tracing.KIND] == "threadpool"


def spans_tracer() -> trace.Tracer:
    tracer = _tracing.tracer()
    assert tracer is not None
    return tracer


def test_a_poll_executor_makes_task_spans_and_poll_spans(
    spans: InMemorySpanExporter,
) -> None:
    calls: list[int] = []

    def poll(descriptors: list[PollDescriptor[str]]) -> float | None:
        calls.append(len(descriptors))
        if len(calls) == 1:
            raise ConnectionError("the service is down")
        for descriptor in descriptors:
            descriptor.yield_result(descriptor.result.upper())
        return None

    retry_poll = ExceptionRetryPolicy(max_attempts=2, sleep=0.0)
    executor = Executors.sync().with_poll(
        poll, default_interval=0.01, poll_retry_policy=retry_poll, name="jobs"
    )
    with executor:
        with spans_tracer().start_as_current_span("request"):
            futures = [executor.submit(str, name) for name in ("a", "b")]
        assert [f.result(TIMEOUT) for f in futures] == ["A", "B"]
    [request] = named(spans, "request")
    tasks = named(spans, _tracing.TASK)
    assert len(tasks) == 2
    assert all(parent_of(t) == span_id(request) for t in tasks)
    assert not named(spans, _tracing.CALL)  # a task span is the poll's call span
    # This executor's (a poll thread of an earlier test may end a span late).
    polls = [
        p
        for p in named(spans, _tracing.POLL)
        if (p.attributes or {}).get(_tracing.EXECUTOR) == "jobs"
    ]
    # One span per call (the futures may enter polling together or one by one).
    assert [(p.attributes or {})[_tracing.BATCH_SIZE] for p in polls] == calls
    outcomes = [(p.attributes or {})[_tracing.OUTCOME] for p in polls]
    assert outcomes == ["error"] + ["ok"] * (len(calls) - 1)
    assert polls[0].status.status_code == StatusCode.ERROR
    assert all(p.parent is None for p in polls)  # batched: no one submitter's span


def test_a_poll_executor_inside_a_retry_makes_a_task_span_per_attempt(
    spans: InMemorySpanExporter,
) -> None:
    def poll(descriptors: list[PollDescriptor[int]]) -> None:
        for descriptor in descriptors:
            if descriptor.result < 1:
                descriptor.yield_exception(ConnectionError("lost"))
            else:
                descriptor.yield_result(descriptor.result)

    tries = iter(range(2))
    policy = ExceptionRetryPolicy(max_attempts=2, sleep=0.0)
    chain = Executors.thread_pool(1).with_poll(poll).with_retry(policy)
    with chain:
        assert chain.submit(lambda: next(tries)).result(TIMEOUT) == 1
    attempts = named(spans, _tracing.ATTEMPT)
    tasks = named(spans, _tracing.TASK)
    assert sorted(parent_of(t) or 0 for t in tasks) == sorted(
        span_id(a) for a in attempts
    )
    assert len(tasks) == 2


def test_a_span_processor_that_raises_does_not_stop_a_future(
    spans: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    class Raising(SimpleSpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            if span.name == _tracing.ATTEMPT:
                raise RuntimeError("sampler down")

        def on_end(self, span: ReadableSpan) -> None:
            raise RuntimeError("exporter down")

    provider = TracerProvider()
    provider.add_span_processor(Raising(InMemorySpanExporter()))
    _tracing.use_tracer_provider(provider)
    with Executors.thread_pool(1).with_retry() as executor:
        assert executor.submit(len, "ab").result(TIMEOUT) == 2
    messages = [r.getMessage() for r in caplog.records]
    assert "starting a span fluent_executors.attempt failed; going on without it" in (
        messages
    )
    assert "ending a span failed" in messages


def test_no_span_without_a_tracer_provider() -> None:
    assert _tracing.tracer() is None  # no global provider in the test process
    with Executors.thread_pool(1).with_retry() as executor:
        future = executor.submit(len, "abc")
        assert future.result(TIMEOUT) == 3


CHAIN = (
    "import sys; from fluent_executors import Executors; "
    "chain = Executors.thread_pool(2).with_map(str).with_retry().with_timeout(5)"
    "\nwith chain: assert chain.submit(len, 'abc').result(10) == '3'\n"
)


def test_a_chain_imports_no_opentelemetry_without_a_provider() -> None:
    code = CHAIN + "print(sorted(m for m in sys.modules if 'opentelemetry' in m))"
    # Without metrics, nothing of OpenTelemetry at all.
    assert run_python(code, FLUENT_EXECUTORS_METRICS="0") == "[]"
    # With them, its metrics API, but not its tracing.
    code = CHAIN + "print('opentelemetry.trace' in sys.modules)"
    assert run_python(code, FLUENT_EXECUTORS_METRICS="otel") == "False"


def test_spans_go_to_the_global_tracer_provider_once_it_is_set() -> None:
    code = (
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import "
        "InMemorySpanExporter\n"
        + CHAIN  # before the provider is set: no span
        + "exporter = InMemorySpanExporter()\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
        "trace.set_tracer_provider(provider)\n"
        "with Executors.thread_pool(1) as pool:\n"
        "    with trace.get_tracer('app').start_as_current_span('request'):\n"
        "        future = pool.submit(len, 'ab')\n"
        "    assert future.result(10) == 2\n"
        "provider.force_flush()\n"
        "print(sorted(s.name for s in exporter.get_finished_spans()))"
    )
    assert run_python(code) == "['fluent_executors.call', 'request']"
