"""10,000 remote tasks polled until done: fluent-executors' batched poll, one polling
thread per task, one asyncio task per future, and more-executors 2.11.4.

Run it with ``nox -s bench``, or directly with ``python bench/remote_tasks.py
--help``. It takes about a minute.

A fake remote service, in process (:class:`Service`): creating a task returns its
id, and the task finishes a time after its creation drawn uniformly from 0.5 to 2 s
(the same for every contender: a seeded draw per id). Every request, a creation or a
status check, takes 1 ms (a sleep: the network); a status check may ask about one
task or about many at once. Every contender checks each task every 0.1 s until it
is finished:

``ours``
    ``Executors.thread_pool(8).with_poll(poll_fn, max_batch=1000)``: the callable
    creates the task; ``poll_fn`` checks up to 1,000 tasks with one request, and
    asks to be called again in 0.1 s.
``threads``
    One thread per task (``threading.Thread``): it creates the task, then checks it
    every 0.1 s, and resolves its future.
``asyncio``
    One asyncio task per future, on one event loop: it creates the task, then
    checks it every 0.1 s (``asyncio.sleep``), and resolves its future.
``more``
    more-executors' ``Executors.thread_pool(max_workers=8).with_poll(poll_fn)``,
    the same poll function, given every task at once (more-executors has no
    batches), if it is installed.

Figures, one run each: the requests made (creations included), the wall time until
every future is done, the CPU time of the process over it, the most threads alive
at once (sampled every millisecond, the main thread and the sampler not counted),
and the lateness of a future: when it was resolved less when its task finished,
in milliseconds (median, 99th percentile, maximum). No target: what it shows is
what each way costs for the same work.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, wait
from typing import Any

import _harness
from _harness import WORKERS

_harness.measure_without_metrics()  # before fluent_executors is imported

from fluent_executors import Executors, PollDescriptor  # noqa: E402

LATENCY = 0.001  # seconds per request
INTERVAL = 0.1  # seconds between two checks of a task
MAX_BATCH = 1_000
DURATION = (0.5, 2.0)  # seconds from creation to finish, uniform


class Service:
    """The fake remote service: tasks that finish on their own, and a request
    counter."""

    def __init__(self, n: int) -> None:
        rng = random.Random(n)
        self.durations = [rng.uniform(*DURATION) for _ in range(n)]
        self.finish = [float("inf")] * n
        self.requests = 0
        self.lock = threading.Lock()

    def _count(self) -> None:
        with self.lock:
            self.requests += 1

    def create(self, i: int) -> int:
        """Create task ``i``; return its id."""
        self._count()
        time.sleep(LATENCY)
        self.finish[i] = time.monotonic() + self.durations[i]
        return i

    def finished(self, ids: Sequence[int]) -> list[bool]:
        """One request: whether each task of ``ids`` is finished."""
        self._count()
        time.sleep(LATENCY)
        now = time.monotonic()
        return [self.finish[i] <= now for i in ids]

    async def create_async(self, i: int) -> int:
        self._count()
        await asyncio.sleep(LATENCY)
        self.finish[i] = time.monotonic() + self.durations[i]
        return i

    async def finished_async(self, i: int) -> bool:
        self._count()
        await asyncio.sleep(LATENCY)
        return self.finish[i] <= time.monotonic()


def poll_fn(service: Service) -> Any:
    def poll(descriptors: list[PollDescriptor[int]]) -> float:
        if descriptors:
            states = service.finished([d.result for d in descriptors])
            for descriptor, done in zip(descriptors, states, strict=True):
                if done:
                    descriptor.yield_result(descriptor.result)
        return INTERVAL

    return poll


def track(done_at: list[float]) -> Any:
    """A function that makes future ``i`` record when it is done in ``done_at[i]``."""

    def tracked(future: Future[int], i: int) -> Future[int]:
        future.add_done_callback(lambda _: done_at.__setitem__(i, time.monotonic()))
        return future

    return tracked


def run_poll(
    contender: str, service: Service, n: int, tracked: Any
) -> list[Future[int]]:
    if contender == "ours":
        executor: Any = Executors.thread_pool(WORKERS).with_poll(
            poll_fn(service), max_batch=MAX_BATCH
        )
    else:
        more_executors = _harness.more_executors()
        assert more_executors is not None
        executor = more_executors.Executors.thread_pool(max_workers=WORKERS).with_poll(
            poll_fn(service)
        )
    futures = [tracked(executor.submit(service.create, i), i) for i in range(n)]
    wait(futures)
    executor.shutdown(wait=True)
    return futures


def run_threads(service: Service, n: int, tracked: Any) -> list[Future[int]]:
    futures: list[Future[int]] = [tracked(Future(), i) for i in range(n)]

    def follow(i: int) -> None:
        service.create(i)
        while not service.finished([i])[0]:
            time.sleep(INTERVAL)
        futures[i].set_result(i)

    threads = [threading.Thread(target=follow, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return futures


def run_asyncio(service: Service, n: int, tracked: Any) -> list[Future[int]]:
    futures: list[Future[int]] = [tracked(Future(), i) for i in range(n)]

    async def follow(i: int) -> None:
        await service.create_async(i)
        while not await service.finished_async(i):
            await asyncio.sleep(INTERVAL)
        futures[i].set_result(i)

    async def main() -> None:
        await asyncio.gather(*(follow(i) for i in range(n)))

    asyncio.run(main())
    return futures


def run_once(contender: str, n: int) -> dict[str, float]:
    """Follow N tasks with ``contender``; return its figures."""
    service = Service(n)
    done_at = [0.0] * n
    tracked = track(done_at)
    before = threading.active_count() + 1  # the main thread and the sampler
    with _harness.PeakThreads() as threads:
        wall, cpu = time.perf_counter(), time.process_time()
        if contender == "threads":
            futures = run_threads(service, n, tracked)
        elif contender == "asyncio":
            futures = run_asyncio(service, n, tracked)
        else:
            futures = run_poll(contender, service, n, tracked)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if any(f.result() != i for i, f in enumerate(futures)):
        raise AssertionError(f"{contender}: a wrong result")
    lateness = sorted(
        (done - finish) * 1e3
        for done, finish in zip(done_at, service.finish, strict=True)
    )
    return {
        "requests": service.requests,
        "wall": wall,
        "cpu": cpu,
        "threads": threads.peak - before,
        "p50": lateness[len(lateness) // 2],
        "p99": lateness[min(len(lateness) - 1, int(0.99 * len(lateness)))],
        "max": lateness[-1],
    }


CONTENDERS = ("ours", "threads", "asyncio", "more")
NAMES = {
    "ours": f"fluent-executors, ``max_batch={MAX_BATCH:,}``",
    "threads": "a thread per task",
    "asyncio": "an asyncio task per future",
    "more": "more-executors",
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _harness.add_options(parser)
    parser.add_argument("--tasks", type=int, default=None, help="default: 10,000")
    args, with_more = _harness.parse_options(parser, argv)
    n = args.tasks or (1_000 if args.quick else 10_000)
    results = {}
    for contender in CONTENDERS:
        if contender == "more" and not with_more:
            continue
        results[contender] = result = run_once(contender, n)
        print(
            f"  {contender:<8} "
            + "  ".join(f"{key} {value:,.3f}" for key, value in result.items()),
            file=sys.stderr,
            flush=True,
        )
    print(_harness.summary(1, f"{n:,} tasks, one run each"))
    out = _harness.Report("remote_tasks", args)
    out.table(
        "remote_tasks",
        [
            "Contender",
            "requests",
            "wall s",
            "CPU s",
            "threads",
            "late ms p50",
            "p99",
            "max",
        ],
        [
            [
                NAMES[c],
                f"{r['requests']:,.0f}",
                f"{r['wall']:.2f}",
                f"{r['cpu']:.2f}",
                f"{r['threads']:,.0f}",
                f"{r['p50']:.0f}",
                f"{r['p99']:.0f}",
                f"{r['max']:.0f}",
            ]
            for c, r in results.items()
        ],
    )
    return _harness.finish(out.check([]), args)


if __name__ == "__main__":
    sys.exit(main())
