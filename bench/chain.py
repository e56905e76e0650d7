"""The overhead of a chain of wrappers over a bare thread pool, per future.

Run it with ``nox -s bench`` (which also installs more-executors 2.11.4), or directly
with ``python bench/chain.py --help``. With the default sizes it takes about five
minutes, most of it in more-executors at 100,000.

Each of N trivial callables (``_task(i)`` returns ``i``) is submitted to each
contender, run side by side in one process:

``bare``
    ``concurrent.futures.ThreadPoolExecutor(8)``: the floor.
``ours``
    ``fluent_executors.Executors.thread_pool(8).with_map(_increment).with_retry()
    .with_timeout(60)``: every future passes through a map, a retry policy that is
    asked once and does not retry, and a timeout that is armed and then dropped.
``more``
    ``more_executors.Executors.thread_pool(max_workers=8).with_map(_increment)
    .with_retry().with_timeout(60)``, the same chain, if more-executors is
    installed.

What is timed, with :func:`time.perf_counter`: from just before the first ``submit``
to the return of ``concurrent.futures.wait`` on all N futures (all done). The
executor is built before and shut down after the timed part; ``gc.collect()`` runs
before each run; the results are checked after. The figure reported is that time
divided by N, in microseconds per future, the median over ``--repeat`` rounds. In
each round every N is run with every contender one after the other (the order of
the contenders rotates from round to round), so that noise from other processes hits
them alike; each ratio is the median of the ratios measured within a round.

Targets (checked unless ``--no-check``; the exit status is 1 if one fails):

1. ours within 4x of the bare pool, at every N;
2. more-executors slower than ours, at every N;
3. ours at the largest N within 1.5x of ours at the smallest N (flat cost per
   future).

A target whose contenders were not run is reported SKIP.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gc
import importlib.metadata
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future

from fluent_executors import Executors

try:
    import more_executors
except ImportError:  # the comparison is optional outside ``nox -s bench``
    more_executors = None

WORKERS = 8
TIMEOUT = 60.0
MAX_OURS_OVER_BARE = 4.0
MAX_GROWTH = 1.5
CONTENDERS = ("bare", "ours", "more")

Measurements = dict[tuple[str, int], list[float]]
"""Seconds per future of each run, by (contender, N), in the order of the rounds."""


def _task(i: int) -> int:
    """The trivial callable."""
    return i


def _increment(result: int) -> int:
    """The mapping function of the chains."""
    return result + 1


def _make_bare() -> Executor:
    return concurrent.futures.ThreadPoolExecutor(WORKERS)


def _make_ours() -> Executor:
    return (
        Executors.thread_pool(WORKERS)
        .with_map(_increment)
        .with_retry()
        .with_timeout(TIMEOUT)
    )


def _make_more() -> Executor:
    assert more_executors is not None
    executor: Executor = (
        more_executors.Executors.thread_pool(max_workers=WORKERS)
        .with_map(_increment)
        .with_retry()
        .with_timeout(TIMEOUT)
    )
    return executor


FACTORIES: dict[str, Callable[[], Executor]] = {
    "bare": _make_bare,
    "ours": _make_ours,
    "more": _make_more,
}


def run_once(contender: str, n: int) -> float:
    """Run N callables through the contender once; return the seconds from the first
    submit to all done."""
    executor = FACTORIES[contender]()
    gc.collect()
    try:
        start = time.perf_counter()
        futures: list[Future[int]] = [executor.submit(_task, i) for i in range(n)]
        _, not_done = concurrent.futures.wait(futures)
        elapsed = time.perf_counter() - start
    finally:
        executor.shutdown(wait=True)
    offset = 0 if contender == "bare" else 1
    if not_done or any(f.result() != i + offset for i, f in enumerate(futures)):
        raise AssertionError(f"{contender} at N={n}: a future is pending or wrong")
    return elapsed


def measure(sizes: Sequence[int], repeat: int, with_more: bool) -> Measurements:
    """Run every (contender, N) ``repeat`` times, interleaved; return seconds/future."""
    contenders = list(CONTENDERS) if with_more else ["bare", "ours"]
    per_future: Measurements = {}
    for round_ in range(repeat):
        shift = round_ % len(contenders)
        for n in sizes:
            for contender in contenders[shift:] + contenders[:shift]:
                elapsed = run_once(contender, n)
                per_future.setdefault((contender, n), []).append(elapsed / n)
                print(
                    f"  round {round_ + 1}/{repeat}  N={n:>7,}  {contender:<4}  "
                    f"{elapsed:8.3f} s  {elapsed / n * 1e6:8.2f} us/future",
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


def _us(values: list[float] | None) -> str:
    return "-" if values is None else f"{statistics.median(values) * 1e6:.2f}"


def _x(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"


def report(per_future: Measurements, sizes: Sequence[int], repeat: int) -> bool:
    """Print the table and the targets; return ``False`` if a target failed."""
    more_version = (
        importlib.metadata.version("more-executors") if more_executors else "absent"
    )
    print(
        f"Python {platform.python_version()} on {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} CPUs; fluent-executors "
        f"{importlib.metadata.version('fluent-executors')}, more-executors "
        f"{more_version}; median of {repeat} rounds"
    )
    print(
        f"chain: thread_pool({WORKERS}).with_map(f).with_retry()"
        f".with_timeout({TIMEOUT:g}); microseconds per future"
    )
    print()
    header = (
        f"{'N':>9}  {'bare us':>9}  {'ours us':>9}  {'more us':>9}  "
        f"{'ours/bare':>9}  {'more/ours':>9}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        print(
            f"{n:>9,}  {_us(per_future.get(('bare', n))):>9}  "
            f"{_us(per_future.get(('ours', n))):>9}  "
            f"{_us(per_future.get(('more', n))):>9}  "
            f"{_x(paired_ratio(per_future, ('ours', n), ('bare', n))):>9}  "
            f"{_x(paired_ratio(per_future, ('more', n), ('ours', n))):>9}"
        )
    print()
    targets: list[tuple[str, float | None, str, Callable[[float], bool]]] = []
    for n in sizes:
        targets.append(
            (
                f"ours / bare at {n:,}",
                paired_ratio(per_future, ("ours", n), ("bare", n)),
                f"<= {MAX_OURS_OVER_BARE:g}",
                lambda r: r <= MAX_OURS_OVER_BARE,
            )
        )
    for n in sizes:
        targets.append(
            (
                f"more-executors / ours at {n:,}",
                paired_ratio(per_future, ("more", n), ("ours", n)),
                "> 1",
                lambda r: r > 1.0,
            )
        )
    if len(sizes) > 1:
        smallest, largest = sizes[0], sizes[-1]
        targets.append(
            (
                f"ours at {largest:,} / ours at {smallest:,}",
                paired_ratio(per_future, ("ours", largest), ("ours", smallest)),
                f"<= {MAX_GROWTH:g}",
                lambda r: r <= MAX_GROWTH,
            )
        )
    all_passed = True
    for name, ratio, bound, check in targets:
        passed = None if ratio is None else check(ratio)
        verdict = {None: "SKIP", True: "PASS", False: "FAIL"}[passed]
        print(f"{verdict}  {name}: {_x(ratio)} (target {bound})")
        all_passed = all_passed and passed is not False
    return all_passed


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Cost per future of the chain thread_pool(8).with_map(f)"
        ".with_retry().with_timeout(60): bare ThreadPoolExecutor(8), "
        "fluent-executors, more-executors.",
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=[10_000, 100_000],
        help="comma-separated N (default: 10000,100000)",
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
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    with_more = more_executors is not None and not args.skip_more_executors
    if more_executors is None and not args.skip_more_executors:
        print("more-executors is not installed: skipping it", file=sys.stderr)

    per_future = measure(args.sizes, args.repeat, with_more)
    passed = report(per_future, args.sizes, args.repeat)
    return 0 if passed or args.no_check else 1


if __name__ == "__main__":
    sys.exit(main())
