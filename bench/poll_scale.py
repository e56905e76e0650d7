"""How the cost per future of a poll executor grows with the futures outstanding.

Run it with ``nox -s bench`` (which also installs more-executors 2.11.4), or directly
with ``python bench/poll_scale.py --help``.

The scenario is the one that matters to users of a poll executor: many remote tasks
outstanding at once. Each of N trivial callables (``_task(i)`` returns ``i``, the
"task id") is submitted; no remote task finishes until every one of the N futures is
being polled; then they finish a few at a time.

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

Targets (checked unless ``--no-check``; the exit status is 1 if one fails):

1. ours at 100,000 within 1.5x of ours at 1,000 (flat cost per future);
2. ours within 3x of the bare pool at 8,000;
3. more-executors at least 20x slower than ours at 8,000.

A target whose sizes were not run (or more-executors skipped) is reported SKIP.
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
from typing import Any

from fluent_executors import Executors

try:
    import more_executors
except ImportError:  # the comparison is optional outside ``nox -s bench``
    more_executors = None

WORKERS = 8
MORE_EXECUTORS_MAX_N = 8_000
WARM_UP_N = 1_000  # one untimed run of each contender first, at most this N
WAIT_MIN = 0.001  # seconds: the shortest delay asked for while waiting for all N
WAIT_PER_DESCRIPTOR = 1e-6  # seconds per descriptor given, while waiting for all N


def _task(i: int) -> int:
    """The trivial callable: "starts remote task ``i``" and returns its id."""
    return i


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
    return concurrent.futures.ThreadPoolExecutor(WORKERS)


def _make_ours(poll: ScenarioPoll) -> Executor:
    return Executors.thread_pool(WORKERS).with_poll(poll)


def _make_more(poll: ScenarioPoll) -> Executor:
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


CLOCKS: dict[str, Callable[[], float]] = {
    "wall": time.perf_counter,
    "cpu": time.process_time,
}


def run_once(
    contender: str, n: int, clock: Callable[[], float] = time.perf_counter
) -> tuple[float, int]:
    """Run the scenario once; return (seconds from first submit to all done, polls)."""
    poll = ScenarioPoll(n)
    executor = FACTORIES[contender](poll)
    gc.collect()
    try:
        start = clock()
        futures: list[Future[int]] = [executor.submit(_task, i) for i in range(n)]
        _, not_done = concurrent.futures.wait(futures)
        elapsed = clock() - start
    finally:
        executor.shutdown(wait=True)
    if not_done or any(f.result() != i for i, f in enumerate(futures)):
        raise AssertionError(f"{contender} at N={n}: a future is pending or wrong")
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
    clock: Callable[[], float] = time.perf_counter,
) -> dict[tuple[str, int], list[float]]:
    """Run every (contender, N) ``repeat`` times, interleaved; return seconds/future."""
    per_future: dict[tuple[str, int], list[float]] = {}
    for contender, _ in _schedule(0, [min(sizes[0], WARM_UP_N)], with_more):
        run_once(contender, min(sizes[0], WARM_UP_N))  # not timed: first-run costs
    for round_ in range(repeat):
        for contender, n in _schedule(round_, sizes, with_more):
            elapsed, polls = run_once(contender, n, clock)
            per_future.setdefault((contender, n), []).append(elapsed / n)
            print(
                f"  round {round_ + 1}/{repeat}  N={n:>7,}  {contender:<4}  "
                f"{elapsed:8.3f} s  {elapsed / n * 1e6:8.2f} us/future"
                + (f"  {polls} polls" if contender != "bare" else ""),
                file=sys.stderr,
                flush=True,
            )
    return per_future


def paired_ratio(
    per_future: dict[tuple[str, int], list[float]],
    top: tuple[str, int],
    bottom: tuple[str, int],
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


def report(
    per_future: dict[tuple[str, int], list[float]],
    sizes: Sequence[int],
    repeat: int,
    clock_name: str = "wall",
) -> list[tuple[str, float | None, str, bool | None]]:
    """Print the table and the targets; return (target, ratio, bound, passed)."""
    more_version = (
        importlib.metadata.version("more-executors") if more_executors else "absent"
    )
    print(
        f"Python {platform.python_version()} on {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} CPUs; fluent-executors "
        f"{importlib.metadata.version('fluent-executors')}, more-executors "
        f"{more_version}; median of {repeat} rounds; {clock_name} clock"
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
    floor_growth = paired_ratio(per_future, ("bare", 100_000), ("bare", 1_000))
    if floor_growth is not None:
        print(
            f"INFO  bare at 100,000 / bare at 1,000: {_x(floor_growth)} "
            "(the floor's own growth, for reference)"
        )
    targets = [
        (
            "ours at 100,000 / ours at 1,000",
            paired_ratio(per_future, ("ours", 100_000), ("ours", 1_000)),
            "<= 1.5",
            lambda r: r <= 1.5,
        ),
        (
            "ours / bare at 8,000",
            paired_ratio(per_future, ("ours", 8_000), ("bare", 8_000)),
            "<= 3",
            lambda r: r <= 3.0,
        ),
        (
            "more-executors / ours at 8,000",
            paired_ratio(per_future, ("more", 8_000), ("ours", 8_000)),
            ">= 20",
            lambda r: r >= 20.0,
        ),
    ]
    results: list[tuple[str, float | None, str, bool | None]] = []
    for name, ratio, bound, check in targets:
        passed = None if ratio is None else check(ratio)
        verdict = {None: "SKIP", True: "PASS", False: "FAIL"}[passed]
        print(f"{verdict}  {name}: {_x(ratio)} (target {bound})")
        results.append((name, ratio, bound, passed))
    return results


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
        description="Cost per future of a poll executor with N remote tasks "
        "outstanding: bare ThreadPoolExecutor(8), fluent-executors, more-executors.",
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=[1_000, 8_000, 100_000],
        help="comma-separated N (default: 1000,8000,100000)",
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
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall: elapsed time (time.perf_counter); cpu: CPU time of the process, "
        "all threads (time.process_time), less noisy on a busy machine "
        "(default: wall)",
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

    per_future = measure(args.sizes, args.repeat, with_more, CLOCKS[args.clock])
    results = report(per_future, args.sizes, args.repeat, args.clock)
    failed = any(passed is False for _, _, _, passed in results)
    return 1 if failed and not args.no_check else 0


if __name__ == "__main__":
    sys.exit(main())
