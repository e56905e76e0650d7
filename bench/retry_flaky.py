"""10,000 flaky calls with retry: fluent-executors, more-executors 2.11.4, and
``tenacity`` and ``stamina`` each in a thread pool.

Run it with ``nox -s bench`` (which installs more-executors, tenacity and stamina),
or directly with ``python bench/retry_flaky.py --help``; a contender whose package
is not installed is skipped. It takes about half a minute.

Each of N calls (``--calls``, 10,000) fails its first attempt with
``ConnectionError`` and succeeds on its second. Every contender has 8 worker
threads, retries up to 3 attempts on ``ConnectionError``, and waits ``--backoff``
seconds (2 ms) before the second attempt, without jitter:

``ours``
    ``Executors.thread_pool(8).with_retry(ExceptionRetryPolicy(max_attempts=3,
    sleep=backoff, exception_base=ConnectionError))``: a waiting retry holds no
    thread; the waits share the library's one scheduler thread.
``more``
    more-executors' ``Executors.thread_pool(max_workers=8).with_retry(...)`` with
    its ``ExceptionRetryPolicy`` of the same settings.
``tenacity``
    ``concurrent.futures.ThreadPoolExecutor(8)`` running the call wrapped in
    ``tenacity.retry(stop=stop_after_attempt(3), wait=wait_exponential(
    multiplier=backoff), retry=retry_if_exception_type(ConnectionError))``: the
    wait sleeps in the worker thread.
``stamina``
    The same pool running the call wrapped in ``stamina.retry(on=ConnectionError,
    attempts=3, wait_initial=backoff, wait_jitter=0, timeout=None)``.

Figures, the best of ``--repeat`` interleaved rounds: the wall time from the first
submit until all N results are in, the CPU time of the process over it, and the most
threads alive at once besides the main thread (sampled every millisecond by one more
thread, not counted). No target: what it shows is where the waits are spent.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor, wait
from typing import Any

import _harness
from _harness import WORKERS

_harness.measure_without_metrics()  # before fluent_executors is imported

from fluent_executors import ExceptionRetryPolicy, Executors  # noqa: E402

CONTENDERS = ("ours", "more", "tenacity", "stamina")
ATTEMPTS = 3


class Flaky:
    """Calls that each fail their first attempt, then return their argument."""

    def __init__(self) -> None:
        self.failed: set[int] = set()
        self.attempts = 0
        self.lock = threading.Lock()

    def __call__(self, i: int) -> int:
        with self.lock:
            self.attempts += 1
            first = i not in self.failed
            self.failed.add(i)
        if first:
            raise ConnectionError(f"call {i}: first attempt fails")
        return i


def available(contender: str) -> bool:
    """Whether ``contender``'s package can be imported."""
    module = {"more": "more_executors", "tenacity": "tenacity", "stamina": "stamina"}
    if contender not in module:
        return True
    try:
        __import__(module[contender])
    except ImportError:
        return False
    return True


def make(
    contender: str, flaky: Flaky, backoff: float
) -> tuple[Executor, Callable[[int], int]]:
    """The executor of ``contender`` and the callable to submit to it."""
    if contender == "ours":
        policy = ExceptionRetryPolicy(
            max_attempts=ATTEMPTS, sleep=backoff, exception_base=ConnectionError
        )
        return Executors.thread_pool(WORKERS).with_retry(policy), flaky
    if contender == "more":
        import more_executors
        from more_executors.retry import ExceptionRetryPolicy as MorePolicy

        more_policy = MorePolicy(
            max_attempts=ATTEMPTS, sleep=backoff, exception_base=ConnectionError
        )
        executor: Executor = more_executors.Executors.thread_pool(
            max_workers=WORKERS
        ).with_retry(more_policy)
        return executor, flaky
    if contender == "tenacity":
        import tenacity

        wrapped: Callable[[int], int] = tenacity.retry(
            stop=tenacity.stop_after_attempt(ATTEMPTS),
            wait=tenacity.wait_exponential(multiplier=backoff),
            retry=tenacity.retry_if_exception_type(ConnectionError),
            reraise=True,
        )(flaky)
        return ThreadPoolExecutor(WORKERS), wrapped
    import stamina

    wrapped = stamina.retry(
        on=ConnectionError,
        attempts=ATTEMPTS,
        wait_initial=backoff,
        wait_jitter=0,
        timeout=None,
    )(flaky)
    return ThreadPoolExecutor(WORKERS), wrapped


def run_once(contender: str, n: int, backoff: float) -> dict[str, float]:
    """Make the N calls through ``contender``; return its figures."""
    flaky = Flaky()
    executor, call = make(contender, flaky, backoff)
    before = threading.active_count() + 1  # the main thread and the sampler
    with _harness.PeakThreads() as threads:
        wall, cpu = time.perf_counter(), time.process_time()
        futures: list[Future[Any]] = [executor.submit(call, i) for i in range(n)]
        wait(futures)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    executor.shutdown(wait=True)
    if any(f.result() != i for i, f in enumerate(futures)):
        raise AssertionError(f"{contender}: a wrong result")
    return {
        "wall": wall,
        "cpu": cpu,
        "threads": threads.peak - before,
        "attempts": flaky.attempts,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _harness.add_options(parser)
    parser.add_argument("--calls", type=int, default=None, help="default: 10,000")
    parser.add_argument(
        "--backoff", type=float, default=0.002, help="seconds (default: 0.002)"
    )
    args, with_more = _harness.parse_options(parser, argv)
    n = args.calls or (1_000 if args.quick else 10_000)
    contenders = [c for c in CONTENDERS if available(c) and (with_more or c != "more")]
    runs: dict[str, list[dict[str, float]]] = {c: [] for c in contenders}
    for round_ in range(args.repeat):
        for contender in _harness.rotated(contenders, round_):
            result = run_once(contender, n, args.backoff)
            runs[contender].append(result)
            print(
                f"  round {round_ + 1}/{args.repeat}  {contender:<9} "
                f"wall {result['wall']:.3f} s  cpu {result['cpu']:.3f} s  "
                f"threads {result['threads']:.0f}",
                file=sys.stderr,
                flush=True,
            )
    print(_harness.summary(args.repeat, f"{n:,} calls, backoff {args.backoff:g} s"))
    names = {
        "ours": "fluent-executors",
        "more": "more-executors",
        "tenacity": "tenacity in ``ThreadPoolExecutor(8)``",
        "stamina": "stamina in ``ThreadPoolExecutor(8)``",
    }
    out = _harness.Report("retry_flaky", args)
    out.table(
        "retry_flaky",
        ["Contender", "wall s", "CPU s", "threads", "attempts"],
        [
            [
                names[c],
                f"{min(r['wall'] for r in runs[c]):.3f}",
                f"{min(r['cpu'] for r in runs[c]):.3f}",
                f"{max(r['threads'] for r in runs[c]):.0f}",
                f"{runs[c][0]['attempts']:,.0f}",
            ]
            for c in contenders
        ],
    )
    return _harness.finish(out.check([]), args)


if __name__ == "__main__":
    sys.exit(main())
