"""The metric exporters: a Prometheus collector and OpenTelemetry instruments, both
reading the tallies of :mod:`_fluent_executors.metrics` when they collect.

Imported by ``metrics`` when the first executor is created (or ``BACKENDS`` is
read), never at ``import fluent_executors``; only then are ``prometheus_client`` and
``opentelemetry`` imported, if installed and wanted (``FLUENT_EXECUTORS_METRICS``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING

from .logging import ContainedLogger
from .metrics import (
    ENV_VAR,
    FAMILIES,
    FUTURE_DURATION,
    HISTOGRAMS,
    POLL_DURATION,
    DurationRecorder,
    Family,
    Histogram,
    HistogramFamily,
    Store,
    Tally,
    reported,
)

if TYPE_CHECKING:
    from opentelemetry import metrics as otel_metrics
    from prometheus_client.metrics_core import Metric

logger = ContainedLogger(logging.getLogger("fluent_executors._metrics"))

_OFF = {"0", "false", "off", "no"}
_ALL = {"", "1", "true", "on", "yes"}
_ALIASES = {"prometheus": "prometheus", "otel": "otel", "opentelemetry": "otel"}


# -- Prometheus -----------------------------------------------------------------------


class _PrometheusCollector:
    """A custom collector of ``prometheus_client``: reads every tally at each
    scrape."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def describe(self) -> list[Metric]:
        """The metric families, without samples (for the registry's checks)."""
        return list(self._families([]))

    def collect(self) -> Iterator[Metric]:
        """The metric families, with a sample for each kind and name."""
        return self._families(self._store.tallies())

    def _families(self, tallies: Sequence[Tally]) -> Iterator[Metric]:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        labels = ["type", "executor"]  # as in more-executors
        snapshots = []
        for tally in tallies:
            with tally.lock:
                values = [family.read(tally) for family in FAMILIES]
                histograms = [family.read(tally).copy() for family in HISTOGRAMS]
            snapshots.append((tally, values, histograms))
        for index, family in enumerate(FAMILIES):
            kind = CounterMetricFamily if family.counter else GaugeMetricFamily
            metric = kind(family.prometheus, family.description, labels=labels)
            for tally, values, _ in snapshots:
                if reported(family, tally, values[index]):
                    metric.add_metric([tally.kind, tally.name], float(values[index]))
            yield metric
        for index, histogram_family in enumerate(HISTOGRAMS):
            histogram_metric = HistogramMetricFamily(
                histogram_family.prometheus, histogram_family.description, labels=labels
            )
            for tally, _, histograms in snapshots:
                histogram = histograms[index]
                if reported(histogram_family, tally, sum(histogram.counts)):
                    histogram_metric.add_metric(
                        [tally.kind, tally.name],
                        _cumulative_buckets(histogram),
                        histogram.total,
                    )
            yield histogram_metric


def _cumulative_buckets(histogram: Histogram) -> list[tuple[str, float]]:
    """The ``(le, count)`` pairs of a Prometheus histogram, ``+Inf`` last."""
    buckets = []
    count = 0
    for bound, in_bucket in zip(histogram.bounds, histogram.counts, strict=False):
        count += in_bucket
        buckets.append((repr(bound), float(count)))  # as prometheus_client spells it
    buckets.append(("+Inf", float(count + histogram.counts[-1])))
    return buckets


def _start_prometheus(store: Store) -> None:
    """Register the collector in the default registry.

    Raises:
        ValueError: a metric of the same name is registered already.
    """
    from prometheus_client import REGISTRY

    REGISTRY.register(_PrometheusCollector(store))


# -- OpenTelemetry --------------------------------------------------------------------


def _library_version() -> str:
    # Not fluent_executors.__version__: this module is imported while the package's
    # __init__ still runs, before that is defined.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fluent-executors")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return ""


class OpenTelemetry:
    """The instruments of the meter ``fluent_executors``: observable ones reading
    the tallies, and the two duration histograms.

    A synchronous instrument of the OpenTelemetry SDK costs microseconds per call;
    observable ones cost nothing until the SDK collects.
    """

    def __init__(self, store: Store) -> None:
        from opentelemetry import metrics

        self._store = store
        meter = metrics.get_meter("fluent_executors", _library_version())
        for family in FAMILIES:
            create = (
                meter.create_observable_counter
                if family.counter
                else meter.create_observable_up_down_counter
            )
            create(
                family.otel, [self._observer(family)], family.unit, family.description
            )
        self._future_duration = _histogram(meter, FUTURE_DURATION)
        self._poll_duration = _histogram(meter, POLL_DURATION)

    def _observer(
        self, family: Family
    ) -> Callable[[otel_metrics.CallbackOptions], list[otel_metrics.Observation]]:
        from opentelemetry.metrics import Observation

        def observe(
            options: otel_metrics.CallbackOptions,
        ) -> list[otel_metrics.Observation]:
            observations = []
            for tally in self._store.tallies():
                with tally.lock:
                    value = family.read(tally)
                if reported(family, tally, value):
                    observations.append(Observation(value, tally.attributes))
            return observations

        return observe

    def recorders(self, tally: Tally) -> tuple[DurationRecorder, DurationRecorder]:
        """Record a future's and a poll's duration with ``tally``'s attributes."""
        return (
            partial(self._future_duration.record, attributes=tally.attributes),
            partial(self._poll_duration.record, attributes=tally.attributes),
        )


def _histogram(
    meter: otel_metrics.Meter, family: HistogramFamily
) -> otel_metrics.Histogram:
    try:
        return meter.create_histogram(
            family.otel,
            "s",
            family.description,
            explicit_bucket_boundaries_advisory=family.bounds,
        )
    except TypeError:  # opentelemetry-api before 1.30 takes no advice
        return meter.create_histogram(family.otel, "s", family.description)


# -- the choice, once -----------------------------------------------------------------


def _wanted(setting: str) -> set[str]:
    """The backends that ``FLUENT_EXECUTORS_METRICS`` asks for."""
    setting = setting.strip().lower()
    if setting in _OFF:
        return set()
    if setting in _ALL:
        return {"prometheus", "otel"}
    wanted = set()
    for part in setting.split(","):
        part = part.strip()
        if part in _ALIASES:
            wanted.add(_ALIASES[part])
        elif part:
            logger.warning(
                "%s=%r: unknown backend %r ignored; expected 0, 1, or a "
                "comma-separated list of prometheus and otel",
                ENV_VAR,
                setting,
                part,
            )
    return wanted


def start(setting: str, store: Store) -> tuple[tuple[str, ...], OpenTelemetry | None]:
    """Import and start the backends that are wanted and installed; return their
    names and the OpenTelemetry one, if started."""
    wanted = _wanted(setting)
    started: list[str] = []
    otel = None
    if "prometheus" in wanted:
        try:
            import prometheus_client  # noqa: F401
        except ImportError:
            pass
        else:
            try:
                _start_prometheus(store)
            except ValueError:  # registered already: imported twice?
                logger.warning(
                    "the Prometheus metrics of fluent_executors are registered "
                    "already; not recording into Prometheus",
                    exc_info=True,
                )
            else:
                started.append("prometheus")
    if "otel" in wanted:
        try:
            import opentelemetry.metrics  # noqa: F401
        except ImportError:
            pass
        else:
            otel = OpenTelemetry(store)
            started.append("otel")
    return tuple(started), otel
