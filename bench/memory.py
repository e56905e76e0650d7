"""Objects and bytes per outstanding future, and what ``gc.freeze()`` does with
100,000 futures outstanding.

Run it with ``nox -s bench``, or directly with ``python bench/memory.py --help``. It
takes about a minute.

**Per future.** For each kind of executor, N futures (``--n``, 20,000) are made
outstanding: for a thread pool and the layers on it, 8 callables block its 8
workers and N more wait in its queue; for a poll executor, the N callables have run
and the poll function has been given all N futures at once, and resolves none yet.
Then, against a baseline taken just before the first submit:

- the objects the garbage collector tracks (``len(gc.get_objects())``), per future;
- the bytes allocated and still held (:mod:`tracemalloc`, tracing from the
  baseline), per future.

Both include the benchmark's own list of the N futures (8 bytes, no object, per
future); the callables' arguments are made before the baseline. more-executors'
poll executor is measured with at most 4,000 futures: its bookkeeping is quadratic,
and releasing 20,000 at once takes minutes.

**gc.freeze().** The chain of ``_harness.our_chain`` runs N trivial callables (``--n
-freeze``, 100,000; timed like ``bench/layers.py``: CPU time, best of ``--repeat``
rounds) in three situations: nothing else outstanding; N futures outstanding (a
``thread_pool(1).with_timeout(3600)`` whose one worker is blocked, so that its N
futures and their deadlines stay alive: long-lived objects that every full
collection walks); and the same after ``gc.freeze()`` (which moves every object
alive to a generation the collector never walks; undone by ``gc.unfreeze()`` after
the run). The collections of the oldest generation and the time spent in the
collector (``gc.callbacks``, wall time, the shutdown of the chain included) are
reported beside. No target.
"""

from __future__ import annotations

import argparse
import gc
import sys
import threading
import tracemalloc
from collections.abc import Sequence
from concurrent.futures import Executor, Future, wait
from typing import Any

import _harness
from _harness import TIMEOUT, WORKERS, GcMeter, increment

_harness.measure_without_metrics()  # before fluent_executors is imported

from fluent_executors import Executors  # noqa: E402

MORE_POLL_MAX_N = 4_000  # more-executors' poll bookkeeping is quadratic
KINDS = (
    "bare",
    "pool",
    "map",
    "retry",
    "timeout",
    "chain",
    "poll",
    "more-pool",
    "more-chain",
    "more-poll",
)


class HeldPoll:
    """A poll function that resolves nothing until ``release`` is set, and sets
    ``all_given`` once it is given ``n`` descriptors."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.all_given = threading.Event()
        self.release = threading.Event()

    def __call__(self, descriptors: list[Any]) -> float:
        if len(descriptors) >= self.n:
            self.all_given.set()
        if not self.release.is_set():
            return 0.01
        for descriptor in descriptors:
            descriptor.yield_result(descriptor.result)
        return 0.01


def make(kind: str, poll: HeldPoll) -> Executor:
    """A new executor of ``kind`` (its poll function ``poll``, if it polls)."""
    if kind == "bare":
        return _harness.bare_pool()
    if kind.startswith("more-"):
        more_executors = _harness.more_executors()
        assert more_executors is not None
        pool: Any = more_executors.Executors.thread_pool(max_workers=WORKERS)
    else:
        pool = Executors.thread_pool(WORKERS)
    layer = kind.removeprefix("more-")
    if layer == "map":
        return pool.with_map(increment)  # type: ignore[no-any-return]
    if layer == "retry":
        return pool.with_retry()  # type: ignore[no-any-return]
    if layer == "timeout":
        return pool.with_timeout(TIMEOUT)  # type: ignore[no-any-return]
    if layer == "chain":
        return pool.with_map(increment).with_retry().with_timeout(TIMEOUT)  # type: ignore[no-any-return]
    if layer == "poll":
        return pool.with_poll(poll)  # type: ignore[no-any-return]
    return pool  # type: ignore[no-any-return]


def per_future(kind: str, n: int) -> tuple[float, float]:
    """Objects tracked by the collector and bytes held, per outstanding future."""
    poll = HeldPoll(n)
    executor = make(kind, poll)
    unblock = threading.Event()
    polls = kind.endswith("poll")
    blockers = [] if polls else [executor.submit(unblock.wait) for _ in range(WORKERS)]
    ids = list(range(n))
    gc.collect()
    tracemalloc.start()
    objects = len(gc.get_objects())
    memory = tracemalloc.get_traced_memory()[0]
    futures: list[Future[Any]] = [executor.submit(_harness.task, i) for i in ids]
    if polls and not poll.all_given.wait(timeout=600):
        raise AssertionError(f"{kind}: the poll function was never given all")
    memory = tracemalloc.get_traced_memory()[0] - memory
    tracemalloc.stop()
    gc.collect()
    objects = len(gc.get_objects()) - objects
    unblock.set()
    poll.release.set()
    wait([*futures, *blockers])
    executor.shutdown(wait=True)
    return objects / n, memory / n


def chain_run(n: int, clock: str, freeze: bool) -> tuple[float, GcMeter]:
    """CPU seconds of the chain over N callables, and the collector's work."""
    gc.collect()
    if freeze:
        gc.freeze()
    try:
        with GcMeter() as meter:
            (seconds,) = _harness.time_tasks(
                _harness.our_chain(),
                n,
                what="chain",
                offset=1,
                clocks=[_harness.CLOCKS[clock]],
                collect=False,  # collected above, before the freeze
            )
    finally:
        if freeze:
            gc.unfreeze()
    return seconds, meter


def measure_freeze(
    n: int, repeat: int, clock: str
) -> dict[str, list[tuple[float, GcMeter]]]:
    """The chain's runs in each situation (see above)."""
    runs: dict[str, list[tuple[float, GcMeter]]] = {
        "alone": [],
        "outstanding": [],
        "frozen": [],
    }
    chain_run(1_000, clock, False)  # not timed: first-run costs
    for _ in range(repeat):
        runs["alone"].append(chain_run(n, clock, False))
    unblock = threading.Event()
    held = Executors.thread_pool(1).with_timeout(3600.0)
    blocker = held.submit(unblock.wait)
    outstanding: list[Future[Any]] = [held.submit(_harness.task, i) for i in range(n)]
    try:
        for round_ in range(repeat):
            for situation in _harness.rotated(["outstanding", "frozen"], round_):
                runs[situation].append(
                    chain_run(n, clock, freeze=situation == "frozen")
                )
                seconds, meter = runs[situation][-1]
                print(
                    f"  round {round_ + 1}/{repeat}  {situation:<11}  "
                    f"{seconds / n * 1e6:7.2f} us/future  {meter.full} full "
                    f"collections  {meter.seconds:.3f} s in gc",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        unblock.set()
        wait([blocker, *outstanding])
        held.shutdown(wait=True)
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _harness.add_options(parser)
    parser.add_argument("--n", type=int, default=None, help="default: 20,000")
    parser.add_argument("--n-freeze", type=int, default=None, help="default: 100,000")
    args, with_more = _harness.parse_options(parser, argv)
    n = args.n or (2_000 if args.quick else 20_000)
    n_freeze = args.n_freeze or (10_000 if args.quick else 100_000)
    kinds = [k for k in KINDS if with_more or not k.startswith("more-")]
    figures: dict[str, tuple[float, float]] = {}
    for kind in kinds:
        figures[kind] = per_future(
            kind, min(n, MORE_POLL_MAX_N) if kind == "more-poll" else n
        )
        print(
            f"  {kind:<12} {figures[kind][0]:6.2f} objects  "
            f"{figures[kind][1]:8.0f} bytes per future",
            file=sys.stderr,
            flush=True,
        )
    freeze = measure_freeze(n_freeze, args.repeat, args.clock)

    print(_harness.summary(args.repeat, f"clock: {_harness.CLOCK_NAMES[args.clock]}"))
    out = _harness.Report("memory", args)
    names: dict[str, str] = {
        "bare": "bare ``ThreadPoolExecutor(8)``",
        "pool": "``thread_pool(8)``",
        "map": "``thread_pool(8).with_map(f)``",
        "retry": "``thread_pool(8).with_retry()``",
        "timeout": "``thread_pool(8).with_timeout(60)``",
        "chain": "``thread_pool(8).with_map(f).with_retry().with_timeout(60)``",
        "poll": "``thread_pool(8).with_poll(fn)``, being polled",
    }
    names.update(
        {f"more-{k}": f"more-executors: {names[k]}" for k in ("pool", "chain", "poll")}
    )
    names["more-poll"] += f" (of {min(n, MORE_POLL_MAX_N):,})"
    out.table(
        "memory",
        ["Executor", "objects per future (gc)", "bytes per future (tracemalloc)"],
        [
            [names[kind], f"{objects:.2f}", f"{memory:,.0f}"]
            for kind, (objects, memory) in figures.items()
        ],
    )
    situations = {
        "alone": "nothing else outstanding",
        "outstanding": f"{n_freeze:,} futures outstanding",
        "frozen": f"{n_freeze:,} futures outstanding, after ``gc.freeze()``",
    }

    def best_run(runs: list[tuple[float, GcMeter]]) -> tuple[float, GcMeter]:
        return min(runs, key=lambda run: run[0])

    out.table(
        "gc_freeze",
        [
            "Chain over " + f"{n_freeze:,} callables",
            "us per future",
            "full collections",
            "s in gc (wall)",
        ],
        [
            [
                situations[name],
                _harness.format_us(best_run(runs)[0] / n_freeze),
                best_run(runs)[1].full,
                f"{best_run(runs)[1].seconds:.3f}",
            ]
            for name, runs in freeze.items()
        ],
    )
    return _harness.finish(out.check([]), args)


if __name__ == "__main__":
    sys.exit(main())
