"""How the cost per future of a poll executor grows with the futures outstanding.

Run it with ``nox -s bench`` (which also installs more-executors 2.11.4), or directly
with ``python bench/poll_scale.py --help``.

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
    quadratic (about 13 s at N = 8,000 and over 120 s at 16,000), so it is run only
    for N <= 8,000.

The poll function (:class:`ScenarioPoll`, a fresh one per run):

- While it is given fewer than N descriptors (some callables not yet submitted or
  not yet run), it resolves nothing and asks to be called again after
  ``max(1 ms, 1 us x descriptors given)``. Returning 0 here would be a busy loop
  that copies up to N descriptors per poll and takes the GIL from the submitting
  thread and the pool's workers (measured: 100,000 polls and 29x the bare pool at
  8,000); returning ``inf`` would make every arrival wake the poll thread. A delay
  proportional to the size of the poll keeps the poll thread's share of the time
  during submission to about 1% (a poll copies a descriptor in about 5 ns),
  and adds at most 1 us per future (one such delay after the last arrival) to the
  timed figure.
- Once it has been given all N at once, it resolves ``max(1, len // 100)`` of the
  descriptors it is given (1%, the oldest first) with ``yield_result`` on every poll
  and returns 0 ("poll again at once"), until none is left.
- Given an empty list (more-executors polls even with nothing outstanding) it returns
  the waiting delay above.

What is timed, with :func:`time.perf_counter`: from just before the first ``submit``
to the return of ``concurrent.futures.wait`` on all N futures (all done). With
``--clock cpu`` it is instead the CPU time of the process over the same span, all
threads together (:func:`time.process_time`): on a machine shared with other work
it is far less noisy, since time spent descheduled does not count. The
executor is built before and shut down after the timed part; ``gc.collect()`` runs
before each run (the garbage collector stays on: its work during the run is part of
the cost); the results are checked after it. The figure reported is that time
divided by N, in microseconds per future, the median over ``--repeat`` rounds.

One untimed run of each contender at 1,000 comes first, so that none pays for the
first run in the process. Then each round runs every N with the bare pool and ours
one after the other (which goes first alternates from round to round), from the
smallest N to the largest, then more-executors at each N (last, so that its 13 s at
8,000 do not come between ours at 1,000 and ours at 100,000). Noise from other
processes thus hits the runs that are compared alike: each ratio is the median over
the rounds of the ratio of two runs of the same round.

The library's metrics are off (``FLUENT_EXECUTORS_METRICS=0``) unless that variable
is set: with ``prometheus-client`` or ``opentelemetry-api`` installed, as in ``nox -s
bench``, the library would record them, and this benchmark measures the library's
own cost; what metrics add is what ``bench/metrics_overhead.py`` measures.
``FLUENT_EXECUTORS_METRICS=1 python bench/poll_scale.py`` measures with them on.
The first line of the report says which.

Targets (checked unless ``--no-check``; the exit status is 1 if one fails):

1. ours at 100,000 within 1.5x of ours at 1,000 (flat cost per future);
2. ours within 3x of the bare pool at 8,000;
3. more-executors at least 20x slower than ours at 8,000.

A target whose sizes were not run (or more-executors skipped) is reported SKIP.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any

import _harness
from _harness import WORKERS, Clock, Measurements, Target

_harness.measure_without_metrics()  # before fluent_executors is imported

from fluent_executors import Executors  # noqa: E402

MORE_EXECUTORS_MAX_N = 8_000
WARM_UP_N = 1_000  # one untimed run of each contender first, at most this N
WAIT_MIN = 0.001  # seconds: the shortest delay asked for while waiting for all N
WAIT_PER_DESCRIPTOR = 1e-6  # seconds per descriptor given, while waiting for all N


class ScenarioPoll:
    """The poll function of one run: resolves nothing until all ``n`` futures are
    being polled, then 1% of those it is given per poll, at once again and again.

    The same object works for both libraries: it only uses ``len()``, slicing,
    ``descriptor.result`` and ``descriptor.yield_result(value)``.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.releasing = False  # latched once all n were given at once
        self.polls = 0

    def __call__(self, descriptors: list[Any]) -> float:
        self.polls += 1
        given = len(descriptors)
        if not self.releasing and given >= self.n:
            self.releasing = True
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


CLOCKS: dict[str, Clock] = {
    "wall": time.perf_counter,
    "cpu": time.process_time,
}


def run_once(
    contender: str, n: int, clock: Clock = time.perf_counter
) -> tuple[float, int]:
    """Run the scenario once; return (seconds from first submit to all done, polls)."""
    poll = ScenarioPoll(n)
    (elapsed,) = _harness.time_tasks(
        FACTORIES[contender](poll), n, what=f"{contender} at N={n}", clocks=[clock]
    )
    return elapsed, poll.polls


def _schedule(
    round_: int, sizes: Sequence[int], with_more: bool
) -> list[tuple[str, int]]:
    """The runs of one round: each N with bare and ours (their order alternating
    from round to round), then more-executors at each N up to its limit, so that its
    long runs do not come between ours at the smallest N and ours at the largest."""
    pair = ["bare", "ours"] if round_ % 2 == 0 else ["ours", "bare"]
    runs = [(contender, n) for n in sizes for contender in pair]
    if with_more:
        runs += [("more", n) for n in sizes if n <= MORE_EXECUTORS_MAX_N]
    return runs


def measure(
    sizes: Sequence[int],
    repeat: int,
    with_more: bool,
    clock: Clock = time.perf_counter,
) -> Measurements:
    """Run every (contender, N) ``repeat`` times, interleaved; return seconds/future."""
    for contender, _ in _schedule(0, [min(sizes[0], WARM_UP_N)], with_more):
        run_once(contender, min(sizes[0], WARM_UP_N))  # not timed: first-run costs

    def run(contender: str, n: int) -> tuple[float, str]:
        elapsed, polls = run_once(contender, n, clock)
        return elapsed, f"  {polls} polls" if contender != "bare" else ""

    return _harness.measure(
        lambda round_: _schedule(round_, sizes, with_more), run, repeat
    )


def report(
    per_future: Measurements,
    sizes: Sequence[int],
    repeat: int,
    clock_name: str = "wall",
) -> bool:
    """Print the table and the targets; return ``False`` if a target failed."""
    print(_harness.summary(repeat, f"{clock_name} clock"))
    _harness.print_table(per_future, sizes)
    ratio = _harness.paired_ratio
    floor_growth = ratio(per_future, ("bare", 100_000), ("bare", 1_000))
    if floor_growth is not None:
        print(
            f"INFO  bare at 100,000 / bare at 1,000: "
            f"{_harness.format_ratio(floor_growth)} "
            "(the floor's own growth, for reference)"
        )
    return _harness.check_targets(
        [
            Target(
                "ours at 100,000 / ours at 1,000",
                ratio(per_future, ("ours", 100_000), ("ours", 1_000)),
                "<=",
                1.5,
            ),
            Target(
                "ours / bare at 8,000",
                ratio(per_future, ("ours", 8_000), ("bare", 8_000)),
                "<=",
                3.0,
            ),
            Target(
                "more-executors / ours at 8,000",
                ratio(per_future, ("more", 8_000), ("ours", 8_000)),
                ">=",
                20.0,
            ),
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Cost per future of a poll executor with N remote tasks "
        "outstanding: bare ThreadPoolExecutor(8), fluent-executors, more-executors.",
    )
    _harness.add_options(parser, default_sizes=[1_000, 8_000, 100_000])
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall: elapsed time (time.perf_counter); cpu: CPU time of the process, "
        "all threads (time.process_time), less noisy on a busy machine "
        "(default: wall)",
    )
    args, with_more = _harness.parse_options(parser, argv)

    per_future = measure(args.sizes, args.repeat, with_more, CLOCKS[args.clock])
    passed = report(per_future, args.sizes, args.repeat, args.clock)
    return 0 if passed or args.no_check else 1


if __name__ == "__main__":
    sys.exit(main())
