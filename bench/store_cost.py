"""The cost of a poll executor's store (durable polling), per task.

Run it with ``python bench/store_cost.py`` (``--postgres CONNINFO`` adds a
PostgreSQL store: ``tests/postgres_server.py`` starts a throwaway server). It is
not yet one of the benchmarks of ``nox -s bench``.

N trivial start calls (``int(i)``, on ``Executors.sync()``) go through a
``PollExecutor`` whose poll function ends each task at its second poll and asks
for the next round after 1 ms; timed from the first submit until every future is
done and the executor shut down (its last removals written), in CPU seconds of
the whole process (:func:`time.process_time`), the best of ``--repeat`` runs. Each
is run without a store, with an :class:`~fluent_executors.SQLiteStore` in a
temporary directory, and with a :class:`~fluent_executors.PostgresStore` if
given one.

Target (issue 37): at 10,000 tasks the SQLite store at most doubles the CPU of
the run without a store.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import wait
from pathlib import Path
from typing import Any

from fluent_executors import Executors, PollDescriptor, PollExecutor
from fluent_executors.stores import PostgresStore, SQLiteStore, Store

TARGET = 2.0  # SQLite store / no store, CPU, at 10,000 tasks


def run(tasks: int, store: Store | None) -> float:
    """CPU seconds of one run of ``tasks`` tasks with ``store``."""
    polls: dict[int, int] = {}

    def poll(descriptors: list[PollDescriptor[int]]) -> float:
        for descriptor in descriptors:
            count = polls[descriptor.result] = polls.get(descriptor.result, 0) + 1
            if count >= 2:
                descriptor.yield_result()
        return 0.001

    start = time.process_time()
    executor = PollExecutor(
        Executors.sync(), poll, default_interval=0.001, store=store, lease=60.0
    )
    wait([executor.submit(int, i) for i in range(tasks)])
    executor.shutdown()
    return time.process_time() - start


def best(tasks: int, open_store: Callable[[], Store | None], repeat: int) -> float:
    """The least CPU of ``repeat`` runs, each with a store of its own."""
    times = []
    for _ in range(repeat):
        store = open_store()
        try:
            times.append(run(tasks, store))
        finally:
            if store is not None:
                store.close()
    return min(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", metavar="CONNINFO")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        stores: dict[str, Callable[[], Any]] = {
            "none": lambda: None,
            "sqlite": lambda: SQLiteStore(Path(directory) / f"{uuid.uuid4().hex}.db"),
        }
        if args.postgres:
            stores["postgres"] = lambda: PostgresStore(
                args.postgres, queue=uuid.uuid4().hex
            )
        ratios: dict[int, float] = {}
        for tasks in args.sizes:
            base = best(tasks, stores["none"], args.repeat)
            for name, open_store in stores.items():
                cpu = base if name == "none" else best(tasks, open_store, args.repeat)
                print(
                    f"{tasks:>8,} tasks  {name:8}  {cpu * 1e6 / tasks:6.1f} us a task"
                    f"  {cpu / base:5.2f}x"
                )
                if name == "sqlite":
                    ratios[tasks] = cpu / base
    if 10_000 in ratios:
        verdict = "PASS" if ratios[10_000] <= TARGET else "FAIL"
        print(
            f"{verdict}  SQLite store / no store at 10,000 tasks: "
            f"{ratios[10_000]:.2f}x (target <= {TARGET:.2f}x)"
        )
        return 0 if verdict == "PASS" else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
