"""The cost of a poll executor's store (durable polling): CPU per task, and the
store's statements per poll round.

Run it with ``nox -s bench``, or directly with ``python bench/store_cost.py
--help``. Clock: CPU time of this process, all threads (:func:`time.process_time`),
the best of ``--repeat`` interleaved rounds; the database server's own CPU is not
counted (SQLite runs in this process; PostgreSQL does not).

N trivial start calls (``int(i)``, on ``Executors.sync()``) go through a
``PollExecutor`` whose poll function resolves nothing until it has been given the
last task submitted (so that about N tasks are outstanding, each written to the
store before its first poll), then resolves every task it is given; until then
it asks for the next round after 1 us per task (at least 1 ms). A run is timed
from the first submit until every future is done and the executor shut down
(its last removals written). Each N runs without a store, with an
:class:`~fluent_executors.SQLiteStore` in a temporary directory (WAL,
``synchronous=FULL``), and with a :class:`~fluent_executors.PostgresStore`: on
``--postgres CONNINFO``, or else on a throwaway server that
``tests/postgres_server.py`` starts from the machine's PostgreSQL binaries
(``fsync=off``); where there are none (or no psycopg), its rows say why they
were skipped.

**Statements per round.** One more run of each store at each N counts the SQL
statements the store sends (SQLite: its trace callback; PostgreSQL: each
``execute`` of its connection; ``BEGIN``/``COMMIT`` left out) between one poll
round and the next, with a lease of 6 s (1.5 s with ``--quick``), renewed every
third of it, and the tasks held for as long once all are outstanding (every
0.1 s a round), so that renewals of N leases are among them. A sync of the
store before a round is at most three statements (one ``add`` of every start
result since the last sync, one ``remove`` of every future done since, one
``renew`` of every lease), whatever the number of tasks. While the tasks arrive,
each arrival after a sync wakes the poll thread to write it at once (the crash
window), so there may be more syncs than rounds: their number follows the time
the arrivals take, not their number. Once every task is outstanding, a round's
traffic is that of one sync.

Target 1: at 10,000 tasks the SQLite store adds at most 1x the CPU of the run
without a store (SQLite / none <= 2x).

Target 2: for each store, at the largest N, the most statements between two
rounds once every task is outstanding (the renewals, the removal of them all)
is at most 3.
"""

from __future__ import annotations

import argparse
import importlib
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import wait
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import _harness
from _harness import Measurements, Target

_harness.measure_without_metrics()  # before fluent_executors is imported

from fluent_executors import Executors, PollDescriptor, PollExecutor  # noqa: E402
from fluent_executors.stores import PostgresStore, SQLiteStore, Store  # noqa: E402

TARGET_SIZE = 10_000
MAX_RATIO = 2.0  # SQLite / none, CPU, at TARGET_SIZE
MAX_STATEMENTS = 3  # a round's most: add, remove, renew
# Seconds: the lease of the counted runs, and how long they hold the tasks once
# all are outstanding: renewed three times meanwhile. (A renewal of 100,000
# PostgreSQL records takes about 1 s on two busy cores: a shorter lease would be
# due again as each renewal ends, and no round would begin.)
COUNT_LEASE, QUICK_COUNT_LEASE = 6.0, 1.5
HOLD_INTERVAL = 0.1  # seconds between the rounds meanwhile
TRANSACTIONS = ("BEGIN", "BEGIN IMMEDIATE", "COMMIT", "ROLLBACK")
NAMES = {"none": "no store", "sqlite": "SQLite", "postgres": "PostgreSQL"}


class Scenario:
    """The poll function of one run: nothing resolves until the last task
    (``n - 1``) has been polled; then, after ``hold`` seconds (rounds every
    :data:`HOLD_INTERVAL`), everything it is given. ``between`` is called before
    each round's work, told whether every task was outstanding since the last
    round: the counted runs read their statements there."""

    def __init__(
        self,
        n: int,
        hold: float = 0.0,
        between: Callable[[bool], None] | None = None,
    ) -> None:
        self.last = n - 1
        self.hold = hold
        self.between = between
        self.release_at: float | None = None  # time.monotonic()

    def __call__(self, descriptors: list[PollDescriptor[int]]) -> float:
        if self.between is not None:
            self.between(self.release_at is not None)
        if self.release_at is None:
            if not any(d.result == self.last for d in descriptors):
                return max(0.001, 1e-6 * (self.last + 1))
            self.release_at = time.monotonic() + self.hold
        if time.monotonic() < self.release_at:
            return HOLD_INTERVAL
        for descriptor in descriptors:
            descriptor.yield_result(descriptor.result)
        return 0


def run(n: int, store: Store | None, scenario: Scenario, lease: float = 60.0) -> float:
    """CPU seconds of one run of ``n`` tasks with ``store`` (closed by the caller)."""
    start = time.process_time()
    executor = PollExecutor(
        Executors.sync(), scenario, default_interval=0.001, store=store, lease=lease
    )
    futures = [executor.submit(int, i) for i in range(n)]
    _, not_done = wait(futures)
    executor.shutdown()
    elapsed = time.process_time() - start
    if not_done or any(f.result() != i for i, f in enumerate(futures)):
        raise AssertionError(f"a future of the run of {n:,} is pending or wrong")
    return elapsed


class Stores:
    """Opens a new store of each kind (a new SQLite file, a new PostgreSQL
    queue) per run; ``skipped`` says why PostgreSQL is not measured, if not."""

    def __init__(self, directory: Path, postgres: str | None, skipped: str) -> None:
        self.directory = directory
        self.postgres = postgres
        self.skipped = skipped

    def kinds(self) -> list[str]:
        return ["none", "sqlite"] + (["postgres"] if self.postgres else [])

    def open(self, kind: str) -> Store | None:
        if kind == "sqlite":
            return SQLiteStore(self.directory / f"{uuid.uuid4().hex}.db")
        if kind == "postgres":
            assert self.postgres is not None
            return PostgresStore(self.postgres, queue=uuid.uuid4().hex)
        return None


@contextmanager
def postgres_conninfo(
    given: str | None, skip: bool
) -> Iterator[tuple[str | None, str]]:
    """The PostgreSQL to measure on and ``""``, or ``None`` and why not: the
    server given, else a throwaway one of ``tests/postgres_server.py``."""
    if skip:
        yield None, "--no-postgres"
        return
    try:
        import psycopg  # noqa: F401
    except ImportError:
        yield None, "psycopg is not installed (pip install fluent-executors[postgres])"
        return
    if given:
        yield given, ""
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    postgres_server: Any = importlib.import_module("postgres_server")
    binaries, why_not = postgres_server.find_binaries()
    if binaries is None:
        yield None, why_not
        return
    server = postgres_server.PostgresServer(binaries)
    try:
        server.start()
        yield server.conninfo, ""
    finally:
        server.stop()


def measure_cpu(stores: Stores, sizes: Sequence[int], repeat: int) -> Measurements:
    """Seconds per task of each store kind at each N, interleaved rounds."""

    def one(kind: str, n: int) -> tuple[float, str]:
        store = stores.open(kind)
        try:
            return run(n, store, Scenario(n)), ""
        finally:
            if store is not None:
                store.close()

    for kind in stores.kinds():  # not timed: first-run costs
        one(kind, 1_000)

    def schedule(round_: int) -> list[tuple[str, int]]:
        kinds = _harness.rotated(stores.kinds(), round_)
        return [(kind, n) for n in sizes for kind in kinds]

    return _harness.measure(schedule, one, repeat)


class StatementCounter:
    """Counts the statements a store sends, and the most between two rounds
    while the tasks arrive, and once all are outstanding."""

    def __init__(self) -> None:
        self.total = 0
        self.since_round = 0
        self.most_arriving = 0
        self.most_outstanding = 0
        self.rounds = 0

    def statement(self, sql: str) -> None:
        if sql.strip().upper() not in TRANSACTIONS:
            self.total += 1
            self.since_round += 1

    def round(self, outstanding: bool) -> None:
        """A poll round begins: the statements since the last one were sent
        while the tasks arrived, or (``outstanding``) once all were."""
        self.rounds += 1
        if outstanding:
            self.most_outstanding = max(self.most_outstanding, self.since_round)
        else:
            self.most_arriving = max(self.most_arriving, self.since_round)
        self.since_round = 0


def count_statements(
    stores: Stores, kind: str, n: int, lease: float
) -> StatementCounter:
    """One run of ``n`` tasks on a new store of ``kind``, its statements counted,
    with a lease of ``lease`` seconds, the tasks held as long."""
    counter = StatementCounter()
    store = stores.open(kind)
    assert store is not None
    db: Any = store._db  # type: ignore[attr-defined]  # (the store's connection)
    if isinstance(db, sqlite3.Connection):
        db.set_trace_callback(counter.statement)
    else:
        execute = db.execute

        def counting(sql: str, *args: Any, **kwargs: Any) -> Any:
            counter.statement(sql)
            return execute(sql, *args, **kwargs)

        db.execute = counting
    try:
        run(n, store, Scenario(n, lease, counter.round), lease=lease)
    finally:
        store.close()
    counter.round(True)  # the last sync, at shutdown
    return counter


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="The cost of a poll executor's store: CPU per task, without a "
        "store, with SQLite and with PostgreSQL, and the store's statements per "
        "poll round.",
    )
    _harness.add_options(
        parser, default_sizes=[10_000, 100_000], quick_sizes=[1_000, 5_000]
    )
    parser.add_argument(
        "--postgres",
        metavar="CONNINFO",
        help="a PostgreSQL server to measure on (default: a throwaway server of "
        "tests/postgres_server.py, if the binaries are installed)",
    )
    parser.add_argument(
        "--no-postgres", action="store_true", help="do not measure PostgreSQL"
    )
    args, _ = _harness.parse_options(parser, argv)
    sizes: list[int] = args.sizes
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        conninfo, skipped = stack.enter_context(
            postgres_conninfo(args.postgres, args.no_postgres)
        )
        stores = Stores(directory, conninfo, skipped)
        per_task = measure_cpu(stores, sizes, args.repeat)
        lease = QUICK_COUNT_LEASE if args.quick else COUNT_LEASE
        counts = {
            (kind, n): count_statements(stores, kind, n, lease)
            for kind in stores.kinds()
            if kind != "none"
            for n in sizes
        }

    print(
        _harness.summary(
            args.repeat,
            f"clock: {_harness.CLOCK_NAMES[args.clock]}",
            f"PostgreSQL: {'measured' if conninfo else 'skipped: ' + skipped}",
        )
    )
    out = _harness.Report("store_cost", args)
    best, ratio = _harness.best, _harness.ratio
    rows: list[list[object]] = []
    for n in sizes:
        for kind in ("none", "sqlite", "postgres"):
            counted = counts.get((kind, n))
            if kind == "postgres" and not conninfo:
                rows.append([f"{n:,}", NAMES[kind], f"skipped: {skipped}", *["-"] * 5])
                continue
            statements = (
                ["-"] * 4
                if counted is None
                else [
                    f"{counted.total:,}",
                    f"{counted.rounds:,}",
                    counted.most_arriving,
                    counted.most_outstanding,
                ]
            )
            rows.append(
                [
                    f"{n:,}",
                    NAMES[kind],
                    _harness.format_us(best(per_task, (kind, n))),
                    _harness.format_ratio(ratio(per_task, (kind, n), ("none", n))),
                    *statements,
                ]
            )
    out.table(
        "store_cost",
        [
            "N",
            "Store",
            "CPU us per task",
            "/ no store",
            "Statements",
            "Rounds",
            "Most between two rounds, arriving",
            "Most between two rounds, all outstanding",
        ],
        rows,
    )
    target_size = TARGET_SIZE if TARGET_SIZE in sizes else sizes[0]
    largest = sizes[-1]
    targets = [
        Target(
            f"SQLite store / no store, CPU, {target_size:,} tasks",
            ratio(per_task, ("sqlite", target_size), ("none", target_size)),
            "<=",
            MAX_RATIO,
        )
    ]
    for kind in ("sqlite", "postgres"):
        counted = counts.get((kind, largest))
        targets.append(
            Target(
                f"{NAMES[kind]}: most store statements between two rounds, "
                f"{largest:,} tasks outstanding",
                None if counted is None else float(counted.most_outstanding),
                "<=",
                MAX_STATEMENTS,
                "statements",
            )
        )
    passed = out.check(targets)
    return _harness.finish(passed, args)


if __name__ == "__main__":
    sys.exit(main())
