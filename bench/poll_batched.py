"""The poll executor for real services at scale: 100,000 outstanding futures polled
in batches of 1,000 (``max_batch``), and one round of an async poll function.

Run it with ``nox -s bench``, or directly with ``python bench/poll_batched.py
--help``. Clock: CPU time of the process, all threads (:func:`time.process_time`),
the best of ``--repeat`` interleaved rounds; ratios are between best runs.

**Batches.** N trivial callables (``_harness.task(i)`` returns ``i``, the "task id")
are submitted to ``Executors.thread_pool(8).with_poll(poll, max_batch=1000)`` and
to a bare ``concurrent.futures.ThreadPoolExecutor(8)``. The poll function resolves
nothing until it has been given the last task submitted (so about N futures are
outstanding, polled 1,000 at a time, every round; until then it asks for the next
round after 1 us per future), then resolves 1% of the
descriptors it is given per call, oldest first, and asks to be called again at once.
The figure is CPU seconds per future, from the first submit to all done.

Target 1: ours/bare at 64,000 within 1.3x of ours/bare at 4,000 (the cost per
future stays flat with batches).

**Async round.** An async poll function checks 10,000 tasks, one request each, at
most 500 at once (an :class:`asyncio.Semaphore`), against an in-process async fake
service whose every answer takes 10 ms (``asyncio.sleep(0.01)``). The figure is the
wall time of the poll call given all 10,000 descriptors: one poll round, on the one
poll thread. A synchronous poll function would take 10,000 x 10 ms = 100 s.

Target 2: one round of 10,000 in at most 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any

import _harness
from _harness import WORKERS, Measurements, Target

_harness.measure_without_metrics()  # before fluent_executors is imported

from fluent_executors import Executors, PollDescriptor  # noqa: E402

MAX_BATCH = 1_000
ASYNC_TASKS = 10_000
ASYNC_AT_ONCE = 500
ASYNC_LATENCY = 0.010  # seconds per answer of the fake service


class BatchedScenario:
    """The poll function of one run: nothing resolves until the last task submitted
    (``n - 1``) has been polled, then 1% of the descriptors of each call."""

    def __init__(self, n: int) -> None:
        self.last = n - 1
        self.releasing = False

    def __call__(self, descriptors: list[PollDescriptor[int]]) -> float:
        if not self.releasing:
            if not any(d.result == self.last for d in descriptors):
                # Not all submitted yet: poll again after 1 us per future (at least
                # 1 ms), so that the rounds of the waiting take about 1% of the
                # time (as bench/poll_scale.py does), and add at most 1 us each.
                return max(0.001, 1e-6 * (self.last + 1))
            self.releasing = True
        for descriptor in descriptors[: max(1, len(descriptors) // 100)]:
            descriptor.yield_result(descriptor.result)
        return 0


def _executor(contender: str, n: int) -> Executor:
    if contender == "bare":
        return _harness.bare_pool()
    return Executors.thread_pool(WORKERS).with_poll(
        BatchedScenario(n), max_batch=MAX_BATCH
    )


def measure_batches(sizes: Sequence[int], repeat: int, clock: str) -> Measurements:
    """Seconds per future of bare and ours at each N, interleaved rounds."""
    for contender in ("bare", "ours"):  # not timed: first-run costs
        _harness.time_tasks(_executor(contender, 1_000), 1_000, what="warm-up")

    def run(contender: str, n: int) -> tuple[float, str]:
        (elapsed,) = _harness.time_tasks(
            _executor(contender, n),
            n,
            what=f"{contender} at N={n}",
            clocks=[_harness.CLOCKS[clock]],
        )
        return elapsed, ""

    def schedule(round_: int) -> list[tuple[str, int]]:
        pair = _harness.rotated(["bare", "ours"], round_)
        return [(contender, n) for n in sizes for contender in pair]

    return _harness.measure(schedule, run, repeat)


class FakeService:
    """An async service whose every status answer takes ``latency`` seconds."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.requests = 0

    async def status(self, task: int) -> str:
        self.requests += 1
        await asyncio.sleep(self.latency)
        return "finished"


def async_round(tasks: int = ASYNC_TASKS) -> float:
    """Wall seconds of the one poll call that is given all ``tasks`` descriptors."""
    service = FakeService(ASYNC_LATENCY)
    rounds: list[float] = []

    async def poll(descriptors: list[PollDescriptor[int]]) -> float:
        if len(descriptors) < tasks:  # not all submitted yet: wait for the rest
            return 0.001
        started = time.perf_counter()
        limit = asyncio.Semaphore(ASYNC_AT_ONCE)

        async def check(descriptor: PollDescriptor[Any]) -> None:
            async with limit:
                state = await service.status(descriptor.result)
            if state == "finished":
                descriptor.yield_result(descriptor.result)

        await asyncio.gather(*(check(d) for d in descriptors))
        rounds.append(time.perf_counter() - started)
        return 0

    with Executors.sync().with_poll(poll) as executor:
        futures = [executor.submit(int, i) for i in range(tasks)]
        for future in futures:
            future.result(timeout=600)
    if service.requests != tasks or len(rounds) != 1:
        raise AssertionError(f"{service.requests} requests in {len(rounds)} rounds")
    return rounds[0]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="The poll executor at scale: batches of 1,000 (max_batch) "
        "against a bare ThreadPoolExecutor(8), and one round of an async poll "
        "function over 10,000 tasks.",
    )
    _harness.add_options(
        parser, default_sizes=[4_000, 64_000], quick_sizes=[2_000, 8_000]
    )
    args, _ = _harness.parse_options(parser, argv)
    sizes = args.sizes
    per_future = measure_batches(sizes, args.repeat, args.clock)
    rounds = [async_round() for _ in range(min(args.repeat, 3))]

    print(_harness.summary(args.repeat, f"clock: {_harness.CLOCK_NAMES[args.clock]}"))
    out = _harness.Report("poll_batched", args)
    best, ratio = _harness.best, _harness.ratio
    out.table(
        "poll_batched",
        ["N", "bare us", f"ours (max_batch={MAX_BATCH:,}) us", "ours / bare"],
        [
            [
                f"{n:,}",
                _harness.format_us(best(per_future, ("bare", n))),
                _harness.format_us(best(per_future, ("ours", n))),
                _harness.format_ratio(ratio(per_future, ("ours", n), ("bare", n))),
            ]
            for n in sizes
        ],
    )
    small, large = sizes[0], sizes[-1]
    round_time = min(rounds)
    out.table(
        "poll_async_round",
        [
            "Tasks",
            "requests at once",
            "ms per answer",
            "seconds (best)",
            "sync poll function, seconds",
        ],
        [
            [
                f"{ASYNC_TASKS:,}",
                ASYNC_AT_ONCE,
                f"{ASYNC_LATENCY * 1e3:g}",
                f"{round_time:.3f}",
                f"{ASYNC_TASKS * ASYNC_LATENCY:g}",
            ]
        ],
    )
    passed = out.check(
        [
            Target(
                f"(ours / bare at {large:,}) / (ours / bare at {small:,}), "
                f"max_batch={MAX_BATCH:,}",
                _harness.divide(
                    ratio(per_future, ("ours", large), ("bare", large)),
                    ratio(per_future, ("ours", small), ("bare", small)),
                ),
                "<=",
                1.3,
            ),
            Target(
                f"async poll round of {ASYNC_TASKS:,} tasks", round_time, "<=", 1.0, "s"
            ),
        ]
    )
    return _harness.finish(passed, args)


if __name__ == "__main__":
    sys.exit(main())
