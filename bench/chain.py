"""The overhead of a chain of wrappers over a bare thread pool, per future.

Run it with ``nox -s bench`` (which also installs more-executors 2.11.4), or directly
with ``python bench/chain.py --help``. With the default sizes it takes about five
minutes, most of it in more-executors at 100,000.

Each of N trivial callables (``_harness.task(i)`` returns ``i``) is submitted to each
contender, run side by side in one process:

``bare``
    ``concurrent.futures.ThreadPoolExecutor(8)``: the floor.
``ours``
    ``fluent_executors.Executors.thread_pool(8).with_map(increment).with_retry()
    .with_timeout(60)``: every future passes through a map, a retry policy that is
    asked once and does not retry, and a timeout that is armed and then dropped.
``more``
    ``more_executors.Executors.thread_pool(max_workers=8).with_map(increment)
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

The library's metrics are off (``FLUENT_EXECUTORS_METRICS=0``) unless that variable
is set: with ``prometheus-client`` or ``opentelemetry-api`` installed, as in ``nox -s
bench``, the library would record them, and this benchmark measures the library's
own cost; what metrics add is what ``bench/metrics_overhead.py`` measures.
``FLUENT_EXECUTORS_METRICS=1 python bench/chain.py`` measures with them on. The
first line of the report says which.

Targets (checked unless ``--no-check``; the exit status is 1 if one fails):

1. ours within 4x of the bare pool, at every N;
2. more-executors slower than ours, at every N;
3. ours at the largest N within 1.5x of ours at the smallest N (flat cost per
   future).

A target whose contenders were not run is reported SKIP.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Executor

import _harness
from _harness import TIMEOUT, WORKERS, Measurements, Target, increment

# Before fluent_executors is imported (by _harness.our_chain, in the first run).
_harness.measure_without_metrics()

MAX_OURS_OVER_BARE = 4.0
MAX_GROWTH = 1.5
CONTENDERS = ("bare", "ours", "more")


def _make_more() -> Executor:
    more_executors = _harness.more_executors()
    assert more_executors is not None
    executor: Executor = (
        more_executors.Executors.thread_pool(max_workers=WORKERS)
        .with_map(increment)
        .with_retry()
        .with_timeout(TIMEOUT)
    )
    return executor


FACTORIES: dict[str, Callable[[], Executor]] = {
    "bare": _harness.bare_pool,
    "ours": _harness.our_chain,
    "more": _make_more,
}


def run_once(contender: str, n: int) -> float:
    """Run N callables through the contender once; return the seconds from the first
    submit to all done."""
    (elapsed,) = _harness.time_tasks(
        FACTORIES[contender](),
        n,
        what=f"{contender} at N={n}",
        offset=0 if contender == "bare" else 1,
    )
    return elapsed


def measure(sizes: Sequence[int], repeat: int, with_more: bool) -> Measurements:
    """Run every (contender, N) ``repeat`` times, interleaved; return seconds/future."""
    contenders = list(CONTENDERS) if with_more else ["bare", "ours"]
    return _harness.measure(
        lambda round_: [
            (contender, n)
            for n in sizes
            for contender in _harness.rotated(contenders, round_)
        ],
        lambda contender, n: (run_once(contender, n), ""),
        repeat,
    )


def report(per_future: Measurements, sizes: Sequence[int], repeat: int) -> bool:
    """Print the table and the targets; return ``False`` if a target failed."""
    print(_harness.summary(repeat))
    print(f"chain: {_harness.CHAIN}; microseconds per future")
    _harness.print_table(per_future, sizes)
    ratio = _harness.paired_ratio
    targets = [
        Target(
            f"ours / bare at {n:,}",
            ratio(per_future, ("ours", n), ("bare", n)),
            "<=",
            MAX_OURS_OVER_BARE,
        )
        for n in sizes
    ]
    targets += [
        Target(
            f"more-executors / ours at {n:,}",
            ratio(per_future, ("more", n), ("ours", n)),
            ">",
            1.0,
        )
        for n in sizes
    ]
    if len(sizes) > 1:
        smallest, largest = sizes[0], sizes[-1]
        targets.append(
            Target(
                f"ours at {largest:,} / ours at {smallest:,}",
                ratio(per_future, ("ours", largest), ("ours", smallest)),
                "<=",
                MAX_GROWTH,
            )
        )
    return _harness.check_targets(targets)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Cost per future of the chain thread_pool(8).with_map(f)"
        ".with_retry().with_timeout(60): bare ThreadPoolExecutor(8), "
        "fluent-executors, more-executors.",
    )
    _harness.add_options(parser, default_sizes=[10_000, 100_000])
    args, with_more = _harness.parse_options(parser, argv)

    per_future = measure(args.sizes, args.repeat, with_more)
    passed = report(per_future, args.sizes, args.repeat)
    return 0 if passed or args.no_check else 1


if __name__ == "__main__":
    sys.exit(main())
