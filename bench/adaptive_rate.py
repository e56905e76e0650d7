"""An adaptive rate limit against a service whose capacity the client does not know:
``with_rate_limit(adaptive=True)`` against fixed limits.

Run it with ``nox -s bench``, or directly with ``python bench/adaptive_rate.py
--help``. It takes a few seconds: the library runs on the virtual clock of
``fluent_executors.testing``, so the figures are seconds of that clock (how the
limit behaves), not of the machine.

The service is a function in this process that accepts at most ``--capacity``
calls (40) in any window of one second, and raises an exception with a ``429``
response for each call beyond; the client is configured for ``--max-calls`` (100)
calls a second, and its worst day is ``--worst`` (10) calls a second. The workload
is ``--calls`` (2,000; 400 with ``--quick``) calls that must all succeed: a call
refused with a 429 is submitted again, at the end of the queue. Three contenders,
each a ``with_rate_limit`` on a synchronous executor:

``adaptive``
    ``with_rate_limit(max_calls, 1.0, adaptive=True)``: each 429 cuts the rate by
    half (at most once a second), each success adds ``1 / rate``.
``fixed at max_calls``
    ``with_rate_limit(max_calls, 1.0)``: the configured rate, too high.
``fixed at worst``
    ``with_rate_limit(worst, 1.0)``: the rate set low enough for the worst day.

Figures: seconds until the workload is done, calls refused, and, each second,
the calls the service accepted and the adaptive rate. Targets: the adaptive limit
has fewer refused calls than the fixed limit at ``max_calls``, and finishes in
less time than the fixed limit at the worst rate.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

import _harness

_harness.measure_without_metrics()  # before fluent_executors is imported

from fluent_executors import Executors, RateLimitExecutor  # noqa: E402
from fluent_executors.testing import VirtualClock, virtual_time  # noqa: E402

PERIOD = 1.0  # seconds: the window of the service and of every limit
CONTENDERS = ("adaptive", "fixed at max_calls", "fixed at worst")


class TooManyRequests(Exception):
    """Shaped like requests' ``HTTPError`` for a ``429 Too Many Requests``."""

    def __init__(self) -> None:
        super().__init__("429 Too Many Requests")
        self.response = _Response(429)


class _Response:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code
        self.headers: dict[str, str] = {}


class Service:
    """At most ``capacity`` accepted calls in any window of :data:`PERIOD` seconds
    of ``clock``; a call beyond raises :class:`TooManyRequests`."""

    def __init__(self, clock: VirtualClock, capacity: int) -> None:
        self.clock = clock
        self.capacity = capacity
        self.accepted: deque[float] = deque()  # times of the window's calls
        self.accepted_times: list[float] = []
        self.refused = 0
        self.lock = threading.Lock()

    def __call__(self) -> str:
        now = self.clock.monotonic()
        with self.lock:
            while self.accepted and self.accepted[0] + PERIOD <= now:
                self.accepted.popleft()
            if len(self.accepted) >= self.capacity:
                self.refused += 1
                raise TooManyRequests()
            self.accepted.append(now)
            self.accepted_times.append(now)
        return "ok"


def run(contender: str, args: argparse.Namespace) -> dict[str, Any]:
    """The workload through ``contender``; its figures and its trace."""
    with virtual_time() as clock:
        service = Service(clock, args.capacity)
        if contender == "adaptive":
            executor: RateLimitExecutor = Executors.sync().with_rate_limit(
                args.max_calls, PERIOD, adaptive=True
            )
        else:
            rate = args.max_calls if contender == "fixed at max_calls" else args.worst
            executor = Executors.sync().with_rate_limit(rate, PERIOD)
        done = threading.Event()
        succeeded = [0]
        lock = threading.Lock()

        def submit() -> None:
            executor.submit(service).add_done_callback(finished)

        def finished(future: Future[Any]) -> None:
            if future.exception() is not None:
                submit()  # refused: again, at the end of the queue
                return
            with lock:
                succeeded[0] += 1
                if succeeded[0] == args.calls:
                    done.set()

        start = clock.monotonic()
        for _ in range(args.calls):
            submit()
        rates: list[float] = []
        while not done.is_set():
            if len(rates) > 100 * args.calls:
                raise AssertionError(f"{contender}: the workload never finished")
            rates.append(executor.stats().rate)
            clock.advance(PERIOD)
        elapsed = max(service.accepted_times) - start
        stats = executor.stats()
        executor.shutdown()
    per_second = [0] * (int(elapsed) + 1)
    for time in service.accepted_times:
        per_second[int(time - start)] += 1
    return {
        "seconds": elapsed,
        "refused": service.refused,
        "cuts": stats.cuts,
        "rates": rates,
        "accepted": per_second,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _harness.add_options(parser)
    parser.add_argument("--calls", type=int, default=None, help="default: 2,000")
    parser.add_argument("--capacity", type=int, default=40, help="default: 40 a s")
    parser.add_argument("--max-calls", type=int, default=100, help="default: 100 a s")
    parser.add_argument("--worst", type=int, default=10, help="default: 10 a s")
    args, _ = _harness.parse_options(parser, argv)
    args.calls = args.calls or (400 if args.quick else 2_000)
    # One run each: on the virtual clock the figures are the same every time.
    runs = {contender: run(contender, args) for contender in CONTENDERS}
    for contender, result in runs.items():
        print(
            f"  {contender:<20} {result['seconds']:.0f} s  "
            f"refused {result['refused']:,}  cuts {result['cuts']}",
            file=sys.stderr,
        )
    print(
        f"{_harness.platform_summary()}; virtual clock, one run each; "
        f"{args.calls:,} calls, service capacity {args.capacity} a second, "
        f"max_calls {args.max_calls}, worst {args.worst}"
    )
    out = _harness.Report("adaptive_rate", args)
    names = {
        "adaptive": f"adaptive, max_calls={args.max_calls}",
        "fixed at max_calls": f"fixed at max_calls={args.max_calls}",
        "fixed at worst": f"fixed at worst={args.worst}",
    }
    out.table(
        "adaptive_rate",
        ["Limit", "seconds", "refused calls", "rate cuts"],
        [
            [
                names[c],
                f"{runs[c]['seconds']:.0f}",
                f"{runs[c]['refused']:,}",
                f"{runs[c]['cuts']}",
            ]
            for c in CONTENDERS
        ],
    )
    adaptive = runs["adaptive"]
    out.table(
        "adaptive_rate_trace",
        ["second", "adaptive rate", *(f"accepted, {names[c]}" for c in CONTENDERS)],
        [
            [
                second,
                f"{rate:.1f}",
                *(
                    runs[c]["accepted"][second]
                    if second < len(runs[c]["accepted"])
                    else "-"
                    for c in CONTENDERS
                ),
            ]
            for second, rate in enumerate(adaptive["rates"])
            if second < len(adaptive["accepted"])
        ],
    )
    passed = out.check(
        [
            _harness.Target(
                "refused calls, adaptive as a share of fixed at max_calls",
                100
                * adaptive["refused"]
                / max(runs["fixed at max_calls"]["refused"], 1),
                "<",
                50.0,
                "%",
            ),
            _harness.Target(
                "seconds, adaptive / fixed at worst",
                adaptive["seconds"] / runs["fixed at worst"]["seconds"],
                "<",
                0.75,
            ),
        ]
    )
    return _harness.finish(passed, args)


if __name__ == "__main__":
    sys.exit(main())
