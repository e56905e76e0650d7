"""How the cost of f_sequence, f_zip, f_and and f_or grows with the number of inputs.

For each combinator: combine N pending futures, resolve them in reverse order (the
worst case for a combinator that scans its inputs), and wait for the output. What is
timed is the CPU time of this process (``time.process_time``), so that other
processes on a shared machine do not count; the best of ``--repeat`` runs is kept.

Target: linear cost, checked as time(N) / time(N / 10) below 20 (10 is linear,
100 would be quadratic).

    python bench/combinators.py [--size 100000] [--repeat 3] [--no-check]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from fluent_executors import f_and, f_or, f_sequence, f_zip

# Each combinator, and the value of its inputs that makes it wait for all of them.
COMBINERS: dict[str, tuple[Callable[[list[Future[int]]], Future[Any]], int]] = {
    "f_sequence": (f_sequence, 1),
    "f_zip": (lambda inputs: f_zip(*inputs), 1),
    "f_and": (lambda inputs: f_and(*inputs), 1),
    "f_or": (lambda inputs: f_or(*inputs), 0),
}
MAX_RATIO = 20.0


def cpu_seconds(name: str, count: int) -> float:
    """CPU seconds to combine ``count`` pending futures and resolve them in reverse."""
    combine, value = COMBINERS[name]
    inputs: list[Future[int]] = [Future() for _ in range(count)]
    start = time.process_time()
    combined = combine(inputs)
    for future in reversed(inputs):
        future.set_result(value)
    combined.result(timeout=60)
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-check", action="store_true", help="always exit 0")
    args = parser.parse_args(argv)

    small_size = args.size // 10
    print(f"{'combinator':<12}{small_size:>12,}{args.size:>12,}  ratio  (us/input)")
    failed = False
    for name in COMBINERS:
        small = min(cpu_seconds(name, small_size) for _ in range(args.repeat))
        large = min(cpu_seconds(name, args.size) for _ in range(args.repeat))
        ratio = large / small
        verdict = "PASS" if ratio < MAX_RATIO else "FAIL"
        failed |= verdict == "FAIL"
        per_small = small / small_size * 1e6
        per_large = large / args.size * 1e6
        print(f"{name:<12}{per_small:>12.2f}{per_large:>12.2f}  {ratio:5.1f} {verdict}")
    return 1 if failed and not args.no_check else 0


if __name__ == "__main__":
    sys.exit(main())
