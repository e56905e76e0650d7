"""What the benchmarks of ``bench/`` share: the contenders, the timed run, the rounds,
the report with its targets, and the command-line options.

The scripts import it as ``_harness``: run as ``python bench/chain.py``, a script has
``bench/`` first on ``sys.path``. It is not part of the library and is not installed.

It never imports ``fluent_executors`` when it is imported itself, only when a
function needs it: :func:`measure_without_metrics` must be able to run first, and
``bench/metrics_overhead.py`` blocks or sets up the metric packages in each child
interpreter before the library is imported.

The vocabulary of the scripts that compare contenders (``chain.py`` and
``poll_scale.py``):

contender
    ``"bare"`` (a :class:`concurrent.futures.ThreadPoolExecutor`, the floor),
    ``"ours"`` (fluent-executors) or ``"more"`` (more-executors, if installed).
run
    One contender, given N trivial callables, timed from just before the first
    submit until all N futures are done (:func:`time_tasks`).
round
    Every run of the benchmark once (:func:`measure`). Ratios are taken between two
    runs of the same round, so that noise from other processes hits both alike, and
    the median over the rounds is reported (:func:`paired_ratio`).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import gc
import importlib
import importlib.metadata
import operator
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future
from types import ModuleType
from typing import Literal, NamedTuple, TypeVar

T = TypeVar("T")

WORKERS = 8
"""The worker threads of every pool."""
TIMEOUT = 60.0
"""Seconds: the timeout of the chain, never reached."""
CHAIN = f"thread_pool({WORKERS}).with_map(f).with_retry().with_timeout({TIMEOUT:g})"
"""The chain of :func:`our_chain`, as the reports name it."""

METRICS_ENV_VAR = "FLUENT_EXECUTORS_METRICS"
"""The environment variable that turns the library's metrics off or picks backends."""

Measurements = dict[tuple[str, int], list[float]]
"""Seconds per future of each run, by (contender, N), in the order of the rounds."""

Clock = Callable[[], float]
"""A clock that reads seconds: :func:`time.perf_counter`, :func:`time.process_time`."""


# -- metrics ---------------------------------------------------------------------------


def measure_without_metrics() -> None:
    """Turn the library's metrics off, unless ``FLUENT_EXECUTORS_METRICS`` is set.

    For the benchmarks of the library's own cost: with ``prometheus-client`` or
    ``opentelemetry-api`` installed (as in ``nox -s bench``), the library would
    otherwise record metrics, whose cost ``bench/metrics_overhead.py`` measures.
    Setting the variable (``FLUENT_EXECUTORS_METRICS=1``) measures with them on.
    Call it before ``fluent_executors`` is imported: the backends are chosen then.

    Raises:
        RuntimeError: ``fluent_executors`` is imported already.
    """
    if "fluent_executors" in sys.modules:
        raise RuntimeError(
            "measure_without_metrics() must run before fluent_executors is imported"
        )
    os.environ.setdefault(METRICS_ENV_VAR, "0")


def metrics_state() -> str:
    """Say whether the library records metrics, for a report's first line:
    ``metrics off``, or ``metrics on (FLUENT_EXECUTORS_METRICS=1: prometheus, otel)``
    with the setting and the backends that were started."""
    from fluent_executors import _metrics

    if not _metrics.BACKENDS:  # turned off, or no metric package installed
        return "metrics off"
    setting = os.environ.get(METRICS_ENV_VAR, "")
    return f"metrics on ({METRICS_ENV_VAR}={setting}: {', '.join(_metrics.BACKENDS)})"


# -- contenders ------------------------------------------------------------------------


def task(i: int) -> int:
    """The trivial callable that every run submits: returns its argument."""
    return i


def increment(result: int) -> int:
    """The mapping function of the chains."""
    return result + 1


def bare_pool() -> Executor:
    """The floor: ``concurrent.futures.ThreadPoolExecutor(8)``."""
    return concurrent.futures.ThreadPoolExecutor(WORKERS)


def our_chain(name: str = "default") -> Executor:
    """fluent-executors' chain :data:`CHAIN`: every future passes through a map
    (:func:`increment`), a retry policy that is asked once and does not retry, and a
    timeout that is armed and then dropped. ``name`` is the pool's, as in metrics."""
    from fluent_executors import Executors

    return (
        Executors.thread_pool(WORKERS, name=name)
        .with_map(increment)
        .with_retry()
        .with_timeout(TIMEOUT)
    )


@functools.cache
def more_executors() -> ModuleType | None:
    """The ``more_executors`` module, or ``None`` if it is not installed: the
    comparison with it is optional outside ``nox -s bench``."""
    try:
        return importlib.import_module("more_executors")
    except ImportError:
        return None


# -- runs and rounds -------------------------------------------------------------------


def time_tasks(
    executor: Executor,
    n: int,
    *,
    what: str,
    offset: int = 0,
    clocks: Sequence[Clock] = (time.perf_counter,),
) -> list[float]:
    """Submit ``task(i)`` for each ``i`` below ``n`` to ``executor`` and wait for all.

    ``gc.collect()`` runs first; the executor is shut down after, and the results
    are checked after that. Only the submits and the wait are timed.

    Args:
        executor: a new executor, which this shuts down.
        n: how many callables.
        what: the run, as an error names it (``"ours at N=1,000"``).
        offset: what the executor adds to each result (1 through a map of
            :func:`increment`).
        clocks: what to time with, each read in turn at the start and at the end.

    Returns:
        The seconds from just before the first submit until all are done, by each
        clock, in the order of ``clocks``.

    Raises:
        AssertionError: a future is not done, or its result is not ``i + offset``.
    """
    gc.collect()
    try:
        starts = [clock() for clock in clocks]
        futures: list[Future[int]] = [executor.submit(task, i) for i in range(n)]
        _, not_done = concurrent.futures.wait(futures)
        ends = [clock() for clock in clocks]
    finally:
        executor.shutdown(wait=True)
    if not_done or any(f.result() != i + offset for i, f in enumerate(futures)):
        raise AssertionError(f"{what}: a future is pending or wrong")
    return [end - start for start, end in zip(starts, ends, strict=True)]


def rotated(items: Sequence[T], round_: int) -> list[T]:
    """``items`` in the order of round ``round_``: shifted by one place per round,
    so that each goes first as often as the others."""
    shift = round_ % len(items)
    return [*items[shift:], *items[:shift]]


def measure(
    schedule: Callable[[int], Iterable[tuple[str, int]]],
    run: Callable[[str, int], tuple[float, str]],
    repeat: int,
) -> Measurements:
    """Make ``repeat`` rounds of runs; report each run on stderr as it ends.

    Args:
        schedule: the runs of a round, given its index from 0, as (contender, N).
        run: makes one run; returns its seconds and a note for its report line
            (``""`` for none).
        repeat: how many rounds.

    Returns:
        The seconds per future of every run.
    """
    per_future: Measurements = {}
    for round_ in range(repeat):
        for contender, n in schedule(round_):
            elapsed, note = run(contender, n)
            per_future.setdefault((contender, n), []).append(elapsed / n)
            print(
                f"  round {round_ + 1}/{repeat}  N={n:>7,}  {contender:<4}  "
                f"{elapsed:8.3f} s  {elapsed / n * 1e6:8.2f} us/future{note}",
                file=sys.stderr,
                flush=True,
            )
    return per_future


def paired_ratio(
    per_future: Measurements, top: tuple[str, int], bottom: tuple[str, int]
) -> float | None:
    """Median over rounds of top/bottom measured in the same round; None if absent."""
    if top not in per_future or bottom not in per_future:
        return None
    return statistics.median(
        t / b for t, b in zip(per_future[top], per_future[bottom], strict=True)
    )


# -- the report ------------------------------------------------------------------------


def platform_summary() -> str:
    """``Python 3.12.3 on Linux x86_64, 8 CPUs``: the start of a report."""
    return (
        f"Python {platform.python_version()} on {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} CPUs"
    )


def summary(repeat: int, *details: str) -> str:
    """The first line of a report of contenders: the platform, the versions,
    whether metrics are on, the rounds, then ``details``, separated by ``; ``."""
    try:
        more_version = importlib.metadata.version("more-executors")
    except importlib.metadata.PackageNotFoundError:
        more_version = "absent"
    versions = (
        f"fluent-executors {importlib.metadata.version('fluent-executors')}, "
        f"more-executors {more_version}"
    )
    parts = [platform_summary(), versions, metrics_state()]
    return "; ".join([*parts, f"median of {repeat} rounds", *details])


def format_us(values: list[float] | None) -> str:
    """The median of seconds per future, in microseconds; ``-`` for no runs."""
    return "-" if values is None else f"{statistics.median(values) * 1e6:.2f}"


def format_ratio(ratio: float | None) -> str:
    """``1.23x``; ``-`` for no ratio."""
    return "-" if ratio is None else f"{ratio:.2f}x"


def print_table(per_future: Measurements, sizes: Sequence[int]) -> None:
    """Print, between blank lines, a row per N: the microseconds per future of each
    contender, ours / bare and more / ours."""
    print()
    header = (
        f"{'N':>9}  {'bare us':>9}  {'ours us':>9}  {'more us':>9}  "
        f"{'ours/bare':>9}  {'more/ours':>9}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        print(
            f"{n:>9,}  {format_us(per_future.get(('bare', n))):>9}  "
            f"{format_us(per_future.get(('ours', n))):>9}  "
            f"{format_us(per_future.get(('more', n))):>9}  "
            f"{format_ratio(paired_ratio(per_future, ('ours', n), ('bare', n))):>9}  "
            f"{format_ratio(paired_ratio(per_future, ('more', n), ('ours', n))):>9}"
        )
    print()


_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


class Target(NamedTuple):
    """A target on a ratio: met if ``ratio`` ``comparison`` ``bound``."""

    name: str
    ratio: float | None
    """``None`` if its runs were not made: the target is skipped."""
    comparison: Literal["<", "<=", ">", ">="]
    bound: float


def check_targets(targets: Iterable[Target]) -> bool:
    """Print ``PASS``, ``FAIL`` or ``SKIP`` and the ratio of each target; return
    ``False`` if one failed."""
    all_passed = True
    for target in targets:
        passed = (
            None
            if target.ratio is None
            else _COMPARISONS[target.comparison](target.ratio, target.bound)
        )
        verdict = {None: "SKIP", True: "PASS", False: "FAIL"}[passed]
        print(
            f"{verdict}  {target.name}: {format_ratio(target.ratio)} "
            f"(target {target.comparison} {target.bound:g})"
        )
        all_passed = all_passed and passed is not False
    return all_passed


# -- the options -----------------------------------------------------------------------


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--sizes must be comma-separated integers, got {text!r}"
        ) from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"--sizes must be >= 1, got {text!r}")
    return sorted(set(sizes))


def add_options(parser: argparse.ArgumentParser, default_sizes: Sequence[int]) -> None:
    """Add ``--sizes`` (sorted, without repeats), ``--repeat``,
    ``--skip-more-executors`` and ``--no-check`` to ``parser``."""
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=list(default_sizes),
        help=f"comma-separated N (default: {','.join(map(str, default_sizes))})",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="rounds; the median is kept (default: 3)"
    )
    parser.add_argument(
        "--skip-more-executors",
        action="store_true",
        help="do not run more-executors even if it is installed",
    )
    parser.add_argument(
        "--no-check",
        action="store_true",
        help="exit with status 0 even if a target fails",
    )


def parse_options(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> tuple[argparse.Namespace, bool]:
    """Parse the options of :func:`add_options` and the parser's own; exit with
    status 2 if ``--repeat`` is below 1.

    Returns:
        The options, and whether to run more-executors: unless
        ``--skip-more-executors``, and if it is installed (if not, stderr says so).
    """
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    installed = more_executors() is not None
    if not installed and not args.skip_more_executors:
        print("more-executors is not installed: skipping it", file=sys.stderr)
    return args, installed and not args.skip_more_executors
