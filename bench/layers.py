"""The cost per future of each layer alone on a thread pool, and of a chain of
layers, beside a bare thread pool and more-executors 2.11.4.

Run it with ``nox -s bench`` (which also installs more-executors 2.11.4), or directly
with ``python bench/layers.py --help``. With the default sizes it takes about five
minutes; ``--quick`` about twenty seconds.

Each of N trivial callables (``_harness.task(i)`` returns ``i``) is submitted to each
contender, run side by side in one process (8 worker threads everywhere):

``bare``
    ``concurrent.futures.ThreadPoolExecutor(8)``: the floor.
``pool``
    ``Executors.thread_pool(8)``, the library's pool.
``map``, ``retry``, ``timeout``, ``throttle``, ``rate_limit``, ``cancel_on_shutdown``
    That layer alone on ``Executors.thread_pool(8)``: ``with_map(increment)``,
    ``with_retry()`` (asked once, never retries), ``with_timeout(60)`` (armed, then
    dropped), ``with_throttle(10**9)``, ``with_rate_limit(10**9)`` (neither ever
    waits), ``with_cancel_on_shutdown()``.
``chain``
    ``thread_pool(8).with_map(increment).with_retry().with_timeout(60)``.
``more-pool``, ``more-map``, ``more-retry``, ``more-timeout``, ``more-throttle``,
``more-chain``
    The same built with more-executors, if it is installed. It is 5 to 20 times
    slower, so it runs in the first round only (its figures are one run each), and
    at sizes above 10,000 only its pool and its chain run.

What is timed (``_harness.time_tasks``): from just before the first ``submit`` to the
return of ``concurrent.futures.wait`` on all N futures, with the CPU time of the
process (``--clock``). The figure is that time divided by N, in microseconds per
future, the best of ``--repeat`` interleaved rounds; ratios are between best runs.
The library's metrics are off: ``prometheus_client`` and ``opentelemetry`` cannot be
imported (``_harness.measure_without_metrics``); ``bench/metrics_overhead.py``
measures what they add.

Targets (checked unless ``--no-check``; the exit status is 1 if one fails), at the
largest N:

1. ``pool`` at most 0.85x ``bare``;
2. each single layer at most 1.5x ``bare``;
3. ``chain`` at most 1.5x ``bare``;
4. more-executors' chain slower than ours.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Executor

import _harness
from _harness import TIMEOUT, WORKERS, Measurements, Target, increment

_harness.measure_without_metrics()  # before fluent_executors is imported

from fluent_executors import Executors  # noqa: E402

MAX_POOL = 0.85
MAX_LAYER = 1.5
MAX_CHAIN = 1.5
HUGE = 10**9  # a throttle or rate limit that never waits
MORE_EVERY_LAYER_MAX_N = 10_000  # above, more-executors runs its pool and chain only

Layer = Callable[[Executor], Executor]

LAYERS: dict[str, tuple[Callable[[Executor], Executor], int]] = {
    # name: (what to put on a pool, what it adds to each result)
    "pool": (lambda pool: pool, 0),
    "map": (lambda pool: pool.with_map(increment), 1),  # type: ignore[attr-defined]
    "retry": (lambda pool: pool.with_retry(), 0),  # type: ignore[attr-defined]
    "timeout": (lambda pool: pool.with_timeout(TIMEOUT), 0),  # type: ignore[attr-defined]
    "throttle": (lambda pool: pool.with_throttle(HUGE), 0),  # type: ignore[attr-defined]
    "rate_limit": (lambda pool: pool.with_rate_limit(HUGE), 0),  # type: ignore[attr-defined]
    "cancel_on_shutdown": (
        lambda pool: pool.with_cancel_on_shutdown(),  # type: ignore[attr-defined]
        0,
    ),
    "chain": (
        lambda pool: (
            pool.with_map(increment)  # type: ignore[attr-defined]
            .with_retry()
            .with_timeout(TIMEOUT)
        ),
        1,
    ),
}
MORE_LAYERS = ("pool", "map", "retry", "timeout", "throttle", "chain")


def make(contender: str) -> tuple[Executor, int]:
    """A new executor for ``contender``, and what it adds to each result."""
    if contender == "bare":
        return _harness.bare_pool(), 0
    if contender.startswith("more-"):
        more_executors = _harness.more_executors()
        assert more_executors is not None
        wrap, offset = LAYERS[contender.removeprefix("more-")]
        return wrap(more_executors.Executors.thread_pool(max_workers=WORKERS)), offset
    wrap, offset = LAYERS[contender]
    return wrap(Executors.thread_pool(WORKERS)), offset


def measure(
    sizes: Sequence[int], repeat: int, with_more: bool, clock: str
) -> Measurements:
    """Run every (contender, N) in ``repeat`` interleaved rounds (more-executors in
    the first only); return seconds per future."""
    ours = ["bare", *LAYERS]
    for contender in ours:  # not timed: first-run costs (imports, threads)
        executor, offset = make(contender)
        _harness.time_tasks(executor, 1_000, what="warm-up", offset=offset)

    def schedule(round_: int) -> list[tuple[str, int]]:
        runs = [(c, n) for n in sizes for c in _harness.rotated(ours, round_)]
        if with_more and round_ == 0:
            runs += [
                (f"more-{layer}", n)
                for n in sizes
                for layer in MORE_LAYERS
                if n <= MORE_EVERY_LAYER_MAX_N or layer in ("pool", "chain")
            ]
        return runs

    def run(contender: str, n: int) -> tuple[float, str]:
        executor, offset = make(contender)
        (elapsed,) = _harness.time_tasks(
            executor,
            n,
            what=f"{contender} at N={n}",
            offset=offset,
            clocks=[_harness.CLOCKS[clock]],
        )
        return elapsed, ""

    return _harness.measure(schedule, run, repeat)


def report(
    report: _harness.Report,
    per_future: Measurements,
    sizes: Sequence[int],
    args: argparse.Namespace,
) -> bool:
    """Print and write the tables and the targets; return ``False`` if one failed."""
    print(_harness.summary(args.repeat, f"clock: {_harness.CLOCK_NAMES[args.clock]}"))
    best, ratio = _harness.best, _harness.ratio
    report.table(
        "layers",
        [
            "Executor",
            *(f"us at {n:,}" for n in sizes),
            *(f"/ bare at {n:,}" for n in sizes),
        ],
        [
            [
                f"``{name}``",
                *(_harness.format_us(best(per_future, (name, n))) for n in sizes),
                *(
                    _harness.format_ratio(ratio(per_future, (name, n), ("bare", n)))
                    for n in sizes
                ),
            ]
            for name in ["bare", *LAYERS]
        ],
    )
    report.table(
        "layers-more",
        [
            "Executor",
            *(f"us at {n:,}" for n in sizes),
            *(f"/ ours at {n:,}" for n in sizes),
        ],
        [
            [
                f"``{layer}``",
                *(
                    _harness.format_us(best(per_future, (f"more-{layer}", n)))
                    for n in sizes
                ),
                *(
                    _harness.format_ratio(
                        ratio(per_future, (f"more-{layer}", n), (layer, n))
                    )
                    for n in sizes
                ),
            ]
            for layer in MORE_LAYERS
        ],
    )
    n = sizes[-1]
    targets = [
        Target(
            f"thread_pool / bare at {n:,}",
            ratio(per_future, ("pool", n), ("bare", n)),
            "<=",
            MAX_POOL,
        )
    ]
    targets += [
        Target(
            f"{layer} on thread_pool / bare at {n:,}",
            ratio(per_future, (layer, n), ("bare", n)),
            "<=",
            MAX_LAYER,
        )
        for layer in LAYERS
        if layer not in ("pool", "chain")
    ]
    targets += [
        Target(
            f"map+retry+timeout chain / bare at {n:,}",
            ratio(per_future, ("chain", n), ("bare", n)),
            "<=",
            MAX_CHAIN,
        ),
        Target(
            f"more-executors' chain / ours at {n:,}",
            ratio(per_future, ("more-chain", n), ("chain", n)),
            ">",
            1.0,
        ),
    ]
    return report.check(targets)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Cost per future of each layer alone on thread_pool(8), and of "
        "the chain thread_pool(8).with_map(f).with_retry().with_timeout(60): bare "
        "ThreadPoolExecutor(8), fluent-executors, more-executors.",
    )
    _harness.add_options(
        parser, default_sizes=[1_000, 10_000, 100_000], quick_sizes=[1_000, 5_000]
    )
    args, with_more = _harness.parse_options(parser, argv)
    per_future = measure(args.sizes, args.repeat, with_more, args.clock)
    passed = report(_harness.Report("layers", args), per_future, args.sizes, args)
    return _harness.finish(passed, args)


if __name__ == "__main__":
    sys.exit(main())
