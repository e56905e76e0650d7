"""How the cost per future of a poll executor grows with the futures outstanding, up
to one million on one executor.

Run it with ``nox -s bench`` (which also installs more-executors 2.11.4), or directly
with ``python bench/poll_scale.py --help``. It takes about eight minutes (``--quick``:
twenty seconds).

The scenario is the one that matters to users of a poll executor: many remote tasks
outstanding at once. Each of N trivial callables (``_harness.task(i)`` returns
``i``, the "task id") is submitted; no remote task finishes until every one of the N
futures is being polled; then they finish a few at a time.

Contenders, run side by side in one process:

``bare``
    ``concurrent.futures.ThreadPoolExecutor(8)``: the floor. Nothing is polled; a
    future is done when its callable has run.
``ours``
    ``fluent_executors.Executors.thread_pool(8).with_poll(poll_fn)``.
``more``
    ``more_executors.Executors.thread_pool(max_workers=8).with_poll(poll_fn)`` with
    the same poll function, if more-executors is installed. Its bookkeeping is
    quadratic (about 13 s at N = 8,000), so it is run only for N <= 8,000, and in
    the first round only.

The poll function (:class:`ScenarioPoll`, a fresh one per run):

- While it is given fewer than N descriptors (some callables not yet submitted or
  not yet run), it resolves nothing and asks to be called again after
  ``max(1 ms, 1 us x descriptors given)``. Returning 0 here would be a busy loop
  that copies up to N descriptors per poll and takes the GIL from the submitting
  thread and the pool's workers; returning ``inf`` would make every arrival wake
  the poll thread. A delay proportional to the size of the poll keeps the poll
  thread's share of the time during submission to about 1%.
- Once it has been given all N at once, it resolves ``max(1, len // 100)`` of the
  descriptors it is given (1%, the oldest first) with ``yield_result`` on every poll
  and returns 0 ("poll again at once"), until none is left.
- Given an empty list (more-executors polls even with nothing outstanding) it returns
  the waiting delay above.

What is timed (``_harness.time_tasks``): from just before the first ``submit`` to the
return of ``concurrent.futures.wait`` on all N futures, with the CPU time of the
process (``--clock``); the garbage collector stays on (its work is part of the
cost). The figure is that time divided by N, in microseconds per future, the best
of ``--repeat`` interleaved rounds; ratios are between best runs. Metrics are off
(no metric package importable, ``_harness.measure_without_metrics``).

Then the million (``--million``, 0 to skip): bare and ours with 1,000,000
outstanding futures, timed the same way, best of ``--million-repeat`` interleaved
rounds; and ours once more with :mod:`tracemalloc` tracing from the first submit
until the poll function is first given all of them, when the memory traced (less
what was traced before the first submit) is divided by N: the bytes per outstanding
future, the list of futures the benchmark holds included.

Every timed run also counts the collector's work in its timed part
(``_harness.GcMeter``): the collections of the oldest generation ("full") and the
CPU seconds of the collecting thread in the collector. The million's table shows
both for the best runs at the largest N and at the million, and the cost per future
less that time (``bench/report.py`` writes the ratios in a sentence,
``poll_million.inc``).

Targets (checked unless ``--no-check``; the exit status is 1 if one fails):

1. ours at most 1.5x the bare pool at 8,000, and at most 1.0x at 64,000;
2. ours/bare at 64,000 at most 1.3x ours/bare at 4,000 (flat cost per future);
3. more-executors at least 20x slower than ours at 8,000;
4. the million completes, ours' cost per future at most 1.3x ours at 64,000;
5. a goal, reported but never failing: at most 1 KB per outstanding future.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tracemalloc
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any

import _harness
from _harness import WORKERS, Clock, GcMeter, Measurements, Target

_harness.measure_without_metrics()  # before fluent_executors is imported

from fluent_executors import Executors  # noqa: E402

MORE_EXECUTORS_MAX_N = 8_000
MAX_AT_8_000 = 1.5  # ours / bare at 8,000
LARGE = 64_000  # the N where ours costs at most MAX_AT_LARGE times the bare pool
MAX_AT_LARGE = 1.0
WARM_UP_N = 1_000  # one untimed run of each contender first, at most this N
WAIT_MIN = 0.001  # seconds: the shortest delay asked for while waiting for all N
WAIT_PER_DESCRIPTOR = 1e-6  # seconds per descriptor given, while waiting for all N


class ScenarioPoll:
    """The poll function of one run: resolves nothing until all ``n`` futures are
    being polled, then 1% of those it is given per poll, at once again and again.

    The same object works for both libraries: it only uses ``len()``, slicing,
    ``descriptor.result`` and ``descriptor.yield_result(value)``.
    """

    def __init__(self, n: int, on_all_given: Callable[[], object] = int) -> None:
        self.n = n
        self.releasing = False  # latched once all n were given at once
        self.polls = 0
        self.on_all_given = on_all_given  # called once, when all n are given

    def __call__(self, descriptors: list[Any]) -> float:
        self.polls += 1
        given = len(descriptors)
        if not self.releasing and given >= self.n:
            self.releasing = True
            self.on_all_given()
        if not self.releasing or not given:
            return max(WAIT_MIN, given * WAIT_PER_DESCRIPTOR)
        for descriptor in descriptors[: max(1, given // 100)]:
            descriptor.yield_result(descriptor.result)
        return 0


def _make_bare(poll: ScenarioPoll) -> Executor:
    return _harness.bare_pool()


def _make_ours(poll: ScenarioPoll) -> Executor:
    return Executors.thread_pool(WORKERS).with_poll(poll)


def _make_more(poll: ScenarioPoll) -> Executor:
    more_executors = _harness.more_executors()
    assert more_executors is not None
    executor: Executor = more_executors.Executors.thread_pool(
        max_workers=WORKERS
    ).with_poll(poll)
    return executor


FACTORIES: dict[str, Callable[[ScenarioPoll], Executor]] = {
    "bare": _make_bare,
    "ours": _make_ours,
    "more": _make_more,
}


# The collector's work in each timed run, with the run's seconds, by (contender, N).
Meters = dict[tuple[str, int], list[tuple[float, GcMeter]]]


def run_once(
    contender: str,
    n: int,
    clock: Clock,
    on_all_given: Callable[[], object] = int,
    collect: bool = True,
) -> tuple[float, int]:
    """Run the scenario once; return (seconds from first submit to all done, polls).
    ``gc.collect()`` runs first, if ``collect``."""
    poll = ScenarioPoll(n, on_all_given)
    (elapsed,) = _harness.time_tasks(
        FACTORIES[contender](poll),
        n,
        what=f"{contender} at N={n}",
        clocks=[clock],
        collect=collect,
    )
    return elapsed, poll.polls


def metered_run(
    meters: Meters, clock: Clock
) -> Callable[[str, int], tuple[float, str]]:
    """A run for ``_harness.measure`` that records the collector's work in
    ``meters`` (from the first submit: the ``gc.collect()`` before is not metered;
    the executor's shutdown after the wait is)."""

    def run(contender: str, n: int) -> tuple[float, str]:
        gc.collect()
        with GcMeter() as meter:
            elapsed, polls = run_once(contender, n, clock, collect=False)
        meters.setdefault((contender, n), []).append((elapsed, meter))
        note = f"  {meter.full} full collections  {meter.cpu_seconds:.3f} s in gc"
        return elapsed, note + (f"  {polls} polls" if contender != "bare" else "")

    return run


def _schedule(
    round_: int, sizes: Sequence[int], with_more: bool
) -> list[tuple[str, int]]:
    """The runs of one round: each N with bare and ours (their order alternating
    from round to round), then, in the first round, more-executors at each N up to
    its limit, so that its long runs do not come between ours at the smallest N and
    ours at the largest."""
    pair = _harness.rotated(["bare", "ours"], round_)
    runs = [(contender, n) for n in sizes for contender in pair]
    if with_more and round_ == 0:
        runs += [("more", n) for n in sizes if n <= MORE_EXECUTORS_MAX_N]
    return runs


def measure(
    sizes: Sequence[int], repeat: int, with_more: bool, clock: Clock, meters: Meters
) -> Measurements:
    """Run every (contender, N) in ``repeat`` interleaved rounds; return seconds per
    future."""
    for contender, _ in _schedule(0, [min(sizes[0], WARM_UP_N)], with_more):
        run_once(contender, min(sizes[0], WARM_UP_N), clock)  # first-run costs
    return _harness.measure(
        lambda round_: _schedule(round_, sizes, with_more),
        metered_run(meters, clock),
        repeat,
    )


def measure_million(n: int, repeat: int, clock: Clock, meters: Meters) -> Measurements:
    """Bare and ours at ``n`` in ``repeat`` interleaved rounds; seconds per future."""
    return _harness.measure(
        lambda round_: [(c, n) for c in _harness.rotated(["bare", "ours"], round_)],
        metered_run(meters, clock),
        repeat,
    )


def bytes_per_outstanding(n: int) -> float:
    """Bytes traced per future with ``n`` outstanding, polled by ours (see above)."""
    traced: list[int] = []

    def snapshot() -> None:
        traced.append(tracemalloc.get_traced_memory()[0])
        tracemalloc.stop()  # the rest of the run at full speed

    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    run_once("ours", n, _harness.CLOCKS["cpu"], snapshot)
    if tracemalloc.is_tracing():
        tracemalloc.stop()
    return (traced[0] - before) / n


def collector_row(
    per_future: Measurements, meters: Meters, contender: str, n: int, memory: str
) -> list[str]:
    """A row of the million's table: the best run of ``contender`` at ``n``, and the
    slowest; the best one's collections, its time in the collector and without
    it, per future; then ``memory``, the bytes per future."""
    runs = meters[(contender, n)]
    elapsed, meter = min(runs, key=lambda run: run[0])
    return [
        contender,
        f"{n:,}",
        f"{len(runs)}",
        _harness.format_us(_harness.best(per_future, (contender, n))),
        _harness.format_us(max(per_future[(contender, n)])),
        f"{meter.full}",
        _harness.format_us(meter.cpu_seconds / n),
        _harness.format_us((elapsed - meter.cpu_seconds) / n),
        memory,
    ]


def report(
    out: _harness.Report,
    per_future: Measurements,
    meters: Meters,
    args: argparse.Namespace,
    million: tuple[int, float] | None,
) -> bool:
    """Print and write the tables and the targets; return ``False`` if one failed.

    ``million`` is (N, bytes per outstanding future), if the million was run."""
    sizes: list[int] = args.sizes
    print(_harness.summary(args.repeat, f"clock: {_harness.CLOCK_NAMES[args.clock]}"))
    best, ratio, divide = _harness.best, _harness.ratio, _harness.divide
    rows = [
        [
            f"{n:,}",
            _harness.format_us(best(per_future, ("bare", n))),
            _harness.format_us(best(per_future, ("ours", n))),
            _harness.format_ratio(ratio(per_future, ("ours", n), ("bare", n))),
            _harness.format_us(best(per_future, ("more", n))),
            _harness.format_ratio(ratio(per_future, ("more", n), ("ours", n))),
        ]
        for n in [*sizes, *([million[0]] if million is not None else [])]
    ]
    out.table(
        "poll_scale",
        ["N", "bare us", "ours us", "ours / bare", "more-executors us", "more / ours"],
        rows,
    )
    small, large = (4_000 if 4_000 in sizes else sizes[0]), sizes[-1]
    targets = [
        Target(
            "ours / bare at 8,000",
            ratio(per_future, ("ours", 8_000), ("bare", 8_000)),
            "<=",
            MAX_AT_8_000,
        ),
        Target(
            f"ours / bare at {LARGE:,}",
            ratio(per_future, ("ours", LARGE), ("bare", LARGE)),
            "<=",
            MAX_AT_LARGE,
        ),
        Target(
            f"(ours / bare at {large:,}) / (ours / bare at {small:,})",
            divide(
                ratio(per_future, ("ours", large), ("bare", large)),
                ratio(per_future, ("ours", small), ("bare", small)),
            ),
            "<=",
            1.3,
        ),
        Target(
            "more-executors / ours at 8,000",
            ratio(per_future, ("more", 8_000), ("ours", 8_000)),
            ">=",
            20.0,
        ),
    ]
    if million is not None:
        n, memory = million
        targets.append(
            Target(
                f"ours at {n:,} / ours at {large:,}",
                ratio(per_future, ("ours", n), ("ours", large)),
                "<=",
                1.3,
            )
        )
        out.table(
            "poll_million",
            [
                "Contender",
                "Outstanding futures",
                "runs",
                "CPU us per future",
                "slowest run",
                "full collections",
                "of which in the collector",
                "less the collector",
                "bytes per future (tracemalloc)",
            ],
            [
                collector_row(per_future, meters, "bare", large, "-"),
                collector_row(per_future, meters, "bare", n, "-"),
                collector_row(per_future, meters, "ours", large, "-"),
                collector_row(per_future, meters, "ours", n, f"{memory:,.0f}"),
            ],
        )
        targets.append(
            Target(
                f"bytes per outstanding future at {n:,} (tracemalloc)",
                memory,
                "<=",
                1024,
                "bytes",
                goal=True,
            )
        )
    return out.check(targets)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Cost per future of a poll executor with N remote tasks "
        "outstanding: bare ThreadPoolExecutor(8), fluent-executors, more-executors; "
        "then one million outstanding.",
    )
    _harness.add_options(
        parser,
        default_sizes=[1_000, 4_000, 8_000, 64_000],
        quick_sizes=[1_000, 4_000, 8_000],
    )
    parser.add_argument(
        "--million",
        type=int,
        default=None,
        help="outstanding futures of the last runs, 0 to skip "
        "(default: 1,000,000; with --quick 100,000)",
    )
    parser.add_argument(
        "--million-repeat",
        type=int,
        default=None,
        help="interleaved rounds of bare and ours at the million "
        "(default: 5, as every other figure; with --quick 1)",
    )
    args, with_more = _harness.parse_options(parser, argv)
    if args.million is None:
        args.million = 100_000 if args.quick else 1_000_000
    if args.million_repeat is None:
        args.million_repeat = 1 if args.quick else 5
    if args.million in args.sizes:
        parser.error("--million must differ from every size of --sizes")
    clock = _harness.CLOCKS[args.clock]
    meters: Meters = {}
    per_future = measure(args.sizes, args.repeat, with_more, clock, meters)
    million = None
    if args.million:
        per_future |= measure_million(args.million, args.million_repeat, clock, meters)
        million = (args.million, bytes_per_outstanding(args.million))
    passed = report(
        _harness.Report("poll_scale", args), per_future, meters, args, million
    )
    return _harness.finish(passed, args)


if __name__ == "__main__":
    sys.exit(main())
