"""The submitter's context, carried into the work, and the spans of OpenTelemetry.

Context: the first executor of the library that a callable is submitted to (the
outermost layer of a chain, or the library's thread pool) captures a copy of the
submitter's ``contextvars`` context, once, in an :class:`InContext` that runs the
callable in it. The inner layers see an ``InContext`` and pass it on as it is, so a
chain costs one ``copy_context()`` per submit, not one per layer; whatever thread
calls it later (a pool's worker, the scheduler's worker that submits a retry, the
thread that passes on a throttle's queued callable) runs it in that context.
Pickled (for a process pool, Dask, Ray), an ``InContext`` is its bare callable: a
context does not cross processes.

Tracing: spans are made only with OpenTelemetry's API imported by the application
(``opentelemetry.trace`` in :data:`sys.modules`: this module never imports it
first) and a tracer provider set there (``set_tracer_provider``, or the
``OTEL_PYTHON_TRACER_PROVIDER`` variable that the API reads). Until then
:func:`tracer` returns ``None``, at the cost of a dictionary look-up, and the
executors make no span. Once a provider is set it stays (the API sets it once per
process), and so does the library's tracer, ``fluent_executors``.

The spans:

- ``fluent_executors.call``: one per callable submitted to the outermost layer,
  from ``submit`` to the resolution of its future, a child of the submitter's
  current span; the current span while the callable runs (unless a retry's attempt
  span is).
- ``fluent_executors.attempt``: one per attempt of a retry executor, from the
  attempt's submit to the policy's decision, with the attempt's number and the
  delay before the next attempt, if any.
- ``fluent_executors.task``: one per future of a poll executor, from its submit to
  its resolution: the remote task.
- ``fluent_executors.poll``: one per call of a poll function, in the poll thread,
  with the number of futures it was given and its outcome.
"""

from __future__ import annotations

import contextvars
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ["InContext", "capture", "tracer"]

F = TypeVar("F")

logger = logging.getLogger("fluent_executors._tracing")

CALL, ATTEMPT, TASK, POLL = (
    "fluent_executors.call",
    "fluent_executors.attempt",
    "fluent_executors.task",
    "fluent_executors.poll",
)
"""The names of the spans."""

# The attributes of the spans.
EXECUTOR = "fluent_executors.executor.name"
KIND = "fluent_executors.executor.type"
FUNCTION = "code.function"
ATTEMPT_NUMBER = "fluent_executors.retry.attempt"
DELAY = "fluent_executors.retry.delay"
BATCH_SIZE = "fluent_executors.poll.batch_size"
OUTCOME = "fluent_executors.poll.outcome"
CANCELLED = "fluent_executors.cancelled"

# The library's tracer, once a provider is set (or one is given for tests).
_tracer: Tracer | None = None
_lock = threading.Lock()
# Whether the API may load a provider from the environment on its own.
_PROVIDER_VARIABLE = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
_UNKNOWN = object()
_modules = sys.modules


def tracer() -> Tracer | None:
    """The library's tracer if a tracer provider is set, else ``None``; quick."""
    if _tracer is not None:
        return _tracer
    if "opentelemetry.trace" not in _modules:  # nobody imported the API: nobody
        return None  # set a provider
    trace = _modules["opentelemetry.trace"]
    # The API's global, read without a call while unset (the common case); its
    # get_tracer_provider() reads the environment on each call.
    if getattr(trace, "_TRACER_PROVIDER", _UNKNOWN) is None and not _PROVIDER_VARIABLE:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    return _use(provider)


def _use(provider: TracerProvider) -> Tracer:
    global _tracer
    from .exporters import _library_version  # once

    made = provider.get_tracer("fluent_executors", _library_version())
    with _lock:
        if _tracer is None:
            _tracer = made
        return _tracer


def use_tracer_provider(provider: TracerProvider | None) -> None:
    """Make spans with ``provider``'s tracer rather than the global provider's, or
    (``None``) go back to the global one: for tests, which cannot set the global
    provider more than once per process."""
    global _tracer
    with _lock:
        _tracer = None
    if provider is not None:
        _use(provider)


class InContext:
    """A callable, run in a context: the copy of its submitter's (``context``),
    with ``span`` (if not ``None``: tracing is on) as the current span.

    Calling it runs the callable; pickling it gives the bare callable.
    """

    __slots__ = ("context", "fn", "span")

    def __init__(
        self, fn: Callable[..., Any], context: contextvars.Context, span: Span | None
    ) -> None:
        self.fn = fn
        self.context = context
        self.span = span

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.span is None:
            return self.context.run(self.fn, *args, **kwargs)
        return self.context.run(_run_in_span, self.span, self.fn, args, kwargs)

    # What a delegate sees stands for the callable: it pickles as it, equals it
    # (a MagicMock's assert_called_with(fn, ...)) and has its names (for a
    # delegate that logs them). (Not a __getattr__ for all its attributes: a class
    # with one reads its own slots several times slower.)

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return (_bare, (self.fn,))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, InContext):
            other = other.fn
        return bool(self.fn == other)

    def __hash__(self) -> int:
        return hash(self.fn)

    @property
    def __name__(self) -> str:
        return str(getattr(self.fn, "__name__", type(self.fn).__name__))

    @property
    def __wrapped__(self) -> Callable[..., Any]:
        return self.fn

    def __repr__(self) -> str:
        return f"InContext({self.fn!r})"

    def again(self, attempt: int) -> InContext:
        """This callable, for attempt number ``attempt`` (1 for the first) of a
        retry: the first runs in this context, a later one in a copy of it (the
        earlier attempt may still run in it: a timeout gave up on it); with tracing
        on, under a new attempt span (unless it could not be started), ended by
        :func:`end_attempt`."""
        context = self.context if attempt == 1 else self.context.copy()
        span = self.span
        if span is not None:
            span = _start(ATTEMPT, {ATTEMPT_NUMBER: attempt}, self.fn, span)
        return InContext(self.fn, context, span)

    def task(self, name: str, future: Any) -> InContext:
        """This callable, for a poll executor named ``name``: with tracing on,
        under a new task span, ended when ``future`` resolves."""
        if self.span is None:
            return self
        span = _start(TASK, {EXECUTOR: name}, self.fn, self.span)
        if span is None:
            return self
        end_at_resolution(span, future)
        return InContext(self.fn, self.context, span)


def _bare(fn: F) -> F:
    """What an unpickled :class:`InContext` is: its callable."""
    return fn


def _run_in_span(
    span: Span, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    from opentelemetry.trace import use_span

    with use_span(span, record_exception=False, set_status_on_exception=False):
        return fn(*args, **kwargs)


def _function(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__qualname__", None)
    return name if isinstance(name, str) else type(fn).__qualname__


def _start(
    name: str,
    attributes: dict[str, Any],
    fn: Callable[..., Any] | None,
    parent: Span | None = None,
) -> Span | None:
    """A span ``name`` of the library's tracer started now, a child of ``parent``
    (default: of the current span), about ``fn`` if not ``None``; ``None`` if
    tracing is off, or if starting it raised (a span processor's ``on_start``, a
    sampler: logged, and the work goes on without it)."""
    traced = tracer()
    if traced is None:
        return None
    if fn is not None:
        attributes[FUNCTION] = _function(fn)
    try:
        context = None
        if parent is not None:
            from opentelemetry.trace import set_span_in_context

            context = set_span_in_context(parent)
        return traced.start_span(name, context, attributes=attributes)
    except Exception:
        logger.exception("starting a span %s failed; going on without it", name)
        return None


def capture(
    fn: Callable[..., Any], kind: str, name: str, *, call_span: bool = True
) -> InContext:
    """``fn`` in a copy of the current context; with tracing on, with a call span
    (of an executor of ``kind`` named ``name``), started now and ended by
    :func:`end_at_resolution`, or without (``call_span=False``: the executor makes
    a span of its own, under the current one)."""
    context = contextvars.copy_context()
    if tracer() is None:
        return InContext(fn, context, None)
    if not call_span:
        from opentelemetry.trace import get_current_span

        return InContext(fn, context, get_current_span())
    return InContext(fn, context, _start(CALL, {EXECUTOR: name, KIND: kind}, fn))


def submit_captured(
    submit: Callable[..., F],
    fn: Callable[..., Any],
    kind: str,
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *more: Any,
    call_span: bool = True,
) -> F:
    """``submit(call, args, kwargs, *more)``, where ``call`` is ``fn`` captured
    (:func:`capture`); with tracing on, its call span ends when the future that
    ``submit`` returns resolves, or now if ``submit`` raises."""
    call = capture(fn, kind, name, call_span=call_span)
    if call.span is None or not call_span:
        return submit(call, args, kwargs, *more)
    try:
        future = submit(call, args, kwargs, *more)
    except BaseException as error:
        _end(call.span, error, False)
        raise
    end_at_resolution(call.span, future)
    return future


def end_at_resolution(span: Span, future: Any) -> None:
    """End ``span`` when ``future`` (a standard or an asyncio future) resolves,
    with its outcome."""
    future.add_done_callback(lambda done: _end_with(span, done))


def _end_with(span: Span, future: Any) -> None:
    cancelled = future.cancelled()
    _end(span, None if cancelled else future.exception(), cancelled)


def _end(span: Span, error: BaseException | None, cancelled: bool) -> None:
    """End ``span``, failed with ``error`` if not ``None``, or ``cancelled``."""
    try:
        if error is not None:
            _failed(span, error)
        elif cancelled:
            span.set_attribute(CANCELLED, True)
        span.end()
    except Exception:  # a span processor that raises: the future is not stopped
        logger.exception("ending a span failed")


def end_attempt(span: Span | None, attempt: Any, delay: float | None) -> None:
    """End an attempt's span (if tracing: not ``None``) with the outcome of the
    done future ``attempt``, and the ``delay`` before the next attempt if any."""
    if span is None:
        return
    if delay is not None:
        span.set_attribute(DELAY, delay)
    _end_with(span, attempt)


def poll_call(name: str, size: int, poll: Callable[[], F]) -> F:
    """``poll()``, a call of a poll executor's (``name``) poll function on ``size``
    futures, under a poll span if tracing is on; the call marks a failure with
    :func:`poll_failed`."""
    span = _start(POLL, {EXECUTOR: name, BATCH_SIZE: size, OUTCOME: "ok"}, None)
    if span is None:
        return poll()
    try:
        delay: F = _run_in_span(span, poll, (), {})
        return delay
    finally:
        _end(span, None, False)


def poll_failed(error: BaseException) -> None:
    """The poll function raised ``error``: mark the current poll span so, if
    tracing is on."""
    if _tracer is None:
        return
    from opentelemetry.trace import get_current_span

    span = get_current_span()
    span.set_attribute(OUTCOME, "error")
    _failed(span, error)


def _failed(span: Span, error: BaseException) -> None:
    """Record ``error`` on ``span`` and set its status to ``ERROR``."""
    from opentelemetry.trace import Status, StatusCode

    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, type(error).__name__))
