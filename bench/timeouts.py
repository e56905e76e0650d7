"""The cost and the accuracy of timeouts with 100,000 of them pending at once.

Run it with ``nox -s bench``, or directly with ``python bench/timeouts.py``
(``--help`` for the options). It takes about half a minute (``--quick``: 20,000
pending, a few seconds).

The delegate is :class:`NeverExecutor`, whose ``submit`` returns a pending future
that nothing resolves, so that every timeout stays pending until it fires (or the
benchmark resolves the future) and only the timeout machinery is measured. The
scenarios, in this order:

``submit``
    Time ``TimeoutExecutor.submit`` for N (``--n``) futures with a one-hour timeout,
    minus the time of N bare ``NeverExecutor.submit`` calls: the cost that a timeout
    adds to a submit (a proxy future, a heap entry, a done callback). The N
    timeouts stay pending for the next scenario.
``floor``
    One plain thread waits for each of ``--probes`` deadlines in turn with
    ``threading.Event.wait``, with the N timeouts pending but none due: the
    lateness that the interpreter and the machine's load allow at best.
``accuracy``
    With those N timeouts pending, submit ``--probes`` more whose timeouts are
    spread uniformly over ``--spread`` seconds, starting 1 s after submit, and record
    when each is cancelled (in a done callback, which runs in a worker thread of the
    scheduler right after the cancel). The lateness of a future is that time minus
    its deadline (its submit time plus its timeout; a deadline that passed while
    the loop was still submitting counts from the future's submit).
``done in time``
    Resolve the N delegate futures: the cost per future of resolving it and dropping
    its timer (the common case: work done in time). The scheduler thread must end
    once the last timer is dropped.
``mass expiry``
    Submit N futures whose deadlines are spread uniformly over ``--spread`` seconds,
    starting once all are submitted (as estimated from the submit cost measured
    above), and let them all expire: the lateness when the scheduler and its
    workers cancel N/spread futures a second.

Target (checked unless ``--no-check``; the exit status is 1 if it fails): in the
accuracy scenario, the 99th percentile of the lateness at most ``--max-p99``
milliseconds (10 by default). Lateness is wall time (``time.monotonic``); the costs
are wall time too, with metrics off (no metric package importable).
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

import _harness
from _harness import Target

_harness.measure_without_metrics()  # before fluent_executors is imported

from _fluent_executors.scheduler import THREAD_NAME  # noqa: E402
from fluent_executors import TimeoutExecutor  # noqa: E402


class NeverExecutor(Executor):
    """An executor whose futures stay pending (and cancellable) until resolved."""

    def __init__(self) -> None:
        self.futures: list[Future[Any]] = []

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> Future[Any]:
        future: Future[Any] = Future()
        self.futures.append(future)
        return future


def bench_submit(n: int) -> tuple[float, float, NeverExecutor]:
    """Return the seconds per bare submit and per timeout submit, and the delegate
    holding the N pending futures of the latter."""
    bare = NeverExecutor()
    gc.collect()
    start = time.perf_counter()
    for _ in range(n):
        bare.submit(int)
    bare_time = (time.perf_counter() - start) / n

    delegate = NeverExecutor()
    executor = TimeoutExecutor(delegate, 3600.0)
    gc.collect()
    start = time.perf_counter()
    for _ in range(n):
        executor.submit(int)
    timeout_time = (time.perf_counter() - start) / n
    return bare_time, timeout_time, delegate


def bench_done_in_time(delegate: NeverExecutor) -> float:
    """Resolve every pending future; return the seconds per future."""
    gc.collect()
    start = time.perf_counter()
    for future in delegate.futures:
        future.set_result(None)
    elapsed = (time.perf_counter() - start) / len(delegate.futures)
    for thread in threading.enumerate():
        if thread.name == THREAD_NAME:
            thread.join(timeout=10.0)
            if thread.is_alive():
                sys.exit("the scheduler thread did not end once idle")
    return elapsed


def expire(offsets: list[float]) -> list[float]:
    """Submit one future per offset, due that many seconds after the first submit
    (all far enough ahead to submit them all before), and wait for them to be
    cancelled; return the lateness of each in seconds, in no order."""
    executor = TimeoutExecutor(NeverExecutor(), 3600.0)
    lateness: list[float] = []
    all_done = threading.Event()
    lock = threading.Lock()

    def record(deadline: float) -> Callable[[Future[Any]], None]:
        def on_done(future: Future[Any]) -> None:
            now = time.monotonic()
            with lock:
                lateness.append(now - deadline)
                if len(lateness) == len(offsets):
                    all_done.set()

        return on_done

    gc.collect()
    base = time.monotonic()
    for offset in offsets:
        # On a loaded machine the submits can run past the earliest deadlines, and
        # submit_timeout rejects a negative timeout (ValueError). A deadline passed
        # already is due at once; its lateness counts from its submit, so that
        # what is measured stays the scheduler's, not the submitting loop's.
        now = time.monotonic()
        timeout = max(base + offset - now, 0.0)
        future = executor.submit_timeout(timeout, int)
        future.add_done_callback(record(now + timeout))
    if not all_done.wait(timeout=base + max(offsets) - time.monotonic() + 60.0):
        sys.exit("some timeouts never fired")
    return lateness


def floor(offsets: list[float]) -> list[float]:
    """The lateness of one plain thread waking up at each deadline in turn, with
    ``Event.wait``: what the interpreter and the machine allow at best."""
    lateness: list[float] = []
    never = threading.Event()
    base = time.monotonic()
    for deadline in sorted(base + offset for offset in offsets):
        never.wait(max(deadline - time.monotonic(), 0.0))
        lateness.append(time.monotonic() - deadline)
    return lateness


def spread_deadlines(count: int, start: float, spread: float) -> list[float]:
    rng = random.Random(count)
    return [start + rng.random() * spread for _ in range(count)]


PERCENTILES = {"p50": 0.5, "p99": 0.99, "max": 1.0}


def report(title: str, lateness: list[float]) -> dict[str, float]:
    """Print the percentiles of ``lateness``; return them in milliseconds."""
    ordered = sorted(lateness)
    figures = {
        label: percentile(ordered, fraction) * 1e3
        for label, fraction in PERCENTILES.items()
    }
    early = sum(1 for x in ordered if x < 0)
    print(
        f"{title}: {len(ordered):,} timeouts, lateness in ms: "
        + ", ".join(f"{label} {value:.3f}" for label, value in figures.items())
        + f"; {early} before the deadline"
    )
    return figures


def percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    _harness.add_options(parser)
    parser.add_argument(
        "--n", type=int, default=None, help="pending timeouts (default: 100,000)"
    )
    parser.add_argument("--probes", type=int, default=2_000, help="timed timeouts")
    parser.add_argument(
        "--spread", type=float, default=5.0, help="seconds the deadlines span"
    )
    parser.add_argument(
        "--max-p99", type=float, default=10.0, help="target: p99 lateness, in ms"
    )
    args, _ = _harness.parse_options(parser, argv)
    n = args.n or (20_000 if args.quick else 100_000)

    bare, with_timeout, delegate = bench_submit(n)
    print(
        f"submit, N = {n:,}: bare {bare * 1e6:.2f} us, with a timeout "
        f"{with_timeout * 1e6:.2f} us"
    )
    probes = spread_deadlines(args.probes, 1.0, args.spread)
    floor_ms = report(
        "floor: one thread waiting for each deadline in turn", floor(probes)
    )
    accuracy_ms = report(f"accuracy with {n:,} more pending", expire(probes))
    done = bench_done_in_time(delegate)
    print(f"done in time: {done * 1e6:.2f} us per future (resolve, drop the timer)")
    del delegate
    # Leave time to submit them all before the first deadline.
    start = 1.0 + 2 * with_timeout * n
    mass_ms = report("mass expiry", expire(spread_deadlines(n, start, args.spread)))

    out = _harness.Report("timeouts", args)
    out.table(
        "timeouts_cost",
        ["Measure", "us per future"],
        [
            [f"``TimeoutExecutor.submit``, {n:,} pending", f"{with_timeout * 1e6:.2f}"],
            ["the delegate's ``submit`` alone", f"{bare * 1e6:.2f}"],
            ["a future done in time (resolve, drop the timer)", f"{done * 1e6:.2f}"],
        ],
    )
    out.table(
        "timeouts_lateness",
        ["Lateness, ms", *PERCENTILES],
        [
            [
                f"{args.probes:,} timeouts over {args.spread:g} s, {n:,} pending",
                *(f"{v:.2f}" for v in accuracy_ms.values()),
            ],
            [
                "a plain thread waking at the same deadlines (the floor)",
                *(f"{v:.2f}" for v in floor_ms.values()),
            ],
            [
                f"all {n:,} expiring within {args.spread:g} s",
                *(f"{v:.2f}" for v in mass_ms.values()),
            ],
        ],
    )
    passed = out.check(
        [
            Target(
                f"timeout lateness p99, {n:,} pending",
                accuracy_ms["p99"],
                "<=",
                args.max_p99,
                "ms",
            )
        ]
    )
    return _harness.finish(passed, args)


if __name__ == "__main__":
    sys.exit(main())
