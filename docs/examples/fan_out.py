"""Fan a CPU-bound job out over a Dask cluster, with retries and a timeout.

The job counts the prime numbers below a limit, split into chunks that are counted
independently: once in this process, one chunk after the other, then all at once on
a Dask cluster through::

    Executors.dask().with_retry().with_timeout(...)

where each chunk is a Dask task; a chunk whose worker dies or fails is retried, and
one not done in time is cancelled. A progress bar follows the chunks as they end,
and the speed-up over one process is printed at the end.

Run it (it needs the ``dask`` and ``demo`` extras)::

    python fan_out.py                         # an embedded cluster, one worker per core
    python fan_out.py --workers 4 --limit 5000000
    python fan_out.py --address tcp://scheduler:8786   # a running cluster

With an embedded cluster, the worker processes are started with ``spawn``, which
imports this script again in each of them: hence the ``__main__`` guard at the end.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import time
from collections.abc import Sequence
from concurrent.futures import as_completed
from dataclasses import dataclass

from tqdm import tqdm

from fluent_executors import Executors


def count_primes(start: int, stop: int) -> int:
    """Count the primes ``p`` with ``start <= p < stop``, by trial division:
    slow on purpose, so that there is work to spread."""
    count = 0
    for candidate in range(max(start, 2), stop):
        if candidate % 2 == 0:
            count += candidate == 2
            continue
        root = math.isqrt(candidate)
        if all(candidate % divisor for divisor in range(3, root + 1, 2)):
            count += 1
    return count


def split(limit: int, chunks: int) -> list[tuple[int, int]]:
    """Cut ``[0, limit)`` into ``chunks`` ranges of about the same size."""
    bounds = [limit * n // chunks for n in range(chunks + 1)]
    return list(itertools.pairwise(bounds))


@dataclass(frozen=True)
class Outcome:
    """What a run found, and how long each way took (seconds)."""

    primes: int
    one_process: float
    fanned_out: float
    workers: int

    @property
    def speed_up(self) -> float:
        return self.one_process / self.fanned_out


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Count primes in chunks on a Dask cluster; print the speed-up."
    )
    parser.add_argument("--limit", type=int, default=2_000_000, help="count below")
    parser.add_argument("--chunks", type=int, default=64, help="tasks to fan out")
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes of the embedded cluster",
    )
    parser.add_argument(
        "--address", help="the scheduler of a running cluster (tcp://host:8786)"
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds allowed per chunk"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser.parse_args(argv)


def run(argv: Sequence[str] | None = None) -> Outcome:
    args = parse(argv)
    chunks = split(args.limit, args.chunks)

    started = time.perf_counter()
    expected = sum(count_primes(start, stop) for start, stop in chunks)
    one_process = time.perf_counter() - started

    if args.address:
        dask = Executors.dask(args.address, name="primes")
    else:
        cluster = {"n_workers": args.workers, "threads_per_worker": 1}
        dask = Executors.dask(name="primes", cluster_options=cluster)
    workers = len(dask.client.scheduler_info()["workers"])
    # Outermost first: a timeout for each chunk, its retries included; retries
    # of a chunk that failed (a worker that died, say); Dask, which runs it.
    executor = dask.with_retry(max_attempts=3, sleep=0.5).with_timeout(args.timeout)
    with executor:
        started = time.perf_counter()
        futures = [executor.submit(count_primes, start, stop) for start, stop in chunks]
        primes = 0
        for future in tqdm(
            as_completed(futures),
            total=len(futures),
            unit="chunk",
            desc="counting",
            disable=args.quiet,
        ):
            primes += future.result()
        fanned_out = time.perf_counter() - started

    if primes != expected:
        raise AssertionError(f"Dask counted {primes} primes, one process {expected}")
    return Outcome(primes, one_process, fanned_out, workers)


def main(argv: Sequence[str] | None = None) -> None:
    outcome = run(argv)
    print(
        f"{outcome.primes} primes; one process: {outcome.one_process:.2f} s; "
        f"Dask with {outcome.workers} workers: {outcome.fanned_out:.2f} s; "
        f"speed-up: {outcome.speed_up:.2f}x"
    )


if __name__ == "__main__":
    main()
