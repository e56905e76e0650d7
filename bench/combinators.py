"""How the cost of f_sequence, f_zip, f_and and f_or grows with the number of inputs,
beside ``concurrent.futures.wait`` and more-executors 2.11.4's combinators.

Run it with ``nox -s bench``, or directly with ``python bench/combinators.py
--help``. It takes about half a minute.

For each combinator: combine N pending futures, resolve them in reverse order (the
worst case for a combinator that scans its inputs), and wait for the output. For
``wait``: a thread calls ``concurrent.futures.wait`` on the N futures (all of them
must complete); once it waits on all, they are resolved in reverse order and the
thread is joined. What is timed is the CPU time of this process
(``time.process_time``, ``--clock``), from the combining (or the start of the
thread) to the output; the best of ``--repeat`` interleaved rounds is kept. The
combinators of more-executors (``more_executors.futures``) are run the same way if
it is installed.

Target (checked unless ``--no-check``; the exit status is 1 if one fails): linear
cost, checked as time(N) / time(N / 10) below 20 for each of ours (10 is linear,
100 would be quadratic; for other sizes, below twice their ratio).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ALL_COMPLETED, Future, wait
from typing import Any

import _harness
from _harness import Measurements, Target

_harness.measure_without_metrics()  # before fluent_executors is imported

import fluent_executors  # noqa: E402

Combine = Callable[[list["Future[int]"]], "Future[Any]"]
NAMES = ("f_sequence", "f_zip", "f_and", "f_or")
VALUES = {"f_sequence": 1, "f_zip": 1, "f_and": 1, "f_or": 0}  # so all are awaited
MAX_GROWTH = 2.0  # time(N) / time(M) below 2 N / M: linear, not quadratic


def combiner(module: Any, name: str) -> Combine:
    """The combinator ``name`` of ``module``, taking a list of futures."""
    function = getattr(module, name)
    if name == "f_sequence":
        return function  # type: ignore[no-any-return]
    return lambda inputs: function(*inputs)


def seconds_combine(combine: Combine, value: int, count: int, clock: str) -> float:
    """Seconds to combine ``count`` pending futures and resolve them in reverse."""
    inputs: list[Future[int]] = [Future() for _ in range(count)]
    read = _harness.CLOCKS[clock]
    start = read()
    combined = combine(inputs)
    for future in reversed(inputs):
        future.set_result(value)
    combined.result(timeout=60)
    return read() - start


def seconds_wait(count: int, clock: str) -> float:
    """Seconds for a thread to wait on ``count`` futures resolved in reverse."""
    inputs: list[Future[int]] = [Future() for _ in range(count)]
    read = _harness.CLOCKS[clock]
    start = read()
    waiter = threading.Thread(target=wait, args=(inputs, None, ALL_COMPLETED))
    waiter.start()
    # wait() adds its waiter to every future at once, under all their locks: once
    # the first has it, all have.
    while not inputs[0]._waiters:
        time.sleep(0.0001)
    for future in reversed(inputs):
        future.set_result(1)
    waiter.join()
    return read() - start


def measure(
    sizes: Sequence[int], repeat: int, with_more: bool, clock: str
) -> Measurements:
    contenders = [*NAMES, "wait"]
    if with_more:
        contenders += [f"more-{name}" for name in NAMES]
    more = _harness.more_executors()

    def run(contender: str, n: int) -> tuple[float, str]:
        if contender == "wait":
            return seconds_wait(n, clock), ""
        name = contender.removeprefix("more-")
        module = fluent_executors if name == contender else more.futures  # type: ignore[union-attr]
        return seconds_combine(combiner(module, name), VALUES[name], n, clock), ""

    return _harness.measure(
        lambda round_: [
            (c, n) for n in sizes for c in _harness.rotated(contenders, round_)
        ],
        run,
        repeat,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _harness.add_options(
        parser, default_sizes=[10_000, 100_000], quick_sizes=[1_000, 10_000]
    )
    args, with_more = _harness.parse_options(parser, argv)
    sizes = args.sizes
    per_future = measure(sizes, args.repeat, with_more, args.clock)
    print(_harness.summary(args.repeat, f"clock: {_harness.CLOCK_NAMES[args.clock]}"))
    out = _harness.Report("combinators", args)
    best, ratio = _harness.best, _harness.ratio
    small, large = sizes[0], sizes[-1]
    rows = [
        [
            f":func:`{name}`",
            *(_harness.format_us(best(per_future, (name, n))) for n in sizes),
            _harness.format_us(best(per_future, (f"more-{name}", large))),
        ]
        for name in NAMES
    ]
    rows.append(
        [
            "``concurrent.futures.wait``",
            *(_harness.format_us(best(per_future, ("wait", n))) for n in sizes),
            "-",
        ]
    )
    out.table(
        "combinators",
        [
            "Combinator",
            *(f"us per input at {n:,}" for n in sizes),
            f"more-executors at {large:,}",
        ],
        rows,
    )
    passed = out.check(
        Target(
            f"{name}: time at {large:,} / time at {small:,}",
            _harness.divide(
                ratio(per_future, (name, large), (name, small)), small / large
            ),
            "<",
            MAX_GROWTH * large / small,
        )
        for name in NAMES
    )
    return _harness.finish(passed, args)


if __name__ == "__main__":
    sys.exit(main())
