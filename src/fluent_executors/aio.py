"""Executors for async programs, on asyncio and trio alike (through anyio): the
chain of the threaded side, ``await executor.run(fn, ...)`` its one primitive, and
batched polling on the caller's event loop. See the "Async programs" page.

Needs the ``aio`` extra (anyio); ``import fluent_executors`` never imports it.

.. versionadded:: 0.2.0
"""

from __future__ import annotations

from _fluent_executors.errors import install_hint

try:
    import anyio  # noqa: F401
except ImportError as error:  # pragma: no cover - the extra is missing
    raise ImportError(
        f"fluent_executors.aio needs anyio: {install_hint('aio')}"
    ) from error

from _fluent_executors.aio.driver import PolledRun
from _fluent_executors.aio.executor import AsyncExecutor, AsyncPollFn
from _fluent_executors.aio.facade import AsyncExecutors
from _fluent_executors.aio.mapping import AsyncMap
from _fluent_executors.hints import retry_after
from _fluent_executors.poll.descriptor import PollDescriptor
from _fluent_executors.retry_policy import ExceptionRetryPolicy, RetryPolicy
from _fluent_executors.stats import ExecutorStats, PollStats, RateLimitStats

# The names of the threaded side that an async program needs (its poll
# function's descriptors, the retry policies, the stats), the same objects.
__all__ = [
    "AsyncExecutor",
    "AsyncExecutors",
    "AsyncMap",
    "AsyncPollFn",
    "ExceptionRetryPolicy",
    "ExecutorStats",
    "PollDescriptor",
    "PollStats",
    "PolledRun",
    "RateLimitStats",
    "RetryPolicy",
    "retry_after",
]
