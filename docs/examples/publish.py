"""Publish many objects through a remote task service, polling all their tasks at once.

A publish request starts a task on the service and answers at once with the task's
id; the task ends later. A :class:`~fluent_executors.PollExecutor` gives each task a
future: the publish request runs on a thread pool, and then one poll function checks
*every* outstanding task with a single search request per interval and resolves the
futures of the tasks that have ended.

Around it, a :class:`~fluent_executors.TimeoutExecutor` cancels each task not done
in time, and a :class:`~fluent_executors.RetryExecutor` publishes again when the
service answered a publish request with a transient ``503 Service Unavailable``. A
task that ran and failed is not retried: that is a real failure.

Run it; it starts its own task service (``task_service.py``) on 127.0.0.1::

    python publish.py                  # 500 tasks
    python publish.py --timeout 4      # cancel each task not done 4 s after publish
    python publish.py --cancel-after 3 # cancel the tasks still running after 3 s
    python publish.py --url http://127.0.0.1:8000  # use a running task_service.py
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import math
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from http import HTTPStatus
from typing import Any, Literal

import requests
from task_service import (
    CANCEL,
    ENDPOINTS,
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


class PublishedTask(TypedDict):
    """The service's answer to a publish request: what the poll function and the
    cancel function receive for each future."""

    task_id: int


class TaskState(TypedDict):
    """One task in the service's answer to a search request."""

    task_id: int
    state: str  # "pending", "running", "finished", "error" or "cancelled"
    error: NotRequired[str]  # why the task failed, in the "error" state


class ServiceUnavailable(requests.HTTPError):
    """The service answered a publish request with ``503 Service Unavailable``.

    It started no task: the request is worth trying again shortly.
    """


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
        self._publish_503s = 0
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
        if response.status_code == HTTPStatus.SERVICE_UNAVAILABLE:
            with self._lock:
                self._publish_503s += 1
            raise ServiceUnavailable(
                f"503 Service Unavailable for url: {response.url}", response=response
            )
        response.raise_for_status()
        task: PublishedTask = response.json()
        return task

    def poll_tasks(self, descriptors: list[PollDescriptor[PublishedTask]]) -> None:
        """Check the tasks of all the futures being polled, in one search request.

        Resolves the future of each task that has finished, fails the future of each
        task that has failed with :class:`TaskFailed`, and leaves the others pending
        until the next poll. Returns ``None``: the next poll is after the executor's
        ``default_interval``.

        Raises:
            requests.RequestException: the search failed; every future of this poll
                fails with it. (To ride out such errors instead, catch them and
                return the delay until the next try.)
        """
        task_ids = [descriptor.result["task_id"] for descriptor in descriptors]
        response = self._send(SEARCH, "POST", "/tasks/search", {"task_id": task_ids})
        response.raise_for_status()
        self.status_checks += len(task_ids)
        tasks: dict[int, TaskState] = {
            task["task_id"]: task for task in response.json()
        }
        for descriptor, task_id in zip(descriptors, task_ids, strict=True):
            task = tasks.get(task_id)
            if task is None:  # not found by the search (yet): ask again next time
                continue
            if task["state"] == "finished":
                descriptor.yield_result()
            elif task["state"] == "error":
                error = task.get("error", "no error message")
                descriptor.yield_exception(TaskFailed(task_id, error))
            # Otherwise the task is still under way: leave the future pending.

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

    def publish_503s(self) -> int:
        """Return how many publish requests the service answered with 503."""
        with self._lock:
            return self._publish_503s

    def _send(
        self,
        endpoint: str,
        method: str,
        path: str,
        body: dict[str, list[int]] | None = None,
    ) -> requests.Response:
        with self._lock:
            self._requests[endpoint] += 1
        return self._session.request(
            method, self._url + path, json=body, timeout=REQUEST_TIMEOUT
        )


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
        failures: the failed futures by exception type, for example
            ``{"TaskFailed": 48}``.
        wall_time: seconds from the first submit to the end of the last future.
        status_checks: how many task states the searches returned: one GET request
            per task and poll would have taken as many requests.
        retries: how many times a publish was tried again.
        publish_503s: how many publish requests were answered 503.
        requests: the HTTP requests per endpoint.
        counted_by: who counted :attr:`requests` and :attr:`publish_503s`,
            ``"client"`` or ``"service"``.
    """

    tasks: int
    finished: int
    failed: int
    cancelled: int
    timed_out: int
    failures: dict[str, int]
    wall_time: float
    status_checks: int
    retries: int
    publish_503s: int
    requests: dict[str, int]
    counted_by: Literal["client", "service"] = "client"

    def report(self) -> str:
        """Return the summary as text for people."""
        failed = f"{self.failed:,} failed"
        if self.failures:
            kinds = ", ".join(f"{name}: {n:,}" for name, n in self.failures.items())
            failed += f" ({kinds})"
        lines = [
            f"{self.tasks:,} tasks in {self.wall_time:.1f} s: {self.finished:,} "
            f"finished, {failed}, {self.cancelled:,} cancelled, {self.timed_out:,} "
            "timed out.",
            f"{self.retries:,} retries, after {self.publish_503s:,} publish requests "
            "answered 503 Service Unavailable.",
            f"HTTP requests, counted by the {self.counted_by}:",
            *(f"  {endpoint:<28}{n:>8,}" for endpoint, n in self.requests.items()),
            f"Polling checked {self.status_checks:,} task states in "
            f"{self.requests[SEARCH]:,} searches; one {STATUS} per task and poll",
            f"would have taken {self.status_checks:,} requests.",
        ]
        return "\n".join(lines)


def publish_all(
    url: str,
    tasks: int,
    *,
    workers: int,
    interval: float,
    timeout: float = math.inf,
    cancel_after: float | None = None,
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

    Returns:
        What happened, with the requests as this client counted them.
    """
    with requests.Session() as session:
        client = TaskClient(url, session)
        counter = RetryCounter()
        # Read inside-out: publish runs on the thread pool; the poll executor
        # resolves its future once the task has ended; the timeout cancels an attempt
        # not done in time; the retry executor submits a new attempt through all of
        # them when the last one failed with a 503. Nothing else is retried: not a
        # failed task (TaskFailed), nor a timed-out attempt, whose CancelledError
        # exception_base leaves out too (the default, Exception, would retry it).
        executor = (
            Executors.thread_pool(max_workers=workers, name="publish")
            .with_poll(
                client.poll_tasks,
                cancel_fn=client.cancel_task,
                default_interval=interval,
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
    outcomes = Counter(_outcome(future, cancelled_here) for future in futures)
    finished = outcomes.pop("finished", 0)
    cancelled = outcomes.pop("cancelled", 0)
    timed_out = outcomes.pop("timed out", 0)
    return Summary(
        tasks=tasks,
        finished=finished,
        failed=outcomes.total(),
        cancelled=cancelled,
        timed_out=timed_out,
        failures=dict(outcomes.most_common()),
        wall_time=wall_time,
        status_checks=client.status_checks,
        retries=counter.retries,
        publish_503s=client.publish_503s(),
        requests=client.request_counts(),
    )


def _wait_for(
    futures: Sequence[Future[PublishedTask]],
    cancel_after: float | None,
    retry_interval: float,
) -> set[Future[PublishedTask]]:
    """Wait for every future to end, showing progress; after ``cancel_after``
    seconds, cancel those still pending.

    Returns:
        The futures that this function cancelled.
    """
    pending = set(futures)
    cancelled: set[Future[PublishedTask]] = set()
    timeout = cancel_after
    while pending:
        # One bar across the rounds: each round's bar starts where the last one ended.
        done_so_far = len(futures) - len(pending)
        try:
            for future in progress(
                pending,
                timeout,
                total=len(futures),
                initial=done_so_far,
                unit="task",
                disable=None,
            ):
                pending.remove(future)
        except concurrent.futures.TimeoutError:
            for future in pending:
                # (One that its timeout has cancelled is not ours to count.)
                if not future.cancelled() and future.cancel():
                    cancelled.add(future)
            # A future whose publish request is in flight refuses to be cancelled
            # (there is no task to cancel yet): try again shortly.
            timeout = retry_interval
    return cancelled


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
    )
    if arguments.url is not None:
        return publish(arguments.url)
    service = service_from_arguments(parser, arguments)
    with TaskServer(service) as server:
        summary = publish(server.url)
    return replace(
        summary,
        requests=service.request_counts(),
        publish_503s=service.publish_503s(),
        counted_by="service",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo and print its summary.

    Returns:
        The exit status: 0, once every future has ended.
    """
    print(run(argv).report())
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Publish objects through a remote task service and poll all "
        "their tasks with one search request per interval; retry the publish "
        "requests answered 503, and cancel the tasks not done in time."
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
