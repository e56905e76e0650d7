"""Metrics of the executors, read by Prometheus and OpenTelemetry if installed.

The backends are chosen once, when the first executor is created (the exporters
live in :mod:`_fluent_executors.exporters`, imported then):

- ``prometheus``, if ``prometheus_client`` can be imported (the ``prometheus`` extra):
  a collector is registered in its default registry, ``prometheus_client.REGISTRY``;
- ``otel``, if ``opentelemetry.metrics`` can be imported (the ``otel`` extra): the
  instruments come from ``metrics.get_meter("fluent_executors", version)``, so they
  record into whatever meter provider the application sets, before or after that,
  and into the API's no-op one until then;
- none at all if neither can be imported, or if the environment variable
  ``FLUENT_EXECUTORS_METRICS`` is ``0`` (``false``, ``off``, ``no``). It may also
  name the backends to use: ``prometheus``, ``otel`` or ``prometheus,otel``.

Every executor keeps its own counts, always (``counts.Counts``, read by its
``stats()``); the metrics are fed by the same events, through the same calls. Without
a backend, :func:`for_executor` returns ``None``, kept as ``Counts.metrics``: the
per-future paths test that attribute and call nothing else, so that disabled metrics
cost one ``is not None`` per hook.

With one, each executor asks :func:`for_executor` once, at the end of its
construction, for an :class:`ExecutorMetrics`, through which its counts record into
the :class:`Tally` of its kind and name: plain integers (and the bucket counts of two
histograms) under one lock, one short critical section per event. The backends read
the tallies when they collect: Prometheus through a custom collector, OpenTelemetry
through observable instruments. Only the durations are also recorded into
OpenTelemetry as they happen, since it has no observable histogram. So an event costs
the same whichever backends are on, and both report the same numbers.

Each executor tracks the futures that its ``submit`` returns, and only those: each
layer of a chain counts its own futures, under its own kind.
"""

from __future__ import annotations

import bisect
import logging
import os
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from .logging import ContainedLogger

if TYPE_CHECKING:
    from .exporters import OpenTelemetry

__all__ = ["ENV_VAR", "ExecutorMetrics", "for_executor"]  # and BACKENDS, ENABLED

logger = ContainedLogger(logging.getLogger("fluent_executors._metrics"))

ENV_VAR = "FLUENT_EXECUTORS_METRICS"
"""The environment variable that turns metrics off (``0``) or picks the backends."""

# Upper bounds of the histogram buckets, in seconds. Futures range from a queued
# no-op to a remote task of an hour; a poll is typically one request to a service.
FUTURE_BUCKETS = (
    *(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5),
    *(1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0),
)
POLL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


# The kinds of executor that use each family of their own: their series exist (at
# zero) from the executor's creation on, so that rate() and alerts see them at once.
# Other kinds report such a family only if it is not zero.
_POLL_KINDS = frozenset({"poll"})
_RETRY_KINDS = frozenset({"retry"})
_QUEUE_KINDS = frozenset({"throttle", "rate_limit"})
_TIMEOUT_KINDS = frozenset({"timeout"})


# -- the tallies: what the executors record into ----------------------------------


class Histogram:
    """Bucket counts and a sum of seconds; guarded by its tally's lock."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one: above every bound
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        # A bucket holds the values <= its bound, as Prometheus's "le" says.
        self.counts[bisect.bisect_left(self.bounds, seconds)] += 1
        self.total += seconds

    def copy(self) -> Histogram:
        copy = Histogram(self.bounds)
        copy.counts = list(self.counts)
        copy.total = self.total
        return copy


class Tally:
    """The counts of the executors of one kind and name. Every field is read and
    written under ``lock``."""

    __slots__ = (
        "attributes",
        "executors_closed",
        "executors_created",
        "future_seconds",
        "futures_cancelled",
        "futures_created",
        "futures_done",
        "futures_failed",
        "kind",
        "lock",
        "name",
        "poll_calls",
        "poll_errors",
        "poll_seconds",
        "poll_timeouts",
        "queue_length",
        "retry_attempts",
        "timeouts",
    )

    def __init__(self, kind: str, name: str) -> None:
        self.kind = kind
        self.name = name
        self.attributes = {"type": kind, "executor": name}
        # Re-entrant: the finalizer of a collected executor (_count_closed) runs
        # wherever the garbage collector happens to run, in a thread that may hold
        # this lock already (inside observe(), say): a plain Lock deadlocked there.
        self.lock = threading.RLock()
        self.executors_created = 0
        self.executors_closed = 0
        self.futures_created = 0
        self.futures_done = 0
        self.futures_cancelled = 0
        self.futures_failed = 0
        self.future_seconds = Histogram(FUTURE_BUCKETS)
        self.poll_calls = 0
        self.poll_errors = 0
        self.poll_seconds = Histogram(POLL_BUCKETS)
        self.poll_timeouts = 0
        self.retry_attempts = 0
        self.queue_length = 0
        self.timeouts = 0


class Store:
    """Every tally, by kind and name; tallies are never removed (like the label
    children of a Prometheus metric)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tallies: dict[tuple[str, str], Tally] = {}

    def tally(self, kind: str, name: str) -> Tally:
        with self._lock:
            tally = self._tallies.get((kind, name))
            if tally is None:
                tally = self._tallies[kind, name] = Tally(kind, name)
            return tally

    def tallies(self) -> list[Tally]:
        with self._lock:
            return list(self._tallies.values())


class Family(NamedTuple):
    """One metric that a tally holds as a number."""

    prometheus: str  # without the _total of counters, which prometheus_client adds
    otel: str
    counter: bool  # else a gauge (an up-down counter in OpenTelemetry)
    unit: str  # of OpenTelemetry
    description: str
    read: Callable[[Tally], int]
    kinds: frozenset[str] | None  # those that report it at zero; None: every kind


FAMILIES = (
    Family(
        "fluent_executors_executors_created",
        "fluent_executors.executors.created",
        True,
        "{executor}",
        "Executors created.",
        lambda t: t.executors_created,
        None,
    ),
    Family(
        "fluent_executors_executors_in_use",
        "fluent_executors.executors.in_use",
        False,
        "{executor}",
        "Executors created and neither shut down nor garbage-collected.",
        lambda t: t.executors_created - t.executors_closed,
        None,
    ),
    Family(
        "fluent_executors_futures_created",
        "fluent_executors.futures.created",
        True,
        "{future}",
        "Futures returned by submit.",
        lambda t: t.futures_created,
        None,
    ),
    Family(
        "fluent_executors_futures_in_progress",
        "fluent_executors.futures.in_progress",
        False,
        "{future}",
        "Futures returned by submit and not yet done.",
        lambda t: t.futures_created - t.futures_done,
        None,
    ),
    Family(
        "fluent_executors_futures_cancelled",
        "fluent_executors.futures.cancelled",
        True,
        "{future}",
        "Futures that ended cancelled.",
        lambda t: t.futures_cancelled,
        None,
    ),
    Family(
        "fluent_executors_futures_failed",
        "fluent_executors.futures.failed",
        True,
        "{future}",
        "Futures that ended with an exception.",
        lambda t: t.futures_failed,
        None,
    ),
    Family(
        "fluent_executors_poll_calls",
        "fluent_executors.poll.calls",
        True,
        "{call}",
        "Calls of the poll function.",
        lambda t: t.poll_calls,
        _POLL_KINDS,
    ),
    Family(
        "fluent_executors_poll_errors",
        "fluent_executors.poll.errors",
        True,
        "{call}",
        "Calls of the poll function that raised.",
        lambda t: t.poll_errors,
        _POLL_KINDS,
    ),
    Family(
        "fluent_executors_poll_timeouts",
        "fluent_executors.poll.timeouts",
        True,
        "{call}",
        "Calls of the poll function that ran longer than the poll timeout.",
        lambda t: t.poll_timeouts,
        _POLL_KINDS,
    ),
    Family(
        "fluent_executors_retry_attempts",
        "fluent_executors.retry.attempts",
        True,
        "{attempt}",
        "Attempts after the first: callables submitted again by a retry.",
        lambda t: t.retry_attempts,
        _RETRY_KINDS,
    ),
    Family(
        "fluent_executors_throttle_queue_length",
        "fluent_executors.throttle.queue_length",
        False,
        "{call}",
        "Callables waiting in the queue of a throttle or rate limit.",
        lambda t: t.queue_length,
        _QUEUE_KINDS,
    ),
    Family(
        "fluent_executors_timeouts",
        "fluent_executors.timeouts",
        True,
        "{timeout}",
        "Timeouts that expired before their future was done.",
        lambda t: t.timeouts,
        _TIMEOUT_KINDS,
    ),
)


class HistogramFamily(NamedTuple):
    """One metric that a tally holds as a histogram of seconds."""

    prometheus: str
    otel: str
    description: str
    read: Callable[[Tally], Histogram]
    kinds: frozenset[str] | None
    bounds: tuple[float, ...]


FUTURE_DURATION = HistogramFamily(
    "fluent_executors_future_duration_seconds",
    "fluent_executors.future.duration",
    "Seconds from submit to the end of a future, whatever its outcome.",
    lambda t: t.future_seconds,
    None,
    FUTURE_BUCKETS,
)
POLL_DURATION = HistogramFamily(
    "fluent_executors_poll_duration_seconds",
    "fluent_executors.poll.duration",
    "Seconds spent in each call of the poll function.",
    lambda t: t.poll_seconds,
    _POLL_KINDS,
    POLL_BUCKETS,
)
HISTOGRAMS = (FUTURE_DURATION, POLL_DURATION)


def reported(family: Family | HistogramFamily, tally: Tally, value: float) -> bool:
    """Whether a reader reports ``value`` of ``family`` for ``tally``."""
    return value != 0 or family.kinds is None or tally.kind in family.kinds


# -- what the executors call ------------------------------------------------------

DurationRecorder = Callable[[float], object]
"""Records one duration in seconds into OpenTelemetry, with an executor's
attributes."""


class ExecutorMetrics:
    """What an executor records through; one per executor, made by
    :func:`for_executor`.

    Creating it counts the executor as created and in use; :meth:`close` (at its
    first shutdown) or its collection counts it out of use, once. Every method is
    thread-safe, quick, and never raises.
    """

    __slots__ = ("_finalizer", "_record_future", "_record_poll", "_tally")

    def __init__(
        self,
        executor: object,
        tally: Tally,
        record_future: DurationRecorder | None,
        record_poll: DurationRecorder | None,
    ) -> None:
        self._tally = tally
        self._record_future = record_future
        self._record_poll = record_poll
        with tally.lock:
            tally.executors_created += 1
        # Called at most once: by close(), or when the executor is collected.
        self._finalizer = weakref.finalize(executor, _count_closed, tally)
        self._finalizer.atexit = False

    def close(self) -> None:
        """Count the executor out of use; later calls do nothing."""
        self._finalizer()

    def submitted(self, delta: int = 1) -> None:
        """A future was returned by ``submit`` (``delta`` -1: one counted by mistake
        was not, after all)."""
        tally = self._tally
        with tally.lock:
            tally.futures_created += delta

    def ended(self, seconds: float, failed: bool, cancelled: bool) -> None:
        """A future submitted ``seconds`` ago is done: ``failed`` with an exception,
        or ``cancelled``, or neither."""
        tally = self._tally
        with tally.lock:
            tally.futures_done += 1
            tally.futures_cancelled += cancelled
            tally.futures_failed += failed
            tally.future_seconds.observe(seconds)
        if self._record_future is not None:
            self._record_future(seconds)

    def poll(self, seconds: float, error: bool) -> None:
        """The poll function was called once, for ``seconds``, and raised if
        ``error``."""
        tally = self._tally
        with tally.lock:
            tally.poll_calls += 1
            tally.poll_errors += error
            tally.poll_seconds.observe(seconds)
        if self._record_poll is not None:
            self._record_poll(seconds)

    def poll_timeout(self) -> None:
        """A call of the poll function has run longer than its ``poll_timeout``."""
        tally = self._tally
        with tally.lock:
            tally.poll_timeouts += 1

    def retry_attempt(self) -> None:
        """A callable is submitted again, after its first attempt."""
        tally = self._tally
        with tally.lock:
            tally.retry_attempts += 1

    def queue_changed(self, delta: int) -> None:
        """The queue of a throttle or rate limit grew by ``delta`` (or shrank)."""
        tally = self._tally
        with tally.lock:
            tally.queue_length += delta

    def timeout_fired(self) -> None:
        """A timeout expired; its future is about to be cancelled."""
        tally = self._tally
        with tally.lock:
            tally.timeouts += 1


def _count_closed(tally: Tally) -> None:
    # A weakref finalizer: it may run in the middle of any of this module's locked
    # sections of this thread (the garbage collector runs at any allocation).
    with tally.lock:
        tally.executors_closed += 1


_STORE = Store()
_OTEL: OpenTelemetry | None = None
_BACKENDS: tuple[str, ...] = ()
_started = False
_start_lock = threading.Lock()


def _ensure_started() -> tuple[str, ...]:
    """Read ``FLUENT_EXECUTORS_METRICS`` and start the backends, once: when the
    first executor is created (or ``BACKENDS`` is read), not at import, so that
    importing the library imports no metric package."""
    global _BACKENDS, _OTEL, _started
    if not _started:
        with _start_lock:
            if not _started:
                from .exporters import start  # the one way up: on first use

                _BACKENDS, _OTEL = start(os.environ.get(ENV_VAR, ""), _STORE)
                _started = True
    return _BACKENDS


if TYPE_CHECKING:  # at run time, __getattr__ below
    BACKENDS: tuple[str, ...]
    ENABLED: bool


def __getattr__(name: str) -> object:
    """``BACKENDS``: the names of the backends in use, among ``prometheus`` and
    ``otel``; ``ENABLED``: whether any metric is recorded. Reading either starts
    the backends if no executor has yet (PEP 562)."""
    if name == "BACKENDS":
        return _ensure_started()
    if name == "ENABLED":
        return bool(_ensure_started())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def for_executor(executor: object, kind: str, name: str) -> ExecutorMetrics | None:
    """Count ``executor`` as created and in use; return what it records through.

    Call it once, at the end of the executor's construction (a construction that
    raises is not counted).

    Args:
        executor: the executor; it is counted out of use when collected, unless
            :meth:`ExecutorMetrics.close` is called first.
        kind: its kind, the ``type`` label: ``poll``, ``threadpool``, ...
        name: its name, the ``executor`` label.

    Returns:
        ``None`` when metrics are disabled.
    """
    if not (_BACKENDS if _started else _ensure_started()):
        return None
    tally = _STORE.tally(kind, name)
    record_future, record_poll = (
        (None, None) if _OTEL is None else _OTEL.recorders(tally)
    )
    return ExecutorMetrics(executor, tally, record_future, record_poll)
