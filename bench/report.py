"""Draw the plots of the benchmarks and write what the performance page says about
the run, from the CSV files the scripts of ``bench/`` wrote into one directory.

``nox -s bench`` runs it last: ``python bench/report.py docs/bench``. It needs
matplotlib (installed in the bench session only). It writes into that directory:

``<table>.svg``
    a plot of each table that has one (:data:`PLOTS`);
``targets.csv``
    every script's targets (``targets-<script>.csv``) in one table;
``run.inc``
    reStructuredText: when, on what machine and at what commit the run was made,
    with which clock, and how many targets were met; ``docs/performance.rst``
    includes it;
``gc_freeze.inc``
    reStructuredText: one sentence on whether ``gc.freeze()`` helped in this run
    (from ``gc_freeze.csv``);
``poll_million.inc``
    reStructuredText: the cost per future of ours at a million against the largest
    other N, with and without the time in the garbage collector (from
    ``poll_million.csv``).

With ``--by-python`` it only writes ``targets-by-python.csv``: the targets that
``nox -s bench-python`` checked on each Python, from the ``python<version>/``
directories in that directory (no plot, no matplotlib).

Exit status 1 if a table that has a plot is missing.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import platform
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _harness

Table = tuple[list[str], list[list[str]]]

# The scripts in the order of the page (and of the targets table).
SCRIPTS = (
    "layers",
    "poll_scale",
    "poll_batched",
    "timeouts",
    "combinators",
    "import_time",
    "memory",
    "retry_flaky",
    "remote_tasks",
    "aio_poll",
    "store_cost",
    "adaptive_rate",
    "metrics_overhead",
)
PACKAGES = (
    "fluent-executors",
    "more-executors",
    "tenacity",
    "stamina",
    "prometheus-client",
    "opentelemetry-api",
    "opentelemetry-sdk",
    "matplotlib",
    "psycopg",
)


def read(directory: Path, name: str) -> Table:
    """The header and the rows of ``<directory>/<name>.csv``."""
    with open(directory / f"{name}.csv", newline="", encoding="utf-8") as file:
        header, *rows = csv.reader(file)
    return header, rows


def number(cell: str) -> float | None:
    """``"1,234.5"``, ``"2.00x"`` as a float; ``None`` for ``-``."""
    text = cell.replace(",", "").rstrip("x").strip()
    return None if text in ("", "-") else float(text)


def plain(cell: str) -> str:
    """A cell without its reStructuredText markup, for a plot's labels."""
    return re.sub(r":func:`([^`]+)`", r"\1", cell).replace("``", "")


def sizes_of(header: list[str], prefix: str) -> list[tuple[int, int]]:
    """(column, N) of the columns named ``<prefix><N>``."""
    return [
        (i, int(name[len(prefix) :].replace(",", "")))
        for i, name in enumerate(header)
        if name.startswith(prefix)
    ]


# -- the plots -------------------------------------------------------------------------


def plot_layers(directory: Path, plt: Any) -> Any:
    header, rows = read(directory, "layers")
    more_header, more_rows = read(directory, "layers-more")
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    columns = sizes_of(header, "us at ")
    for row in rows:
        points = [(n, number(row[i])) for i, n in columns if number(row[i])]
        name = plain(row[0])
        left.plot(
            [n for n, _ in points],
            [v for _, v in points],
            marker="o",
            linewidth=3 if name == "bare" else 1.2,
            color="black" if name == "bare" else None,
            label=name,
        )
    more_columns = sizes_of(more_header, "us at ")
    for row in more_rows:
        points = [(n, number(row[i])) for i, n in more_columns if number(row[i])]
        if points:
            left.plot(
                [n for n, _ in points],
                [v for _, v in points],
                linestyle="--",
                marker="x",
                label=f"more-executors {plain(row[0])}",
            )
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("N callables")
    left.set_ylabel("CPU microseconds per future")
    left.set_title("cost per future")
    left.legend(fontsize=6, ncol=2)
    largest = max(n for _, n in columns)
    column = dict((n, i) for i, n in sizes_of(header, "/ bare at "))[largest]
    names = [plain(row[0]) for row in rows if plain(row[0]) != "bare"]
    ratios = [number(row[column]) or 0.0 for row in rows if plain(row[0]) != "bare"]
    positions = range(len(names))
    right.barh([p - 0.2 for p in positions], ratios, 0.4, label="fluent-executors")
    more_us = {
        plain(row[0]): number(row[dict((n, i) for i, n in more_columns)[largest]])
        for row in more_rows
    }
    bare_us = number(
        next(row for row in rows if plain(row[0]) == "bare")[
            dict((n, i) for i, n in columns)[largest]
        ]
    )
    more_ratios = [(more_us.get(name) or 0.0) / (bare_us or 1.0) for name in names]
    right.barh([p + 0.2 for p in positions], more_ratios, 0.4, label="more-executors")
    right.set_yticks(list(positions), names)
    right.legend(fontsize=7)
    right.axvline(1.0, color="black", linewidth=1)
    right.set_xlabel(f"/ bare ThreadPoolExecutor at {largest:,}")
    right.set_title("each layer on thread_pool(8)")
    right.invert_yaxis()
    return figure


def plot_poll_scale(directory: Path, plt: Any) -> Any:
    _, rows = read(directory, "poll_scale")
    figure, axes = plt.subplots(figsize=(7, 4))
    for column, label, style in (
        (1, "bare ThreadPoolExecutor", "k-o"),
        (2, "fluent-executors with_poll", "b-o"),
        (4, "more-executors with_poll", "r--x"),
    ):
        points = [
            (number(row[0]), number(row[column])) for row in rows if number(row[column])
        ]
        axes.plot([n for n, _ in points], [v for _, v in points], style, label=label)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("futures outstanding")
    axes.set_ylabel("CPU microseconds per future")
    axes.legend()
    return figure


def plot_bars(
    name: str, columns: Sequence[tuple[int, str]]
) -> Callable[[Path, Any], Any]:
    """A plot of one bar chart per column of ``name``'s table, side by side, each
    bar labelled with its cell."""

    def plot(directory: Path, plt: Any) -> Any:
        _, rows = read(directory, name)
        labels = [plain(row[0]) for row in rows]
        width = 2.6 * len(columns) + 0.075 * max(map(len, labels))  # inches
        figure, _ = plt.subplots(
            1, len(columns), figsize=(width, 0.5 * len(rows) + 1.6)
        )
        for index, (ax, (column, title)) in enumerate(
            zip(figure.axes, columns, strict=True)
        ):
            values = [number(row[column]) or 0.0 for row in rows]
            bars = ax.barh(labels, values, color=[f"C{i}" for i in range(len(rows))])
            ax.bar_label(bars, [row[column] for row in rows], fontsize=7, padding=2)
            ax.set_title(title, fontsize=9)
            ax.set_xticks([])
            ax.set_xlim(0, max(values) * 1.45 or 1)
            ax.invert_yaxis()
            if index:
                ax.set_yticks([])
        figure.tight_layout()
        return figure

    return plot


def plot_combinators(directory: Path, plt: Any) -> Any:
    header, rows = read(directory, "combinators")
    figure, axes = plt.subplots(figsize=(7, 3.5))
    largest = sizes_of(header, "us per input at ")[-1]
    labels = [plain(row[0]) for row in rows]
    ours = [number(row[largest[0]]) or 0.0 for row in rows]
    more = [number(row[-1]) or 0.0 for row in rows]
    positions = range(len(rows))
    axes.bar([p - 0.2 for p in positions], ours, 0.4, label="fluent-executors")
    axes.bar([p + 0.2 for p in positions], more, 0.4, label="more-executors")
    axes.set_xticks(list(positions), labels, fontsize=8)
    axes.set_ylabel(f"CPU microseconds per input at {largest[1]:,}")
    axes.legend()
    return figure


def plot_adaptive_rate(directory: Path, plt: Any) -> Any:
    header, rows = read(directory, "adaptive_rate_trace")
    _, summary = read(directory, "adaptive_rate")
    figure, (trace, seconds, refused) = plt.subplots(
        1, 3, figsize=(12, 3.8), gridspec_kw={"width_ratios": [2.2, 1, 1]}
    )
    seconds_axis = [int(row[0]) for row in rows]
    for column in range(2, len(header)):
        trace.plot(
            seconds_axis,
            [number(row[column]) for row in rows],
            label=header[column].removeprefix("accepted, "),
        )
    trace.plot(
        seconds_axis,
        [number(row[1]) for row in rows],
        color="C0",
        linestyle=":",
        label="adaptive rate (limit)",
    )
    trace.set_xlabel("seconds (virtual clock)")
    trace.set_ylabel("calls accepted per second")
    trace.legend(fontsize=7)
    labels = [plain(row[0]) for row in summary]
    for ax, column, title in ((seconds, 1, "seconds"), (refused, 2, "refused calls")):
        values = [number(row[column]) or 0.0 for row in summary]
        bars = ax.barh(labels, values, color=[f"C{i}" for i in range(len(summary))])
        ax.bar_label(bars, [row[column] for row in summary], fontsize=7, padding=2)
        ax.set_title(title, fontsize=9)
        ax.set_xticks([])
        ax.set_xlim(0, max(values) * 1.45 or 1)
        ax.invert_yaxis()
    refused.set_yticks([])
    return figure


PLOTS: dict[str, Callable[[Path, Any], Any]] = {
    "layers": plot_layers,
    "poll_scale": plot_poll_scale,
    "combinators": plot_combinators,
    "memory": plot_bars("memory", [(1, "objects per future"), (2, "bytes per future")]),
    "retry_flaky": plot_bars(
        "retry_flaky", [(1, "wall seconds"), (2, "CPU seconds"), (3, "threads")]
    ),
    "remote_tasks": plot_bars(
        "remote_tasks",
        [(1, "requests"), (3, "CPU seconds"), (4, "threads"), (6, "lateness p99, ms")],
    ),
    "aio_poll": plot_bars(
        "aio_poll",
        [(2, "status requests"), (4, "wall seconds"), (5, "CPU us per task")],
    ),
    "adaptive_rate": plot_adaptive_rate,
}


def draw(directory: Path) -> list[str]:
    """Draw every plot whose table is there; return the names of those missing."""
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "fluent-executors-bench"  # stable ids
    missing = []
    for name, plot in PLOTS.items():
        if not (directory / f"{name}.csv").is_file():
            missing.append(name)
            continue
        figure = plot(directory, plt)
        figure.tight_layout()
        figure.savefig(directory / f"{name}.svg", metadata={"Date": None})
        plt.close(figure)
    return missing


# -- the run ---------------------------------------------------------------------------


def merge_targets(directory: Path) -> list[list[str]]:
    """Write ``targets.csv`` from the scripts' targets; return its rows."""
    rows = []
    for script in SCRIPTS:
        path = directory / f"targets-{script}.csv"
        if path.is_file():
            with open(path, newline="", encoding="utf-8") as file:
                rows += list(csv.reader(file))
    with open(directory / "targets.csv", "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(["Script", "Target", "Figure", "Bound", "Verdict"])
        writer.writerows(rows)
    return rows


def merge_python_targets(directory: Path) -> None:
    """Write ``targets-by-python.csv`` from the targets of each ``python<version>``
    directory (``nox -s bench-python``), the Pythons in order of version."""
    runs = sorted(
        (path for path in directory.glob("python3.*") if path.is_dir()),
        key=lambda path: tuple(int(n) for n in path.name[6:].split(".")),
    )
    rows = []
    for run in runs:
        for script in SCRIPTS:
            path = run / f"targets-{script}.csv"
            if path.is_file():
                with open(path, newline="", encoding="utf-8") as file:
                    rows += [[run.name[6:], *row] for row in csv.reader(file)]
    path = directory / "targets-by-python.csv"
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(["Python", "Script", "Target", "Figure", "Bound", "Verdict"])
        writer.writerows(rows)


def git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def machine() -> str:
    """``Intel(R) Xeon(R) ... , 2 CPUs, 24 GB, Linux 6.1 x86_64``."""
    model = platform.processor() or platform.machine()
    memory = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            found = re.search(r"^model name\s*:\s*(.+)$", file.read(), re.M)
        model = found.group(1).strip() if found else model
        with open("/proc/meminfo", encoding="utf-8") as file:
            total = re.search(r"^MemTotal:\s*(\d+) kB", file.read(), re.M)
        memory = f", {int(total.group(1)) / 2**20:.0f} GB of memory" if total else ""
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} CPUs{memory}, {platform.system()} "
        f"{platform.release()} {platform.machine()}"
    )


def write_run(directory: Path, targets: list[list[str]], command: str) -> None:
    """Write ``run.inc``: when, where, how, and the verdicts."""
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "src", "bench")
    verdicts = [row[-1] for row in targets]
    metas = [read(directory, path.stem)[1][0] for path in directory.glob("meta-*.csv")]
    repeats = sorted({int(meta[0]) for meta in metas}) or [5]
    quick = any(meta[2] == "True" for meta in metas)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    versions = ", ".join(f"{p} {_harness.version(p)}" for p in PACKAGES)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"- **Run**: ``{command}``, finished {now}, at commit ``{commit}``"
        + (" (with changes to ``src/`` or ``bench/`` not committed)" if dirty else "")
        + ".",
        f"- **Machine**: {machine()}; load average at the end of the run (1, 5, 15 "
        f"minutes): {load}.",
        f"- **Python**: {platform.python_implementation()} "
        f"{platform.python_version()}; {versions}.",
        f"- **Clock**: {_harness.CLOCK_NAMES['cpu']}, unless a table says otherwise; "
        f"each figure is the best of {' or '.join(map(str, repeats))} interleaved "
        "rounds, unless its table gives its own count of runs (one run each in the "
        "remote tasks table), and each ratio is taken between two figures of the "
        "same run.",
        "- **Metrics**: no metric package importable (``prometheus_client`` and "
        "``opentelemetry`` blocked), except in the metrics table.",
        f"- **Targets**: {verdicts.count('PASS')} met, {verdicts.count('FAIL')} "
        f"missed, {verdicts.count('SKIP')} skipped; "
        f"{verdicts.count('GOAL MISSED')} goals missed.",
    ]
    if quick:
        lines.append(
            "- **A quick run** (``--quick``): small sizes, which the targets are "
            "not meant for."
        )
    (directory / "run.inc").write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_gc_freeze(directory: Path) -> None:
    """Write ``gc_freeze.inc``: what ``gc.freeze()`` did in the run, in a sentence."""
    if not (directory / "gc_freeze.csv").is_file():
        return
    _, (alone, outstanding, frozen) = read(directory, "gc_freeze")
    held, free = number(outstanding[1]) or 0.0, number(frozen[1]) or 0.0
    change = (held - free) / held if held else 0.0
    if change >= 0.05:
        verdict = f"it helped, the cost per future fell by {change:.0%}"
    elif change <= -0.05:
        verdict = f"it did not help, the cost per future rose by {-change:.0%}"
    else:
        verdict = "it made no difference worth having (under 5%)"
    text = (
        f"In this run, with {plain(outstanding[0])}, the chain cost "
        f"{outstanding[1]} microseconds per future ({alone[1]} with nothing else "
        f"outstanding); after ``gc.freeze()``, {frozen[1]}: {verdict}.\n"
    )
    (directory / "gc_freeze.inc").write_text(text, encoding="utf-8")


def write_poll_million(directory: Path) -> None:
    """Write ``poll_million.inc``: ours at the million against ours at the largest
    other N, in the collector and out of it, and the bare pool's collector."""
    if not (directory / "poll_million.csv").is_file():
        return
    _, (bare_n, bare_million, ours_n, ours_million) = read(directory, "poll_million")

    def times(top: str, bottom: str) -> str:
        top_value, bottom_value = number(top), number(bottom)
        return f"{top_value / bottom_value:.2f}" if top_value and bottom_value else "-"

    text = (
        f"In this run, ours cost {ours_million[3]} microseconds of CPU per future "
        f"with {ours_million[1]} outstanding and {ours_n[3]} with {ours_n[1]}: "
        f"{times(ours_million[3], ours_n[3])} times as much (in the best of "
        f"{ours_million[2]} runs; the slowest cost {ours_million[4]}). Of these, "
        f"{ours_million[6]} and {ours_n[6]} were spent in the garbage collector; "
        f"less that time, {ours_million[7]} and {ours_n[7]}: "
        f"{times(ours_million[7], ours_n[7])} times. The bare pool spent "
        f"{bare_million[6]} and {bare_n[6]} per future in the collector.\n"
    )
    (directory / "poll_million.inc").write_text(text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="where the scripts wrote")
    parser.add_argument(
        "--command", default="nox -s bench", help="how the run was made, as written"
    )
    parser.add_argument(
        "--by-python",
        action="store_true",
        help="only merge the targets of each Python (nox -s bench-python)",
    )
    args = parser.parse_args(argv)
    if args.by_python:
        merge_python_targets(args.directory)
        return 0
    missing = draw(args.directory)
    targets = merge_targets(args.directory)
    write_run(args.directory, targets, args.command)
    write_gc_freeze(args.directory)
    write_poll_million(args.directory)
    for row in targets:
        print(f"{row[-1]}  {row[0]} {row[1]}: {row[2]} (target {row[3]})")
    if missing:
        print(f"tables missing, not drawn: {', '.join(missing)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
