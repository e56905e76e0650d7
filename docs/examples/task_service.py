"""A remote task service over real HTTP, for the PollExecutor demo (``publish.py``).

Publishing an object starts a task on the service. The task takes a random time and
fails at a given rate, as real remote work does; clients poll the states of their
tasks and may cancel the tasks that have not ended. Like a busy real service, it also
refuses some publish requests and some searches at given rates with a transient
``503 Service Unavailable`` (a search's with a ``Retry-After`` header), which a
client should retry, and it answers at most :data:`MAX_SEARCH` task ids per search.
The HTTP API, JSON in and out:

- ``POST /object/<id>/publish`` starts a task: 202, ``{"task_id": 1}``; or, at the
  given rate, starts none: 503.
- ``GET /tasks/<task_id>``: the task, ``{"task_id": 1, "state": "running"}``.
- ``DELETE /tasks/<task_id>`` cancels a task that has not ended: 200 and the task;
  409 if it has ended.
- ``GET /object/<id>/tasks``: the ids of the tasks started for an object,
  ``[1]`` (``[]`` if none): a client that lost track of a publish asks with it.
- ``POST /tasks/search`` with ``{"task_id": [1, 2]}``: a list of those tasks, each
  as above, with an ``error`` message when the state is ``error``; 400 for more
  than :data:`MAX_SEARCH` ids; or, at the given rate, 503 with ``Retry-After: 1``
  (seconds).

A task is ``pending`` for the first half of its time and ``running`` for the second,
then ``finished``, or ``error`` with an ``error`` message; DELETE makes a pending or
running task ``cancelled``. An unknown task id is a 404 (the search leaves it out of
its answer). States follow from the clock: no thread runs the tasks.

Run it on its own::

    python task_service.py --port 8000 --failure-rate 0.2 --publish-503-rate 0.1 \
        --search-503-rate 0.1

or embed it, serving on a free port of 127.0.0.1 in a background thread::

    with TaskServer(TaskService(max_duration=2.0)) as server:
        requests.post(f"{server.url}/object/42/publish", timeout=10)
        print(server.service.request_counts(), server.service.answered_503())
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import socketserver
import threading
import time
from collections import Counter
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from werkzeug.exceptions import (
    BadRequest,
    Conflict,
    HTTPException,
    NotFound,
    ServiceUnavailable,
)
from werkzeug.routing import Map, Rule
from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from _typeshed.wsgi import StartResponse, WSGIEnvironment

# The endpoints, as named in the request counts.
PUBLISH = "POST /object/<id>/publish"
STATUS = "GET /tasks/<task_id>"
CANCEL = "DELETE /tasks/<task_id>"
SEARCH = "POST /tasks/search"
OBJECT_TASKS = "GET /object/<id>/tasks"
ENDPOINTS = (PUBLISH, STATUS, CANCEL, SEARCH, OBJECT_TASKS)

DEFAULT_MIN_DURATION = 1.0
DEFAULT_MAX_DURATION = 8.0
DEFAULT_FAILURE_RATE = 0.1
DEFAULT_PUBLISH_503_RATE = 0.05
DEFAULT_SEARCH_503_RATE = 0.1
MAX_SEARCH = 100
"""The most task ids one search may ask about; a longer search is a 400."""
SEARCH_RETRY_AFTER = 1
"""The ``Retry-After`` of a search answered 503, in seconds."""


@dataclass
class _Task:
    """One task; its state is a function of the time."""

    task_id: int
    starts: float  # time.monotonic() at which it stops being pending
    ends: float  # time.monotonic() at which it finishes, or fails if error is set
    error: str | None
    cancelled: bool = False

    def state(self, now: float) -> str:
        if self.cancelled:
            return "cancelled"
        if now < self.starts:
            return "pending"
        if now < self.ends:
            return "running"
        return "finished" if self.error is None else "error"

    def to_json(self, now: float) -> dict[str, object]:
        state = self.state(now)
        body: dict[str, object] = {"task_id": self.task_id, "state": state}
        if state == "error":
            body["error"] = self.error
        return body


class TaskService:
    """The tasks and their HTTP API, as a thread-safe WSGI application.

    Args:
        min_duration: the shortest time a task takes, in seconds.
        max_duration: the longest time a task takes, in seconds; each task takes a
            random time in between.
        failure_rate: the share of tasks that end in the ``error`` state, from 0
            to 1.
        seed: seeds the random durations, failures and 503 answers, for repeatable
            runs.
        publish_503_rate: the share of publish requests answered ``503 Service
            Unavailable``, from 0 to 1; such a request starts no task.
        search_503_rate: the share of searches answered ``503 Service
            Unavailable`` with ``Retry-After``, from 0 to 1.

    Raises:
        ValueError: the durations are negative or in the wrong order, or a rate is
            not between 0 and 1.
    """

    def __init__(
        self,
        min_duration: float = DEFAULT_MIN_DURATION,
        max_duration: float = DEFAULT_MAX_DURATION,
        failure_rate: float = DEFAULT_FAILURE_RATE,
        seed: int | None = None,
        *,
        publish_503_rate: float = DEFAULT_PUBLISH_503_RATE,
        search_503_rate: float = DEFAULT_SEARCH_503_RATE,
    ) -> None:
        if not 0 <= min_duration <= max_duration:
            raise ValueError(
                "durations must satisfy 0 <= min_duration <= max_duration, got "
                f"min_duration={min_duration!r}, max_duration={max_duration!r}"
            )
        if not 0 <= failure_rate <= 1:
            raise ValueError(
                f"failure_rate must be between 0 and 1, got {failure_rate!r}"
            )
        for argument, rate in [
            ("publish_503_rate", publish_503_rate),
            ("search_503_rate", search_503_rate),
        ]:
            if not 0 <= rate <= 1:
                raise ValueError(f"{argument} must be between 0 and 1, got {rate!r}")
        self._min_duration = min_duration
        self._max_duration = max_duration
        self._failure_rate = failure_rate
        self._publish_503_rate = publish_503_rate
        self._search_503_rate = search_503_rate
        self._lock = threading.Lock()  # guards the random numbers, tasks and counts
        self._random = random.Random(seed)
        # The searches draw from a stream of their own: with a seed, the k-th
        # search's answer is the same whatever the publishes and timing did before.
        self._search_random = random.Random(seed)
        self._task_ids = itertools.count(1)
        self._tasks: dict[int, _Task] = {}
        self._object_tasks: dict[str, list[int]] = {}
        self._requests: Counter[str] = Counter()
        self._answered_503: Counter[str] = Counter()
        self._urls = Map(
            [
                Rule("/object/<object_id>/publish", methods=["POST"], endpoint=PUBLISH),
                Rule("/tasks/<int:task_id>", methods=["GET"], endpoint=STATUS),
                Rule("/tasks/<int:task_id>", methods=["DELETE"], endpoint=CANCEL),
                Rule("/tasks/search", methods=["POST"], endpoint=SEARCH),
                Rule(
                    "/object/<object_id>/tasks", methods=["GET"], endpoint=OBJECT_TASKS
                ),
            ]
        )
        self._handlers: dict[str, Callable[..., Response]] = {
            PUBLISH: self._publish,
            STATUS: self._status,
            CANCEL: self._cancel,
            SEARCH: self._search,
            OBJECT_TASKS: self._object_tasks_of,
        }

    def request_counts(self) -> dict[str, int]:
        """Return how many requests each endpoint has received, in the order of
        :data:`ENDPOINTS`. Requests that match no endpoint are not counted."""
        with self._lock:
            return {endpoint: self._requests[endpoint] for endpoint in ENDPOINTS}

    def publishes(self) -> dict[str, int]:
        """Return how many tasks were started for each object published so far."""
        with self._lock:
            return {name: len(ids) for name, ids in self._object_tasks.items()}

    def answered_503(self) -> dict[str, int]:
        """Return how many requests of each endpoint were answered ``503 Service
        Unavailable``, in the order of :data:`ENDPOINTS` (they are counted in
        :meth:`request_counts` too)."""
        with self._lock:
            return {endpoint: self._answered_503[endpoint] for endpoint in ENDPOINTS}

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        """Answer one HTTP request (the WSGI interface); called by the server."""
        request = Request(environ)
        try:
            endpoint, arguments = self._urls.bind_to_environ(environ).match()
            with self._lock:
                self._requests[endpoint] += 1
            response = self._handlers[endpoint](request, **arguments)
        except HTTPException as error:
            response = error.get_response(environ)
        return response(environ, start_response)

    def _publish(self, request: Request, object_id: str) -> Response:
        now = time.monotonic()
        with self._lock:
            if self._random.random() < self._publish_503_rate:
                self._answered_503[PUBLISH] += 1
                raise ServiceUnavailable("too busy to publish now; try again shortly")
            duration = self._random.uniform(self._min_duration, self._max_duration)
            fails = self._random.random() < self._failure_rate
            task = _Task(
                task_id=next(self._task_ids),
                starts=now + duration / 2,
                ends=now + duration,
                error=f"could not publish object {object_id!r}" if fails else None,
            )
            self._tasks[task.task_id] = task
            self._object_tasks.setdefault(object_id, []).append(task.task_id)
        return _json({"task_id": task.task_id}, status=202)

    def _status(self, request: Request, task_id: int) -> Response:
        with self._lock:
            body = self._task(task_id).to_json(time.monotonic())
        return _json(body)

    def _cancel(self, request: Request, task_id: int) -> Response:
        now = time.monotonic()
        with self._lock:
            task = self._task(task_id)
            if task.state(now) not in ("pending", "running"):
                raise Conflict(f"task {task_id} has already ended")
            task.cancelled = True
            body = task.to_json(now)
        return _json(body)

    def _object_tasks_of(self, request: Request, object_id: str) -> Response:
        with self._lock:
            return _json(list(self._object_tasks.get(object_id, [])))

    def _search(self, request: Request) -> Response:
        task_ids = _task_ids(request.get_json(silent=True))
        if len(task_ids) > MAX_SEARCH:
            raise BadRequest(
                f"at most {MAX_SEARCH} task ids per search, got {len(task_ids)}"
            )
        now = time.monotonic()
        with self._lock:
            if self._search_random.random() < self._search_503_rate:
                self._answered_503[SEARCH] += 1
                raise ServiceUnavailable(
                    "too busy to search now", retry_after=SEARCH_RETRY_AFTER
                )
            found = [
                self._tasks[task_id].to_json(now)
                for task_id in task_ids
                if task_id in self._tasks
            ]
        return _json(found)

    def _task(self, task_id: int) -> _Task:
        try:
            return self._tasks[task_id]
        except KeyError:
            raise NotFound(f"no task {task_id}") from None


def _task_ids(body: object) -> list[int]:
    """The task ids of a search request's body, ``{"task_id": [1, 2, ...]}``."""
    task_ids = body.get("task_id") if isinstance(body, dict) else None
    if not isinstance(task_ids, list) or not all(
        isinstance(task_id, int) and not isinstance(task_id, bool)
        for task_id in task_ids
    ):
        raise BadRequest('expected a JSON body {"task_id": [integers]}')
    return task_ids


def _json(body: object, status: int = 200) -> Response:
    return Response(json.dumps(body), status=status, mimetype="application/json")


class _RequestHandler(WSGIRequestHandler):
    # One request per connection. With keep-alive, each idle connection of a client
    # would hold a server thread, and closing the server would wait for the client
    # to hang up. (werkzeug reads this attribute on the handler class itself.)
    protocol_version = "HTTP/1.0"


class _QuietRequestHandler(WSGIRequestHandler):
    protocol_version = "HTTP/1.0"  # see _RequestHandler

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Log nothing: an embedded service must not write over its host's output."""


class TaskServer:
    """Serves a :class:`TaskService` over HTTP until :meth:`close`.

    As a context manager it serves in a background thread, from entering the
    ``with`` block to leaving it; :meth:`serve_forever` serves in the calling thread
    instead. Each request is answered in a thread of its own.

    Args:
        service: the service to serve; default a new ``TaskService()``.
        host: the address to listen on.
        port: the port to listen on; 0 picks a free one (see :attr:`url`).
        log_requests: log each request to the ``werkzeug`` logger.
    """

    def __init__(
        self,
        service: TaskService | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log_requests: bool = False,
    ) -> None:
        self.service = service if service is not None else TaskService()
        self._server = make_server(
            host,
            port,
            self.service,
            threaded=True,
            request_handler=_RequestHandler if log_requests else _QuietRequestHandler,
        )
        # werkzeug makes its request threads daemons, which socketserver then
        # neither tracks nor joins: close() would return while the last ones still
        # run. Tracked, they are joined by server_close().
        if isinstance(self._server, socketserver.ThreadingMixIn):
            self._server.daemon_threads = False
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL of the service, for example ``http://127.0.0.1:40123``."""
        return f"http://{self._server.host}:{self._server.port}"

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (``KeyboardInterrupt``)."""
        self._server.serve_forever()

    def close(self) -> None:
        """Stop serving, wait for the requests in progress, and release the port."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()  # also joins the threads of the last requests

    def __enter__(self) -> TaskServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            # How often it checks whether to stop: the default, 0.5 s, slows close().
            kwargs={"poll_interval": 0.05},
            name="task-service",
            daemon=True,
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def add_service_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of :class:`TaskService` to ``parser``; see
    :func:`service_from_arguments`."""
    group = parser.add_argument_group("simulated tasks")
    group.add_argument(
        "--min-duration",
        type=float,
        default=DEFAULT_MIN_DURATION,
        metavar="SECONDS",
        help="shortest time a task takes (default: %(default)s)",
    )
    group.add_argument(
        "--max-duration",
        type=float,
        default=DEFAULT_MAX_DURATION,
        metavar="SECONDS",
        help="longest time a task takes (default: %(default)s)",
    )
    group.add_argument(
        "--failure-rate",
        type=float,
        default=DEFAULT_FAILURE_RATE,
        metavar="RATE",
        help="share of tasks that fail, from 0 to 1 (default: %(default)s)",
    )
    group.add_argument(
        "--publish-503-rate",
        type=float,
        default=DEFAULT_PUBLISH_503_RATE,
        metavar="RATE",
        help="share of publish requests refused with a transient 503 Service "
        "Unavailable, from 0 to 1 (default: %(default)s)",
    )
    group.add_argument(
        "--search-503-rate",
        type=float,
        default=DEFAULT_SEARCH_503_RATE,
        metavar="RATE",
        help="share of searches refused with a transient 503 Service Unavailable "
        f"and Retry-After: {SEARCH_RETRY_AFTER}, from 0 to 1 (default: %(default)s)",
    )
    group.add_argument(
        "--seed",
        type=int,
        help="random seed, for repeatable durations, failures and 503 answers",
    )


def service_from_arguments(
    parser: argparse.ArgumentParser, arguments: argparse.Namespace
) -> TaskService:
    """Return a :class:`TaskService` configured by the options that
    :func:`add_service_arguments` added; exit through ``parser.error`` if they are
    invalid."""
    try:
        return TaskService(
            arguments.min_duration,
            arguments.max_duration,
            arguments.failure_rate,
            arguments.seed,
            publish_503_rate=arguments.publish_503_rate,
            search_503_rate=arguments.search_503_rate,
        )
    except ValueError as error:
        parser.error(str(error))


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the task service until Ctrl-C, then print the request counts and how
    many of them were answered 503."""
    parser = argparse.ArgumentParser(
        description="Serve simulated remote tasks over HTTP (the PollExecutor demo)."
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: %(default)s)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=8000,
        help="port to listen on (default: %(default)s)",
    )
    add_service_arguments(parser)
    arguments = parser.parse_args(argv)
    server = TaskServer(
        service_from_arguments(parser, arguments),
        arguments.host,
        arguments.port,
        log_requests=True,
    )
    print(f"Serving tasks on {server.url}; press Ctrl-C to stop.", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    answered_503 = server.service.answered_503()
    for endpoint, count in server.service.request_counts().items():
        print(f"{endpoint:<28} {count:>8,}  ({answered_503[endpoint]:,} answered 503)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
