# pyright: strict, reportUnnecessaryTypeIgnoreComment=true
"""Static checks of ``stats()``: every executor has it, and the kinds with counts of
their own return their subclass of ``fe.ExecutorStats``.

Checked by ``mypy --strict`` and ``pyright`` (``nox -s typecheck``), never run;
see ``README.rst`` in this directory for how the checks read.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import assert_type

import fluent_executors as fe


def poll_all(descriptors: list[fe.PollDescriptor[Any]]) -> None:
    for descriptor in descriptors:
        descriptor.yield_result()


def check_stats(executor: fe.FluentExecutor) -> None:
    pool = fe.Executors.thread_pool()
    assert_type(executor.stats(), fe.ExecutorStats)
    assert_type(pool.stats(), fe.ExecutorStats)
    assert_type(fe.Executors.process_pool().stats(), fe.ExecutorStats)
    assert_type(fe.Executors.sync().stats(), fe.ExecutorStats)
    assert_type(pool.with_map(str).stats(), fe.ExecutorStats)
    assert_type(pool.with_poll(poll_all).stats(), fe.PollStats)
    assert_type(pool.with_retry().stats(), fe.RetryStats)
    assert_type(pool.with_timeout(1.0).stats(), fe.TimeoutStats)
    assert_type(pool.with_throttle(2).stats(), fe.QueueStats)
    assert_type(pool.with_rate_limit(2).stats(), fe.RateLimitStats)
    assert_type(pool.with_rate_limit(2, adaptive=True).stats().rate, float)
    assert_type(pool.with_asyncio().stats(), fe.ExecutorStats)
    assert_type(pool.with_retry().stats().attempts, int)
    assert_type(pool.stats().in_progress, int)
    assert_type(fe.scheduler_stats(), fe.SchedulerStats)
    pool.stats().done = 1  # type: ignore[misc]  # frozen
