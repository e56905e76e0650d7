# pyright: strict, reportUnnecessaryTypeIgnoreComment=true
"""Static checks of ``stats()``: every executor has it, and the kinds with counts of
their own return their subclass of ``ExecutorStats``.

Checked by ``mypy --strict`` and ``pyright`` (``nox -s typecheck``), never run;
see ``README.rst`` in this directory for how the checks read.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import assert_type

from fluent_executors import (
    Executors,
    ExecutorStats,
    FluentExecutor,
    PollDescriptor,
    PollStats,
    QueueStats,
    RetryStats,
    SchedulerStats,
    TimeoutStats,
    scheduler_stats,
)


def poll_all(descriptors: list[PollDescriptor[Any]]) -> None:
    for descriptor in descriptors:
        descriptor.yield_result()


def check_stats(executor: FluentExecutor) -> None:
    pool = Executors.thread_pool()
    assert_type(executor.stats(), ExecutorStats)
    assert_type(pool.stats(), ExecutorStats)
    assert_type(Executors.process_pool().stats(), ExecutorStats)
    assert_type(Executors.sync().stats(), ExecutorStats)
    assert_type(pool.with_map(str).stats(), ExecutorStats)
    assert_type(pool.with_poll(poll_all).stats(), PollStats)
    assert_type(pool.with_retry().stats(), RetryStats)
    assert_type(pool.with_timeout(1.0).stats(), TimeoutStats)
    assert_type(pool.with_throttle(2).stats(), QueueStats)
    assert_type(pool.with_rate_limit(2).stats(), QueueStats)
    assert_type(pool.with_asyncio().stats(), ExecutorStats)
    assert_type(pool.with_retry().stats().attempts, int)
    assert_type(pool.stats().in_progress, int)
    assert_type(scheduler_stats(), SchedulerStats)
    pool.stats().done = 1  # type: ignore[misc]  # frozen
