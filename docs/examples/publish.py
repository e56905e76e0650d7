"""Publish many objects through a remote task service, polling all their tasks at once.

A publish request starts a task on the service and answers at once with the task's
id; the task ends later. A :class:`~fluent_executors.PollExecutor` gives each task a
future: the publish request runs on a thread pool, and then one poll function checks
*every* outstanding task with a single search request per interval and resolves the
futures of the tasks that have ended. The service answers at most 100 ids per
search, so the poll executor passes the poll function at most that many at once
(``max_batch``), and it refuses some searches with a transient ``503`` and a
``Retry-After`` header: the poll retry policy keeps the futures of such a poll
pending and polls again after the delay the service asked for
(``poll_retry_policy``), so no future fails because of it. ``--poll status`` polls
instead with an async poll function that asks about each task with its own
``GET /tasks/<id>`` request, hundreds at once on one thread (``httpx``).

Around it, a :class:`~fluent_executors.TimeoutExecutor` cancels each task not done
in time, and a :class:`~fluent_executors.RetryExecutor` publishes again when the
service answered a publish request with a transient ``503 Service Unavailable``. A
task that ran and failed is not retried: that is a real failure.

Run it; it starts its own task service (``task_service.py``) on 127.0.0.1::

    python publish.py                  # 500 tasks
    python publish.py --timeout 4      # cancel each task not done 4 s after publish
    python publish.py --cancel-after 3 # cancel the tasks still running after 3 s
    python publish.py --poll status    # one async GET per task and poll
    python publish.py --url http://127.0.0.1:8000  # use a running task_service.py
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import functools
import logging
import math
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from http import HTTPStatus
from typing import Any, Literal

import httpx
import requests
from task_service import (
    CANCEL,
    ENDPOINTS,
    MAX_SEARCH,
    PUBLISH,
    SEARCH,
    STATUS,
    TaskServer,
    add_service_arguments,
    service_from_arguments,
)
from typing_extensions import NotRequired, TypedDict

from fluent_executors import ExceptionRetryPolicy, Executors, PollDescriptor, progress

REQUEST_TIMEOUT = 10.0
"""Seconds to wait for the service to answer a request."""

PUBLISH_ATTEMPTS = 5
"""The most attempts at publishing one object while the service answers 503."""

POLL_ATTEMPTS = 10
"""The most failed poll calls in a row before the futures of a poll fail."""

STATUS_REQUESTS_AT_ONCE = 50
"""With ``--poll status``: the most ``GET /tasks/<id>`` requests in flight at once."""


class PublishedTask(TypedDict):
    """The service's answer to a publish request: what the poll function and the
    cancel function receive for each future."""

    task_id: int
    object_id: NotRequired[str]  # the object published, where the caller adds it


class TaskState(TypedDict):
    """One task in the service's answer to a search request."""

    task_id: int
    state: str  # "pending", "running", "finished", "error" or "cancelled"
    error: NotRequired[str]  # why the task failed, in the "error" state


class ServiceUnavailable(requests.HTTPError):
    """The service answered a request with ``503 Service Unavailable``.

    It did nothing (started no task, searched nothing): the request is worth
    trying again shortly, after ``retry_after`` seconds if the service said so.
    """

    def __init__(
        self, response: requests.Response, retry_after: float | None = None
    ) -> None:
        super().__init__(
            f"503 Service Unavailable for url: {response.url}", response=response
        )
        self.retry_after = retry_after


class TaskFailed(Exception):
    """A remote task ended in the ``error`` state.

    Attributes:
        task_id: the task's id.
        error: the service's error message.
    """

    def __init__(self, task_id: int, error: str) -> None:
        super().__init__(task_id, error)
        self.task_id = task_id
        self.error = error

    def __str__(self) -> str:
        return f"task {self.task_id} failed: {self.error}"


class TaskClient:
    """The task service's client: the three callables that a PollExecutor needs.

    - :meth:`publish` is submitted to the executor and runs on its thread pool;
    - :meth:`poll_tasks` is the poll function and runs on the executor's poll thread;
    - :meth:`cancel_task` is the cancel function and runs in the thread that calls
      ``cancel()`` on a future.

    All three send their requests through one :class:`requests.Session`, from
    several threads at once. That is safe here: its connection pool is thread-safe,
    and nothing changes the session's state (cookies, headers) once it is made.
    Note that the client holds no reference to the executor: an executor that its
    own poll function references can only end its poll thread by ``shutdown()``.

    Args:
        url: the service's base URL, for example ``http://127.0.0.1:8000``.
        session: the HTTP session to send the requests with.
    """

    def __init__(self, url: str, session: requests.Session) -> None:
        self._url = url.rstrip("/")
        self._session = session
        self._lock = threading.Lock()
        self._requests: Counter[str] = Counter()
        self._answered_503: Counter[str] = Counter()
        # How many task states the searches returned. One GET request per task and
        # poll would have taken as many requests. Only the poll thread writes it.
        self.status_checks = 0

    def publish(self, object_id: str) -> PublishedTask:
        """Start publishing ``object_id`` on the service.

        Returns:
            The service's answer, ``{"task_id": ...}``: the future is polled with it.

        Raises:
            ServiceUnavailable: the service answered 503 and started no task.
            requests.RequestException: the request failed or the service refused it
                otherwise; the future fails with it.
        """
        response = self._send(PUBLISH, "POST", f"/object/{object_id}/publish")
        self._raise_for_status(PUBLISH, response)
        task: PublishedTask = response.json()
        return task

    def poll_tasks(self, descriptors: list[PollDescriptor[PublishedTask]]) -> None:
        """Check the tasks of the futures being polled, in one search request (the
        executor passes at most ``max_batch``, :data:`MAX_SEARCH`, at once).

        Resolves the future of each task that has finished, fails the future of each
        task that has failed with :class:`TaskFailed`, and leaves the others pending
        until the next poll. Returns ``None``: the next poll is after the executor's
        ``default_interval``.

        Raises:
            ServiceUnavailable: the service answered 503; the poll retry policy
                keeps the futures pending and polls again after its Retry-After.
            requests.RequestException: the search failed otherwise; the poll retry
                policy decides (a connection error is retried, the rest fail every
                future of this poll).
        """
        task_ids = [descriptor.result["task_id"] for descriptor in descriptors]
        response = self._send(SEARCH, "POST", "/tasks/search", {"task_id": task_ids})
        self._raise_for_status(SEARCH, response)
        self.status_checks += len(task_ids)
        tasks: dict[int, TaskState] = {
            task["task_id"]: task for task in response.json()
        }
        for descriptor, task_id in zip(descriptors, task_ids, strict=True):
            _resolve(descriptor, tasks.get(task_id))

    async def poll_each_task(
        self, descriptors: list[PollDescriptor[PublishedTask]]
    ) -> None:
        """The poll function of ``--poll status``: asks about each task with a
        ``GET /tasks/<id>`` of its own, at most :data:`STATUS_REQUESTS_AT_ONCE` at
        once, all on the poll thread's event loop. Resolves the futures as
        :meth:`poll_tasks` does.

        Raises:
            httpx.HTTPError: a request failed; the poll retry policy decides.
        """
        limit = asyncio.Semaphore(STATUS_REQUESTS_AT_ONCE)
        async with httpx.AsyncClient(
            base_url=self._url, timeout=REQUEST_TIMEOUT
        ) as http:

            async def check(descriptor: PollDescriptor[PublishedTask]) -> None:
                task_id = descriptor.result["task_id"]
                async with limit:
                    self._count(STATUS)
                    response = await http.get(f"/tasks/{task_id}")
                if response.status_code == HTTPStatus.NOT_FOUND:
                    return  # not known (yet): ask again next time
                response.raise_for_status()
                self.status_checks += 1  # on the one loop: no race
                _resolve(descriptor, response.json())

            await asyncio.gather(*(check(d) for d in descriptors))

    def cancel_task(self, task: PublishedTask) -> bool:
        """Cancel ``task`` on the service.

        Returns:
            ``True`` if the service cancelled the task, and so the future may be
            cancelled; ``False`` if it refused, for example because the task has
            just ended (the next poll resolves the future then).
        """
        return self._send(CANCEL, "DELETE", f"/tasks/{task['task_id']}").ok

    def request_counts(self) -> dict[str, int]:
        """Return how many requests this client has sent to each endpoint."""
        with self._lock:
            return {endpoint: self._requests[endpoint] for endpoint in ENDPOINTS}

    def answered_503(self) -> dict[str, int]:
        """Return how many requests of each endpoint the service answered with 503."""
        with self._lock:
            return {endpoint: self._answered_503[endpoint] for endpoint in ENDPOINTS}

    def _raise_for_status(self, endpoint: str, response: requests.Response) -> None:
        if response.status_code == HTTPStatus.SERVICE_UNAVAILABLE:
            with self._lock:
                self._answered_503[endpoint] += 1
            retry_after = response.headers.get("Retry-After")
            raise ServiceUnavailable(
                response, float(retry_after) if retry_after else None
            )
        response.raise_for_status()

    def _count(self, endpoint: str) -> None:
        with self._lock:
            self._requests[endpoint] += 1

    def _send(
        self,
        endpoint: str,
        method: str,
        path: str,
        body: dict[str, list[int]] | None = None,
    ) -> requests.Response:
        self._count(endpoint)
        return self._session.request(
            method, self._url + path, json=body, timeout=REQUEST_TIMEOUT
        )


def _resolve(descriptor: PollDescriptor[PublishedTask], task: TaskState | None) -> None:
    """Resolve the future of ``descriptor`` from its task's state, if it has ended."""
    if task is None:  # not found by the search (yet): ask again next time
        return
    if task["state"] == "finished":
        descriptor.yield_result()
    elif task["state"] == "error":
        error = task.get("error", "no error message")
        descriptor.yield_exception(TaskFailed(task["task_id"], error))
    # Otherwise the task is still under way: leave the future pending.


class RetryAfterPolicy(ExceptionRetryPolicy):
    """The poll retry policy: retries a failed poll call as
    :class:`~fluent_executors.ExceptionRetryPolicy` does, but never sooner than the
    ``Retry-After`` the service asked for; counts the errors it absorbs.

    Takes the arguments of :class:`~fluent_executors.ExceptionRetryPolicy`.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.absorbed = 0  # written by the poll thread only

    def sleep_time(self, attempt: int, future: Future[Any]) -> float:
        """The backoff's delay, or the error's ``retry_after`` if longer."""
        self.absorbed += 1  # asked once per failed poll call that it retries
        delay = super().sleep_time(attempt, future)
        retry_after = getattr(future.exception(), "retry_after", None)
        return delay if retry_after is None else max(delay, retry_after)


class RetryCounter:
    """Counts the retries of a retry policy, from any thread: pass
    :meth:`before_sleep` as the policy's ``before_sleep`` hook."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._retries = 0

    @property
    def retries(self) -> int:
        """How many retries the policy has decided so far."""
        with self._lock:
            return self._retries

    def before_sleep(self, attempt: int, future: Future[Any], delay: float) -> None:
        """Count one retry; called by the policy before it waits for the retry."""
        with self._lock:
            self._retries += 1


@dataclass(frozen=True)
class Summary:
    """What a run of the demo did.

    Attributes:
        tasks: how many objects were published.
        finished: how many futures resolved successfully.
        failed: how many futures failed.
        cancelled: how many futures were cancelled after ``cancel_after``.
        timed_out: how many futures were cancelled by the timeout.
        lost: how many futures had not ended once the executor was shut down (0:
            the executor never loses a future).
        failures: the failed futures by exception type, for example
            ``{"TaskFailed": 48}``.
        wall_time: seconds from the first submit to the end of the last future.
        status_checks: how many task states the searches returned: one GET request
            per task and poll would have taken as many requests.
        retries: how many times a publish was tried again.
        publish_503s: how many publish requests were answered 503.
        search_503s: how many searches were answered 503 (with Retry-After).
        poll_errors_absorbed: how many failed poll calls the poll retry policy
            retried, their futures left pending (none failed because of them).
        poll: how the tasks were polled, ``"search"`` (batches of at most
            :data:`MAX_SEARCH`) or ``"status"`` (an async request per task).
        requests: the HTTP requests per endpoint.
        counted_by: who counted :attr:`requests` and the 503 answers,
            ``"client"`` or ``"service"``.
    """

    tasks: int
    finished: int
    failed: int
    cancelled: int
    timed_out: int
    lost: int
    failures: dict[str, int]
    wall_time: float
    status_checks: int
    retries: int
    publish_503s: int
    search_503s: int
    poll_errors_absorbed: int
    poll: Literal["search", "status"]
    requests: dict[str, int]
    counted_by: Literal["client", "service"] = "client"

    def report(self) -> str:
        """Return the summary as text for people: what happened to the futures, in
        words, then what this run's kind of polling took; only what applies to it."""
        outcome = [
            f"{self.tasks:,} tasks in {self.wall_time:.1f} s: {self.finished:,} "
            f"finished, {self.failed:,} failed, {self.cancelled:,} cancelled, "
            f"{self.timed_out:,} timed out, {self.lost:,} lost.",
        ]
        for name, n in self.failures.items():
            meaning = _FAILURES.get(name, "see the exception's message")
            outcome.append(f"  failed: {n:,} with {name}, {meaning}.")
        if self.cancelled:
            outcome.append(
                f"  cancelled: {self.cancelled:,} still pending after --cancel-after, "
                "cancelled with their tasks (DELETE)."
            )
        if self.timed_out:
            outcome.append(
                f"  timed out: {self.timed_out:,} not done within --timeout, "
                "cancelled by the timeout executor with their tasks (DELETE)."
            )
        outcome.append(
            "  lost: a future still pending after the executor's shutdown; "
            + ("there is none." if not self.lost else f"{self.lost:,}: a bug.")
        )
        if self.publish_503s:
            outcome.append(
                f"Publishing: {self.publish_503s:,} publish requests answered 503 "
                f"Service Unavailable; the retry executor sent {self.retries:,} of "
                "them again."
            )
        if self.poll == "search":
            outcome.append(
                f"Polling with searches: {self.status_checks:,} task states checked "
                f"in {self.requests[SEARCH]:,} searches of at most {MAX_SEARCH} ids; "
                f"one {STATUS} per task and poll would have taken "
                f"{self.status_checks:,} requests."
            )
            if self.search_503s or self.poll_errors_absorbed:
                outcome.append(
                    f"  {self.search_503s:,} searches answered 503 with Retry-After: "
                    f"the poll retry policy absorbed {self.poll_errors_absorbed:,} "
                    "failed polls (their futures stayed pending and were polled "
                    "again)."
                )
        else:
            outcome.append(
                f"Polling with one {STATUS} per task and poll: "
                f"{self.status_checks:,} task states checked, up to "
                f"{STATUS_REQUESTS_AT_ONCE} requests at once on the poll thread."
            )
            if self.poll_errors_absorbed:
                outcome.append(
                    f"  the poll retry policy absorbed {self.poll_errors_absorbed:,} "
                    "failed polls (their futures stayed pending and were polled "
                    "again)."
                )
        lines = []
        for text in outcome:  # each wrapped, its next lines indented 2 more
            indent = " " * (len(text) - len(text.lstrip()))
            lines += textwrap.wrap(
                text.lstrip(),
                REPORT_WIDTH,
                initial_indent=indent,
                subsequent_indent=indent + "  ",
                break_on_hyphens=False,
            )
        lines.append(f"HTTP requests, counted by the {self.counted_by}:")
        lines += [
            f"  {endpoint:<28}{n:>8,}" for endpoint, n in self.requests.items() if n
        ]
        return "\n".join(lines)


REPORT_WIDTH = 88
"""The width of the summary's lines."""


# What a failure of each kind means, for the summary.
_FAILURES = {
    "TaskFailed": "the tasks that the service failed on purpose (--failure-rate)",
    "ServiceUnavailable": (
        f"publish requests answered 503 at all {PUBLISH_ATTEMPTS} attempts"
    ),
}


def publish_all(
    url: str,
    tasks: int,
    *,
    workers: int,
    interval: float,
    timeout: float = math.inf,
    cancel_after: float | None = None,
    poll: Literal["search", "status"] = "search",
) -> Summary:
    """Publish ``tasks`` objects through the service at ``url``; wait for every task.

    A publish request answered 503 is tried again after a short, random delay, up
    to :data:`PUBLISH_ATTEMPTS` attempts in all; each attempt has its own timeout.

    Args:
        url: the service's base URL.
        tasks: how many objects to publish.
        workers: how many publish requests may be in flight at once.
        interval: seconds between two polls.
        timeout: seconds from the submit of a publish within which its task must
            end: a future not done by then is cancelled, and so is its task (a
            future whose publish request is still in flight refuses, and is left
            to end); ``math.inf`` waits as long as it takes.
        cancel_after: if not ``None``, cancel the futures still pending after this
            many seconds, and so their tasks.
        poll: ``"search"``: one search request per poll and batch of at most
            :data:`MAX_SEARCH` tasks; ``"status"``: an async poll function, one
            ``GET /tasks/<id>`` per task.

    Returns:
        What happened, with the requests as this client counted them.
    """
    with requests.Session() as session:
        client = TaskClient(url, session)
        counter = RetryCounter()
        # A failed poll call (503 with Retry-After, a dropped connection) leaves its
        # futures pending and is tried again; only POLL_ATTEMPTS failures in a row
        # fail them.
        poll_policy = RetryAfterPolicy(
            max_attempts=POLL_ATTEMPTS,
            sleep=interval,
            max_sleep=5.0,
            exception_base=(
                ServiceUnavailable,
                requests.ConnectionError,
                requests.Timeout,
                httpx.TransportError,
            ),
        )
        # Read inside-out: publish runs on the thread pool; the poll executor
        # resolves its future once the task has ended; the timeout cancels an attempt
        # not done in time; the retry executor submits a new attempt through all of
        # them when the last one failed with a 503. Nothing else is retried: not a
        # failed task (TaskFailed), nor a timed-out attempt, whose CancelledError
        # exception_base leaves out too (the default, Exception, would retry it).
        executor = (
            Executors.thread_pool(max_workers=workers, name="publish")
            .with_poll(
                client.poll_tasks if poll == "search" else client.poll_each_task,
                client.cancel_task,
                interval,
                poll_retry_policy=poll_policy,
                max_batch=MAX_SEARCH if poll == "search" else None,
            )
            .with_timeout(timeout)
            .with_retry(
                ExceptionRetryPolicy(
                    max_attempts=PUBLISH_ATTEMPTS,
                    sleep=0.1,  # then up to 0.2 s, 0.4 s, 0.8 s
                    jitter=True,  # clients refused together do not retry together
                    exception_base=ServiceUnavailable,
                    before_sleep=counter.before_sleep,
                )
            )
        )
        started = time.monotonic()
        try:
            futures = [
                executor.submit(client.publish, f"object-{n}") for n in range(tasks)
            ]
            cancelled_here = _wait_for(futures, cancel_after, interval)
        finally:
            # Every future has ended by now, unless something went wrong (Ctrl-C):
            # then cancel the rest, remote tasks included, rather than wait for them.
            executor.shutdown(cancel_futures=True)
        wall_time = time.monotonic() - started
    lost = sum(not future.done() for future in futures)
    outcomes = Counter(
        _outcome(future, cancelled_here) for future in futures if future.done()
    )
    finished = outcomes.pop("finished", 0)
    cancelled = outcomes.pop("cancelled", 0)
    timed_out = outcomes.pop("timed out", 0)
    return Summary(
        tasks=tasks,
        finished=finished,
        failed=outcomes.total(),
        cancelled=cancelled,
        timed_out=timed_out,
        lost=lost,
        failures=dict(outcomes.most_common()),
        wall_time=wall_time,
        status_checks=client.status_checks,
        retries=counter.retries,
        publish_503s=client.answered_503()[PUBLISH],
        search_503s=client.answered_503()[SEARCH],
        poll_errors_absorbed=poll_policy.absorbed,
        poll=poll,
        requests=client.request_counts(),
    )


def _wait_for(
    futures: Sequence[Future[PublishedTask]],
    cancel_after: float | None,
    retry_interval: float,
) -> set[Future[PublishedTask]]:
    """Wait for every future to end, showing progress: a bar on a terminal, else
    (under nox, in a log) a line every :data:`PROGRESS_EVERY` seconds; after
    ``cancel_after`` seconds, cancel those still pending.

    Returns:
        The futures that this function cancelled.
    """
    pending = set(futures)
    cancelled: set[Future[PublishedTask]] = set()
    timeout = cancel_after
    bar = sys.stderr.isatty()  # where tqdm draws
    while pending:
        try:
            if bar:
                _wait_with_bar(pending, timeout, len(futures))
            else:
                _wait_with_lines(pending, timeout, len(futures))
        except concurrent.futures.TimeoutError:
            for future in pending:
                # (One that its timeout has cancelled is not ours to count.)
                if not future.cancelled() and future.cancel():
                    cancelled.add(future)
            # A future whose publish request is in flight refuses to be cancelled
            # (there is no task to cancel yet): try again shortly.
            timeout = retry_interval
    return cancelled


PROGRESS_EVERY = 1.0
"""Seconds between two progress lines, where no progress bar can be drawn."""


def _wait_with_bar(
    pending: set[Future[PublishedTask]], timeout: float | None, total: int
) -> None:
    """Remove the futures of ``pending`` as they end, counted by a tqdm bar of
    ``total`` (one bar across calls: it starts where the last one ended).

    Raises:
        concurrent.futures.TimeoutError: some are pending after ``timeout`` s.
    """
    for future in progress(
        set(pending), timeout, total=total, initial=total - len(pending), unit="task"
    ):
        pending.remove(future)


def _wait_with_lines(
    pending: set[Future[PublishedTask]], timeout: float | None, total: int
) -> None:
    """Remove the futures of ``pending`` as they end, printing how many of
    ``total`` have ended every :data:`PROGRESS_EVERY` seconds and at the end.

    Raises:
        concurrent.futures.TimeoutError: some are pending after ``timeout`` s.
    """
    deadline = math.inf if timeout is None else time.monotonic() + timeout
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            raise concurrent.futures.TimeoutError
        done, _ = concurrent.futures.wait(pending, min(left, PROGRESS_EVERY))
        pending -= done
        print(
            f"  {total - len(pending):,} of {total:,} tasks ended, "
            f"{len(pending):,} still pending",
            flush=True,
        )


def _outcome(
    future: Future[PublishedTask], cancelled_here: set[Future[PublishedTask]]
) -> str:
    """``"finished"``, ``"cancelled"`` (by :func:`_wait_for`), ``"timed out"``, or
    the type of the exception it failed with."""
    if future.cancelled():
        return "cancelled" if future in cancelled_here else "timed out"
    error = future.exception(timeout=0)
    return "finished" if error is None else type(error).__name__


def run(argv: Sequence[str] | None = None) -> Summary:
    """Run the demo with the command-line arguments ``argv``; return its summary.

    Without ``--url`` it serves its own task service meanwhile, and the summary has
    the requests and the 503 answers as the service counted them.
    """
    parser = _parser()
    arguments = parser.parse_args(argv)
    publish = functools.partial(
        publish_all,
        tasks=arguments.tasks,
        workers=arguments.workers,
        interval=arguments.interval,
        timeout=arguments.timeout,
        cancel_after=arguments.cancel_after,
        poll=arguments.poll,
    )
    if arguments.url is not None:
        return publish(arguments.url)
    service = service_from_arguments(parser, arguments)
    with TaskServer(service) as server:
        summary = publish(server.url)
    return replace(
        summary,
        requests=service.request_counts(),
        publish_503s=service.answered_503()[PUBLISH],
        search_503s=service.answered_503()[SEARCH],
        counted_by="service",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo and print its summary.

    Returns:
        The exit status: 0 once every future has ended, 1 if one was lost.
    """
    # The summary counts the failed polls that the poll retry policy absorbed; the
    # library also logs each at WARNING, with its traceback: not needed here.
    poll_logger = logging.getLogger("fluent_executors.poll")
    level = poll_logger.level
    poll_logger.setLevel(logging.ERROR)
    try:
        summary = run(argv)
    finally:
        poll_logger.setLevel(level)
    print(summary.report())
    return 1 if summary.lost else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Publish objects through a remote task service and poll their "
        "tasks with one search request per interval and batch of 100; ride out "
        "the 503 answers, and cancel the tasks not done in time."
    )
    parser.add_argument(
        "--tasks",
        type=_positive_int,
        default=500,
        help="how many objects to publish (default: %(default)s)",
    )
    parser.add_argument(
        "--workers",
        type=_positive_int,
        default=8,
        help="publish requests in flight at once (default: %(default)s)",
    )
    parser.add_argument(
        "--interval",
        type=_seconds,
        default=0.5,
        metavar="SECONDS",
        help="time between two polls (default: %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=math.inf,
        metavar="SECONDS",
        help="cancel each task not done this long after its publish, and count it "
        "as timed out (default: no timeout)",
    )
    parser.add_argument(
        "--cancel-after",
        type=_seconds,
        metavar="SECONDS",
        help="cancel the tasks still pending after this time",
    )
    parser.add_argument(
        "--poll",
        choices=["search", "status"],
        default="search",
        help="search: one search request per poll and batch of at most "
        f"{MAX_SEARCH} tasks; status: an async poll function, one GET per task "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--url",
        help="base URL of a running task service (python task_service.py); "
        "default: serve one on 127.0.0.1, configured by the options below",
    )
    add_service_arguments(parser)
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}")
    return value


if __name__ == "__main__":
    raise SystemExit(main())
