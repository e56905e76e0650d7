"""The snapshots of the executors' statistics: what ``executor.stats()`` and
:func:`scheduler_stats` return, frozen dataclasses.

Imported on first use (by a ``stats()`` method, or by reading one of these names
from ``fluent_executors``), never at ``import fluent_executors``: :mod:`dataclasses`
imports :mod:`inspect`, which a program that never asks for stats need not pay
for. The counts they are made of are kept by :mod:`_fluent_executors.counts`.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import scheduler
from .public import publish

__all__ = [
    "ExecutorStats",
    "PollStats",
    "QueueStats",
    "RateLimitStats",
    "RetryStats",
    "SchedulerStats",
    "TimeoutStats",
    "scheduler_stats",
]


# -- the snapshots ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ExecutorStats:
    """What an executor has done with the futures its ``submit`` returned: an
    immutable snapshot, returned by ``stats()`` on every executor of the library.

    The counts are kept by the executor from its creation on, whether or not a
    metrics backend is installed (they cost a few integer increments per future),
    and read without a lock: a snapshot taken while futures change state may be off
    by the few in transit, never by more. Each layer of a chain counts the futures
    its own ``submit`` returned, and only those (a retry executor's attempts are
    futures of its delegate). ``submitted == pending + running + done`` always
    holds, and once every future returned is done, ``pending == running == 0``.

    What *pending* and *running* mean depends on what the layer knows:

    - a thread pool: *pending* waits in the pool's queue, *running* is a callable
      that a worker thread is running now;
    - a process pool: *running* is a call handed to the worker processes (the
      pool's own ``Future.running()``), *pending* the rest;
    - a throttle or rate limit executor: *pending* waits in its queue, *running* has
      been passed on to the delegate and is not done;
    - a retry executor: *pending* waits for its next attempt (the delay of the
      retry policy), *running* has an attempt on the delegate (or being decided);
    - every other layer (the sync executor, which runs the callable inside
      ``submit``; poll, timeout, map, flat map, cancel-on-shutdown and asyncio,
      which pass every callable on at once; Dask and Ray, which do not say when a
      task starts): *pending* is always 0, and *running* is every future not done.

    Attributes:
        kind: the executor's kind, the ``type`` label of its metrics
            (``threadpool``, ``processpool``, ``interpreterpool``, ``sync``,
            ``poll``, ``retry``,
            ``timeout``, ``map``, ``flat_map``, ``throttle``, ``rate_limit``,
            ``cancel_on_shutdown``, ``asyncio``, ``dask``, ``ray``).
        name: the executor's name (its ``name`` property).
        submitted: futures returned by ``submit`` since the executor was created
            (``int``). Where the delegate's (or the other system's) ``submit``
            raises, a throttle or rate limit returns a failed future, counted as
            such; a poll executor, Dask and Ray count the call as a future that
            failed, though ``submit`` raises; the other layers count nothing.
        pending: futures not done whose work has not started, now (``int``).
        running: futures not done whose work has started, now (``int``).
        done: futures done since the executor was created, whatever their outcome:
            those that failed and were cancelled included (``int``).
        failed: futures done with an exception (``int``).
        cancelled: futures done cancelled (``int``).

    .. versionadded:: 0.2.0
    """

    kind: str
    name: str
    submitted: int
    pending: int
    running: int
    done: int
    failed: int
    cancelled: int

    @property
    def in_progress(self) -> int:
        """The futures not yet done, now, ``pending + running`` (``int``)."""
        return self.pending + self.running

    @property
    def succeeded(self) -> int:
        """The futures done with a result, ``done - failed - cancelled`` (``int``)."""
        return self.done - self.failed - self.cancelled


@dataclass(frozen=True, kw_only=True)
class PollStats(ExecutorStats):
    """The stats of a :class:`~fluent_executors.PollExecutor`: those of every
    executor (:class:`ExecutorStats`; *running* is every future not done) and its
    poll function's.

    Attributes:
        polls: calls of the poll function since the executor was created (``int``).
        poll_errors: those calls that raised (``int``).
        poll_timeouts: calls of a synchronous poll function that ran longer than
            its ``poll_timeout`` (``int``).
        polled: futures being polled now: their delegate's future is done, they are
            not (``int``).
        store_errors: calls of its store (durable polling: ``store=``) that
            failed, each logged at the start and the end of an outage (``int``;
            0 without a store).

    .. versionadded:: 0.2.0
    """

    polls: int
    poll_errors: int
    poll_timeouts: int
    polled: int
    store_errors: int = 0


@dataclass(frozen=True, kw_only=True)
class RetryStats(ExecutorStats):
    """The stats of a :class:`~fluent_executors.RetryExecutor`: those of every
    executor (:class:`ExecutorStats`; *pending* waits for its next attempt) and its
    retries'.

    Attributes:
        attempts: callables submitted to the delegate, first attempts included
            (``int``).
        retries: retries scheduled: the policy gave a delay after an attempt
            (``int``). A retry cancelled during its delay is counted here, not in
            ``attempts``.

    .. versionadded:: 0.2.0
    """

    attempts: int
    retries: int


@dataclass(frozen=True, kw_only=True)
class TimeoutStats(ExecutorStats):
    """The stats of a :class:`~fluent_executors.TimeoutExecutor`: those of every
    executor (:class:`ExecutorStats`) and its timeouts'.

    Attributes:
        timeouts: timeouts that expired before their future was done, whether or
            not the cancel they made succeeded (``int``).

    .. versionadded:: 0.2.0
    """

    timeouts: int


@dataclass(frozen=True, kw_only=True)
class QueueStats(ExecutorStats):
    """The stats of a :class:`~fluent_executors.ThrottleExecutor` or a
    :class:`~fluent_executors.RateLimitExecutor`: those of every executor
    (:class:`ExecutorStats`; *pending* waits in the queue) and its queue's.

    Attributes:
        queued: callables waiting in the queue now, not yet passed on to the
            delegate (``int``; the same as ``pending``, named as the metric
            ``fluent_executors_throttle_queue_length``).

    .. versionadded:: 0.2.0
    """

    queued: int


@dataclass(frozen=True, kw_only=True)
class RateLimitStats(QueueStats):
    """The stats of a :class:`~fluent_executors.RateLimitExecutor`: those of a
    queue (:class:`QueueStats`) and its current limit.

    Attributes:
        rate: the calls allowed per period now (``float``): ``max_calls`` without
            ``adaptive``; with it, lower after failures that said "too many",
            growing back towards ``max_calls`` with each success. At most
            ``int(rate)`` calls, and never fewer than 1, begin in any period.
        cuts: how many times ``adaptive`` cut the rate (``int``; 0 without it).
        paused: whether the executor waits now for the end of a ``Retry-After``
            pause (``bool``).

    .. versionadded:: 0.2.0
    """

    rate: float
    cuts: int
    paused: bool


@dataclass(frozen=True, kw_only=True)
class SchedulerStats:
    """The state of the shared scheduler thread, ``fluent-executors-scheduler``,
    which runs the timers of every retry, timeout, rate limit and ``f_timeout`` of
    the process, and of its worker threads: returned by :func:`scheduler_stats`.

    Callbacks that may block (a timeout's cancel, a retry's next submit, a rate
    limit passing queued callables on) run in up to four worker threads; when
    ``callbacks_queued`` stays above zero, those workers are starved (all busy),
    and timeouts and retries fire late.

    Attributes:
        timers_pending: timers scheduled and neither due, run nor cancelled
            (``int``).
        callbacks_queued: callbacks due that wait for a worker thread (``int``).
        workers_busy: worker threads running a callback, or about to (``int``).
        workers: worker threads alive, busy or idle (``int``; at most four).

    .. versionadded:: 0.2.0
    """

    timers_pending: int
    callbacks_queued: int
    workers_busy: int
    workers: int


def scheduler_stats() -> SchedulerStats:
    """A snapshot of the shared scheduler thread and its workers.

    Returns:
        A :class:`SchedulerStats`.

    .. versionadded:: 0.2.0
    """
    timers, queued, busy, workers = scheduler.counts()
    return SchedulerStats(
        timers_pending=timers,
        callbacks_queued=queued,
        workers_busy=busy,
        workers=workers,
    )


publish("fluent_executors", *(globals()[name] for name in __all__))
