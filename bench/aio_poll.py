"""10,000 concurrent runs of an async program polled until done: fluent_executors.aio
on asyncio and on trio, a per-task polling loop, and the threaded PollExecutor.

Run it with ``nox -s bench``, or directly with ``python bench/aio_poll.py --help``.

The fake remote service of ``bench/remote_tasks.py`` (tasks that finish 0.5 to 2 s
after their creation, every request taking 1 ms), with async requests through
anyio. Every contender checks each task every 0.1 s until it is finished:

``ours, asyncio`` and ``ours, trio``
    ``AsyncExecutors.inline().with_poll(poll, max_batch=1000)`` in an ``async
    with`` block: each run creates its task (an async request), and the poll
    function checks up to 1,000 tasks with one async request.
``per-task loop``
    What an async client does without batched polling: each run creates its task,
    then loops on one status request and ``anyio.sleep(0.1)`` (on asyncio).
``threaded``
    ``Executors.thread_pool(8).with_poll(poll, max_batch=1000)``, as
    ``bench/remote_tasks.py`` runs it.

Figures, one run each: the service requests (creations included, and the status
requests alone), the most poll
calls in one round, the wall time until every run is done, and the CPU time of the
process per task.

Target 1: the per-task loop makes at least 20 times the status requests of ours
on asyncio.
Target 2: ours on asyncio takes less CPU per task than the per-task loop.
Target 3: at most ceil(N / max_batch) poll calls per round, on both backends.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

import _harness
import anyio
import remote_tasks  # (calls _harness.measure_without_metrics() as it loads)
from _harness import Target
from remote_tasks import INTERVAL, LATENCY, MAX_BATCH

from fluent_executors import PollDescriptor
from fluent_executors.aio import AsyncExecutors

CONTENDERS = ("ours, asyncio", "ours, trio", "per-task loop", "threaded")


class Service(remote_tasks.Service):
    """The service of ``bench/remote_tasks.py``, its requests awaited through
    anyio (on asyncio or trio)."""

    async def create_anyio(self, i: int) -> int:
        """Create task ``i``; return its id."""
        self._count()
        await anyio.sleep(LATENCY)
        self.finish[i] = time.monotonic() + self.durations[i]
        return i

    async def finished_anyio(self, ids: Sequence[int]) -> list[bool]:
        """One request: whether each task of ``ids`` is finished."""
        self._count()
        await anyio.sleep(LATENCY)
        now = time.monotonic()
        return [self.finish[i] <= now for i in ids]


class Rounds:
    """The poll calls of each round: a round begins when a call is given a task
    that an earlier call of the round was given."""

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.calls = [0]

    def call(self, ids: list[int]) -> None:
        if not self.seen.isdisjoint(ids):
            self.seen.clear()
            self.calls.append(0)
        self.seen.update(ids)
        self.calls[-1] += 1


async def run_ours(service: Service, n: int, rounds: Rounds) -> None:
    async def poll(descriptors: list[PollDescriptor[int]]) -> float:
        ids = [d.result for d in descriptors]
        rounds.call(ids)
        for descriptor, done in zip(
            descriptors, await service.finished_anyio(ids), strict=True
        ):
            if done:
                descriptor.yield_result(descriptor.result)
        return INTERVAL

    executor = AsyncExecutors.inline().with_poll(poll, max_batch=MAX_BATCH)
    async with executor, anyio.create_task_group() as group:
        for i in range(n):
            group.start_soon(executor.run, service.create_anyio, i)


async def run_per_task(service: Service, n: int) -> None:
    async def one(i: int) -> None:
        task = await service.create_anyio(i)
        while not (await service.finished_anyio([task]))[0]:
            await anyio.sleep(INTERVAL)

    async with anyio.create_task_group() as group:
        for i in range(n):
            group.start_soon(one, i)


def run(contender: str, n: int) -> dict[str, Any]:
    """One run of ``contender`` over ``n`` tasks: its figures."""
    service = Service(n)
    rounds = Rounds()
    wall, cpu = time.perf_counter(), time.process_time()
    if contender.startswith("ours"):
        backend = contender.split(", ")[1]
        anyio.run(run_ours, service, n, rounds, backend=backend)
    elif contender == "per-task loop":
        anyio.run(run_per_task, service, n, backend="asyncio")
    else:

        def untracked(future: Future[int], i: int) -> Future[int]:
            return future

        remote_tasks.run_poll("ours", service, n, untracked)
    return {
        "requests": service.requests,
        "status requests": service.requests - n,  # each run created one task
        "most calls in a round": (
            max(rounds.calls) if contender.startswith("ours") else None
        ),
        "wall": time.perf_counter() - wall,
        "cpu per task": (time.process_time() - cpu) / n,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="10,000 concurrent async runs polled until done: ours on "
        "asyncio and trio, a per-task polling loop, the threaded PollExecutor.",
    )
    _harness.add_options(parser, default_sizes=[10_000], quick_sizes=[1_000])
    args, _ = _harness.parse_options(parser, argv)
    args.repeat = 1  # one run each: the figures are counts and totals
    n = args.sizes[-1]
    figures = {contender: run(contender, n) for contender in CONTENDERS}

    print(_harness.summary(1, "clock: CPU time of the process, and wall time"))
    out = _harness.Report("aio_poll", args)
    out.table(
        "aio_poll",
        [
            "Contender",
            "requests",
            "status requests",
            "most poll calls in a round",
            "wall s",
            "CPU us per task",
        ],
        [
            [
                contender,
                f"{f['requests']:,}",
                f"{f['status requests']:,}",
                "-"
                if f["most calls in a round"] is None
                else f["most calls in a round"],
                f"{f['wall']:.2f}",
                _harness.format_us(f["cpu per task"]),
            ]
            for contender, f in figures.items()
        ],
    )
    ours, loop = figures["ours, asyncio"], figures["per-task loop"]
    per_round = math.ceil(n / MAX_BATCH)
    passed = out.check(
        [
            Target(
                f"status requests of the per-task loop / ours on asyncio, N={n:,}",
                loop["status requests"] / max(ours["status requests"], 1),
                ">=",
                20.0,
            ),
            Target(
                f"CPU per task of ours on asyncio / per-task loop, N={n:,}",
                ours["cpu per task"] / loop["cpu per task"],
                "<",
                1.0,
            ),
            Target(
                f"most poll calls in a round / ceil(N / {MAX_BATCH:,}), both backends",
                max(
                    figures["ours, asyncio"]["most calls in a round"],
                    figures["ours, trio"]["most calls in a round"],
                )
                / per_round,
                "<=",
                1.0,
            ),
        ]
    )
    return _harness.finish(passed, args)


if __name__ == "__main__":
    sys.exit(main())
