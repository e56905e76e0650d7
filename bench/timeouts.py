"""The cost and the accuracy of timeouts with 100,000 of them pending at once.

Run it with ``python bench/timeouts.py`` (``--help`` for the options). It takes
about half a minute.

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
accuracy scenario, the 99th percentile of the lateness below ``--max-p99``
milliseconds (10 by default).
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

from fluent_executors import TimeoutExecutor
from fluent_executors._scheduler import THREAD_NAME


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


def report(title: str, lateness: list[float]) -> float:
    """Print the percentiles of ``lateness``; return its p99 in milliseconds."""
    ordered = sorted(lateness)
    print(f"{title}: {len(ordered):,} timeouts, lateness in ms")
    for label, fraction in [
        ("p50", 0.5),
        ("p90", 0.9),
        ("p99", 0.99),
        ("p99.9", 0.999),
    ]:
        print(f"  {label:>6}: {percentile(ordered, fraction) * 1e3:8.3f}")
    print(f"  {'max':>6}: {ordered[-1] * 1e3:8.3f}")
    print(f"  {'early':>6}: {sum(1 for x in ordered if x < 0)} (before the deadline)")
    return percentile(ordered, 0.99) * 1e3


def percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000, help="pending timeouts")
    parser.add_argument("--probes", type=int, default=2_000, help="timed timeouts")
    parser.add_argument(
        "--spread", type=float, default=5.0, help="seconds the deadlines span"
    )
    parser.add_argument(
        "--max-p99", type=float, default=10.0, help="target: p99 lateness, in ms"
    )
    parser.add_argument("--no-check", action="store_true", help="do not check")
    args = parser.parse_args()

    bare, with_timeout, delegate = bench_submit(args.n)
    print(f"submit, N = {args.n:,}")
    print(f"  bare delegate submit:   {bare * 1e6:7.2f} us")
    print(f"  TimeoutExecutor.submit: {with_timeout * 1e6:7.2f} us")
    print(f"  cost of the timeout:    {(with_timeout - bare) * 1e6:7.2f} us")

    probes = spread_deadlines(args.probes, 1.0, args.spread)
    report("floor: one thread waiting for each deadline in turn", floor(probes))
    p99_ms = report(f"accuracy with {args.n:,} more pending", expire(probes))

    done = bench_done_in_time(delegate)
    print(f"done in time: {done * 1e6:.2f} us per future (resolve, drop the timer)")
    del delegate

    # Leave time to submit them all before the first deadline.
    start = 1.0 + 2 * with_timeout * args.n
    report("mass expiry", expire(spread_deadlines(args.n, start, args.spread)))

    if args.no_check:
        return 0
    verdict = "PASS" if p99_ms <= args.max_p99 else "FAIL"
    print(f"target: accuracy p99 <= {args.max_p99} ms: {verdict} ({p99_ms:.3f} ms)")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
