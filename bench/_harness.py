"""What the benchmarks of ``bench/`` share: the contenders, the timed run, the rounds,
the report with its tables and targets, and the command-line options.

The scripts import it as ``_harness``: run as ``python bench/layers.py``, a script
has ``bench/`` first on ``sys.path``. It is not part of the library and is not
installed.

It never imports ``fluent_executors`` when it is imported itself, only when a
function needs it: :func:`measure_without_metrics` must be able to run first, and
``bench/metrics_overhead.py`` blocks or sets up the metric packages in each child
interpreter before the library is imported.

The vocabulary of the scripts that compare contenders:

contender
    ``"bare"`` (a :class:`concurrent.futures.ThreadPoolExecutor`, the floor),
    ``"ours"`` (fluent-executors), ``"more"`` (more-executors, if installed), or a
    name of the script's own (``"map"``: the map layer alone on our pool).
run
    One contender, given N trivial callables, timed from just before the first
    submit until all N futures are done (:func:`time_tasks`).
round
    Every run of the benchmark once (:func:`measure`). The contenders of a round
    take turns (the order rotates from round to round), so that noise from other
    processes hits them alike. A figure is the best of the rounds (the least
    disturbed run); a ratio is taken between the best runs of two contenders.

The clock is the CPU time of the whole process, all its threads
(:func:`time.process_time`), unless ``--clock wall``: on a machine shared with
other work it is far less noisy than the wall time, since time spent descheduled
does not count.

Every script prints its tables and targets; given ``--out DIR`` (as ``nox -s
bench`` does, with ``docs/bench``) it also writes each table as ``DIR/<table>.csv``
and its targets as ``DIR/targets-<script>.csv``, which ``bench/report.py`` draws
and the performance page (``docs/performance.rst``) includes.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import functools
import gc
import importlib
import importlib.metadata
import operator
import os
import platform
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future
from pathlib import Path
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
METRIC_PACKAGES = ("prometheus_client", "opentelemetry")
"""What :func:`measure_without_metrics` makes impossible to import."""

Measurements = dict[tuple[str, int], list[float]]
"""Seconds per future of each run, by (contender, N), in the order of the rounds."""

Clock = Callable[[], float]
"""A clock that reads seconds: :func:`time.perf_counter`, :func:`time.process_time`."""

CLOCKS: dict[str, Clock] = {"cpu": time.process_time, "wall": time.perf_counter}
CLOCK_NAMES = {
    "cpu": "CPU time of the process, all threads (time.process_time)",
    "wall": "wall time (time.perf_counter)",
}


# -- metrics ---------------------------------------------------------------------------


def measure_without_metrics() -> None:
    """Measure as a user without a metric package would, unless
    ``FLUENT_EXECUTORS_METRICS`` is set.

    ``prometheus_client`` and ``opentelemetry`` are made impossible to import
    (``None`` in :data:`sys.modules`), as if not installed: with them installed (as
    in ``nox -s bench``) the library would record metrics, whose cost
    ``bench/metrics_overhead.py`` measures. Setting the variable
    (``FLUENT_EXECUTORS_METRICS=1``) measures with them on. Call it before
    ``fluent_executors`` is imported: the backends are chosen then.

    Raises:
        RuntimeError: ``fluent_executors`` is imported already.
    """
    if "fluent_executors" in sys.modules:
        raise RuntimeError(
            "measure_without_metrics() must run before fluent_executors is imported"
        )
    if METRICS_ENV_VAR not in os.environ:
        for name in METRIC_PACKAGES:
            sys.modules[name] = None  # type: ignore[assignment]


def metrics_state() -> str:
    """Say whether the library records metrics, for a report's first line:
    ``metrics off``, or ``metrics on (FLUENT_EXECUTORS_METRICS=1: prometheus, otel)``
    with the setting and the backends that were started."""
    from _fluent_executors import metrics as _metrics

    if not _metrics.BACKENDS:  # turned off, or no metric package importable
        return "no metric package"
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


def version(distribution: str) -> str:
    """The installed version of ``distribution``, or ``absent``."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


# -- runs and rounds -------------------------------------------------------------------


def time_tasks(
    executor: Executor,
    n: int,
    *,
    what: str,
    offset: int = 0,
    clocks: Sequence[Clock] = (time.process_time,),
    collect: bool = True,
) -> list[float]:
    """Submit ``task(i)`` for each ``i`` below ``n`` to ``executor`` and wait for all.

    ``gc.collect()`` runs first, if ``collect``; the executor is shut down after,
    and the results are checked after that. Only the submits and the wait are
    timed.

    Args:
        executor: a new executor, which this shuts down.
        n: how many callables.
        what: the run, as an error names it (``"ours at N=1,000"``).
        offset: what the executor adds to each result (1 through a map of
            :func:`increment`).
        clocks: what to time with, each read in turn at the start and at the end.
        collect: whether to run ``gc.collect()`` first.

    Returns:
        The seconds from just before the first submit until all are done, by each
        clock, in the order of ``clocks``.

    Raises:
        AssertionError: a future is not done, or its result is not ``i + offset``.
    """
    if collect:
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
                f"  round {round_ + 1}/{repeat}  N={n:>9,}  {contender:<12}  "
                f"{elapsed:8.3f} s  {elapsed / n * 1e6:8.2f} us/future{note}",
                file=sys.stderr,
                flush=True,
            )
    return per_future


def best(per_future: Measurements, key: tuple[str, int]) -> float | None:
    """The least seconds per future of ``key``'s runs; ``None`` if it was not run."""
    runs = per_future.get(key)
    return min(runs) if runs else None


def ratio(
    per_future: Measurements, top: tuple[str, int], bottom: tuple[str, int]
) -> float | None:
    """The best run of ``top`` over the best run of ``bottom``; ``None`` if absent."""
    return divide(best(per_future, top), best(per_future, bottom))


def divide(top: float | None, bottom: float | None) -> float | None:
    """``top / bottom``; ``None`` if either is."""
    return None if top is None or bottom is None else top / bottom


class GcMeter:
    """Counts the collections of the oldest generation and the seconds spent in the
    collector while in a ``with`` block (``gc.callbacks``): ``seconds`` by the wall
    clock, ``cpu_seconds`` by the CPU time of the thread that collected
    (``time.thread_time``; a collection runs in one thread)."""

    def __init__(self) -> None:
        self.full = 0
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self._start = self._cpu_start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
            self._cpu_start = time.thread_time()
        else:
            self.seconds += time.perf_counter() - self._start
            self.cpu_seconds += time.thread_time() - self._cpu_start
            self.full += info["generation"] == 2

    def __enter__(self) -> GcMeter:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


class PeakThreads:
    """Samples ``threading.active_count()`` every millisecond while in a ``with``
    block: ``peak`` is the most seen."""

    def __init__(self) -> None:
        self.peak = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self.stopping.wait(0.001):
            self.peak = max(self.peak, threading.active_count())

    def __enter__(self) -> PeakThreads:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join()


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
    versions = (
        f"fluent-executors {version('fluent-executors')}, "
        f"more-executors {version('more-executors')}"
    )
    parts = [platform_summary(), versions, metrics_state()]
    return "; ".join([*parts, f"best of {repeat} rounds", *details])


def format_us(seconds: float | None) -> str:
    """Seconds as microseconds, ``12.34``; ``-`` for none."""
    return "-" if seconds is None else f"{seconds * 1e6:.2f}"


def format_ratio(value: float | None) -> str:
    """``1.23x``; ``-`` for none."""
    return "-" if value is None else f"{value:.2f}x"


_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


class Target(NamedTuple):
    """A target on a figure: met if ``value`` ``comparison`` ``bound``."""

    name: str
    value: float | None
    """``None`` if its runs were not made: the target is skipped."""
    comparison: Literal["<", "<=", ">", ">="]
    bound: float
    unit: str = "x"
    """``x`` for a ratio, else the unit written after the figure (``ms``)."""
    goal: bool = False
    """A goal, reported but never failing: ``GOAL MISSED`` instead of ``FAIL``."""

    def format(self, value: float | None) -> str:
        """``value`` in this target's unit: ``1.23x``, ``4.56 ms``; ``-`` for none."""
        if value is None:
            return "-"
        if self.unit == "x":
            return f"{value:.2f}x"
        return (
            f"{value:,.0f} {self.unit}" if value >= 1000 else f"{value:.3g} {self.unit}"
        )

    def verdict(self) -> str:
        """``PASS``, ``FAIL`` (``GOAL MISSED`` for a goal), or ``SKIP`` if its value
        is unknown."""
        if self.value is None:
            return "SKIP"
        if _COMPARISONS[self.comparison](self.value, self.bound):
            return "PASS"
        return "GOAL MISSED" if self.goal else "FAIL"


class Report:
    """A script's output: tables and targets, printed, and written as CSV files
    into ``out`` if given.

    Args:
        script: the script's name (``"layers"``), the stem of its targets file.
        args: the script's options (of :func:`add_options`): ``out``, the
            directory to write into (made if missing) or ``None``; how the script
            measured (``repeat``, ``clock``, ``quick``), written to
            ``<out>/meta-<script>.csv`` for ``bench/report.py``.
    """

    def __init__(self, script: str, args: argparse.Namespace) -> None:
        self.script = script
        self.out: Path | None = args.out
        self.targets: list[Target] = []
        if self.out is not None:
            self.out.mkdir(parents=True, exist_ok=True)
        self._write(
            f"meta-{script}.csv",
            [["repeat", "clock", "quick"], [args.repeat, args.clock, args.quick]],
        )

    def table(
        self, name: str, header: Sequence[str], rows: Iterable[Sequence[object]]
    ) -> None:
        """Print a table between blank lines; write it as ``<out>/<name>.csv``."""
        cells = [[str(cell) for cell in row] for row in rows]
        widths = [
            max(len(h), *(len(row[i]) for row in cells)) if cells else len(h)
            for i, h in enumerate(header)
        ]
        print()
        print(f"[{name}]")
        line = "  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))
        print(line)
        print("-" * len(line))
        for row in cells:
            print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
        print()
        self._write(f"{name}.csv", [list(header), *cells])

    def check(self, targets: Iterable[Target]) -> bool:
        """Print ``PASS``, ``FAIL`` or ``SKIP`` and the figure of each target; write
        them all (with those of earlier calls) to ``<out>/targets-<script>.csv``;
        return ``False`` if one of these failed."""
        targets = list(targets)
        self.targets += targets
        for target in targets:
            print(
                f"{target.verdict()}  {target.name}: {target.format(target.value)} "
                f"(target {target.comparison} {target.format(target.bound)})"
            )
        self._write(
            f"targets-{self.script}.csv",
            [
                [
                    f"``{self.script}``",
                    t.name,
                    t.format(t.value),
                    f"{t.comparison} {t.format(t.bound)}",
                    t.verdict(),
                ]
                for t in self.targets
            ],
        )
        return all(target.verdict() != "FAIL" for target in targets)

    def _write(self, filename: str, rows: Sequence[Sequence[object]]) -> None:
        if self.out is None:
            return
        with open(self.out / filename, "w", newline="", encoding="utf-8") as file:
            csv.writer(file, lineterminator="\n").writerows(rows)


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


def add_options(
    parser: argparse.ArgumentParser,
    default_sizes: Sequence[int] = (),
    quick_sizes: Sequence[int] = (),
) -> None:
    """Add ``--quick``, ``--repeat``, ``--clock``, ``--skip-more-executors``,
    ``--no-check`` and ``--out`` to ``parser``, and ``--sizes`` (sorted, without
    repeats) if ``default_sizes`` are given."""
    if default_sizes:
        parser.add_argument(
            "--sizes",
            type=_sizes,
            default=None,
            help=f"comma-separated N (default: {','.join(map(str, default_sizes))}; "
            f"with --quick: {','.join(map(str, quick_sizes))})",
        )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smaller sizes and 2 rounds: a check that the script runs, in seconds",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="rounds; the best is kept (default: 5, with --quick 2)",
    )
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="cpu",
        help="cpu: CPU time of the process, all threads (time.process_time); "
        "wall: elapsed time (time.perf_counter) (default: cpu)",
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
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write the tables and targets as CSV files into this directory "
        "(nox -s bench: docs/bench)",
    )
    parser.set_defaults(_default_sizes=list(default_sizes), _quick_sizes=quick_sizes)


def parse_options(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> tuple[argparse.Namespace, bool]:
    """Parse the options of :func:`add_options` and the parser's own; exit with
    status 2 if ``--repeat`` is below 1. Fills in ``sizes`` and ``repeat`` from
    ``--quick`` where not given.

    Returns:
        The options, and whether to run more-executors: unless
        ``--skip-more-executors``, and if it is installed (if not, stderr says so).
    """
    args = parser.parse_args(argv)
    if args.repeat is None:
        args.repeat = 2 if args.quick else 5
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    if getattr(args, "sizes", None) is None:
        args.sizes = sorted(args._quick_sizes if args.quick else args._default_sizes)
    installed = more_executors() is not None
    if not installed and not args.skip_more_executors:
        print("more-executors is not installed: skipping it", file=sys.stderr)
    return args, installed and not args.skip_more_executors


def finish(passed: bool, args: argparse.Namespace) -> int:
    """The exit status of a script: 1 if a target failed, unless ``--no-check``."""
    return 0 if passed or args.no_check else 1
