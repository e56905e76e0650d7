"""What each fast path of ``_fluent_executors.stdlib_compat`` gains: CPU per future
with it and in the portable mode, side by side (not part of ``nox -s bench``: run
it by hand, ``PYTHONPATH=src python bench/fast_paths.py``).

- The thread pool's own work items (``OWN_POOL_ITEMS``): 100,000 submits of
  ``int`` to ``Executors.thread_pool(max_workers=8)`` against a bare
  ``ThreadPoolExecutor(8)``, in a process with ``FLUENT_EXECUTORS_PORTABLE=1`` and
  one without (the switch is read at import).
- The proxy future's light fields and the unlocked reads of done standard
  futures (``LIGHT_FUTURES``): 100,000 submits through
  ``thread_pool(8).with_map(str).with_map(len)`` (the pool's own work items), and
  100,000 to ``thread_pool(8)`` on the standard ``submit`` (a proxy future
  following each standard one), in a process with them and one without (the
  flags are set before the modules that read them are imported); each run twice,
  alternately.
- The steps the GIL makes atomic (``LOCK_FREE``): 100,000 submits through
  ``thread_pool(8).with_throttle(64).with_timeout(60).with_retry()``, lock-free and
  locked, interleaved in one process.

- The poll executor's one list for every round (``poll/rounds.py``, its reuse
  decided by ``sys.getrefcount``) against plain code, a dict of the descriptors
  in order of arrival and a new list of it per round: the bookkeeping alone, in
  one thread, of the ``bench/poll_scale.py`` scenario (N descriptors taken in,
  the oldest 1% done in each round) at 4,000, 64,000 and 1,000,000
  (``--rounds``).

Each figure is the best of 3 rounds of ``time.process_time()``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor, wait
from typing import Any

N = 100_000
ROUNDS = 3


def per_future(make: Callable[[], Executor]) -> float:
    """Best CPU microseconds per future of ``N`` submits of ``int`` to ``make()``."""
    best = float("inf")
    for _ in range(ROUNDS):
        with make() as executor:
            start = time.process_time()
            wait([executor.submit(int) for _ in range(N)])
            best = min(best, time.process_time() - start)
    return best / N * 1e6


def pool_ratio() -> None:
    from _fluent_executors import stdlib_compat as _stdlib_compat
    from fluent_executors import Executors

    bare = per_future(lambda: ThreadPoolExecutor(8))
    ours = per_future(lambda: Executors.thread_pool(max_workers=8))
    mode = "portable" if _stdlib_compat.PORTABLE else "fast"
    print(f"thread pool, {mode}: {ours / bare:.2f}x a bare ThreadPoolExecutor")


CASES = {
    "thread_pool+map+map chain": lambda executors: (
        executors.thread_pool(max_workers=8).with_map(str).with_map(len)
    ),
    "thread pool on the standard submit": lambda executors: executors.thread_pool(
        max_workers=8
    ),
}


def proxy_per_future(light: bool, case: str) -> None:
    """Print the CPU microseconds per future of ``case``, with the proxy future's
    light fields or the portable ones."""
    from _fluent_executors import stdlib_compat as _stdlib_compat
    from fluent_executors import Executors

    assert "_fluent_executors.resolvable" not in sys.modules  # read at its import
    _stdlib_compat.LIGHT_FUTURES = light
    _stdlib_compat.OWN_POOL_ITEMS = "standard submit" not in case
    print(per_future(lambda: CASES[case](Executors)))


def proxy_ratio() -> None:
    for case in CASES:
        figures: dict[str, list[float]] = {"light": [], "portable": []}
        for _ in range(2):
            for mode, figure in figures.items():
                run = [sys.executable, __file__, "--proxy", mode, case]
                done = subprocess.run(run, check=True, capture_output=True, text=True)
                figure.append(float(done.stdout))
        light, portable = min(figures["light"]), min(figures["portable"])
        print(
            f"{case}: {light:.1f} us per future with light proxy futures, "
            f"{portable:.1f} us portable ({portable / light:.2f}x)"
        )


def lock_free_ratio() -> None:
    from _fluent_executors import outstanding as _outstanding
    from _fluent_executors import queueing as _queueing
    from _fluent_executors import scheduler as _scheduler
    from fluent_executors import Executors, retry

    def chain(lock_free: bool) -> Executor:
        for module in (_outstanding, _queueing, _scheduler, retry):
            module.LOCK_FREE = lock_free  # type: ignore[attr-defined]
        return (
            Executors.thread_pool(max_workers=8)
            .with_throttle(64)
            .with_timeout(60.0)
            .with_retry()
        )

    free = per_future(lambda: chain(True))
    locked = per_future(lambda: chain(False))
    print(f"throttle+timeout+retry chain: locked steps cost {locked / free:.2f}x")


class _Descriptor:
    """What the round list reads of a descriptor."""

    __slots__ = ("_gone", "_slot")

    def __init__(self) -> None:
        self._slot = -1
        self._gone = False


def rounds_per_future(n: int, plain: bool) -> float:
    """CPU microseconds per descriptor of the list bookkeeping of the poll_scale
    scenario, with the executor's round list or (``plain``) a list per round."""
    from _fluent_executors.poll.rounds import Polled

    descriptors = [_Descriptor() for _ in range(n)]
    polled: Polled[Any] = Polled(list)
    live: dict[_Descriptor, None] = {}
    for descriptor in descriptors:
        if plain:
            live[descriptor] = None
        else:
            polled.add(descriptor)
    start, left = time.process_time(), n
    while left:
        batch = list(live) if plain else polled.begin_round()
        done = batch[: max(1, len(batch) // 100)]
        for descriptor in done:
            if plain:
                del live[descriptor]
            else:
                polled.discard(descriptor)
        left -= len(done)
        del batch, done
        if not plain:
            polled.end_round()
    return (time.process_time() - start) / n * 1e6


def rounds_ratio() -> None:
    for n in (4_000, 64_000, 1_000_000):
        reused, plain = (
            min(rounds_per_future(n, p) for _ in range(ROUNDS)) for p in (False, True)
        )
        print(
            f"round lists at {n:,}: {reused:.2f} us per future reused, "
            f"{plain:.2f} us with a new list per round (+{plain - reused:.2f} us)"
        )


if __name__ == "__main__":
    if sys.argv[1:] == ["--rounds"]:
        rounds_ratio()
    elif sys.argv[1:] == ["--pool"]:
        pool_ratio()
    elif sys.argv[1:2] == ["--proxy"]:
        proxy_per_future(sys.argv[2] == "light", sys.argv[3])
    else:
        for portable in ("0", "1"):
            env = {**os.environ, "FLUENT_EXECUTORS_PORTABLE": portable}
            subprocess.run([sys.executable, __file__, "--pool"], env=env, check=True)
        proxy_ratio()
        lock_free_ratio()
        rounds_ratio()
