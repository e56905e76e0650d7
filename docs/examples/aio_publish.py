"""Publish many objects from an async program, polling all their tasks with one
search per round, on trio or asyncio (``docs/aio.rst``).

One ``httpx.AsyncClient``, bound to the program's event loop, serves the publish
requests, the poll function and the cancel function: all three run on that loop.
The service (``task_service.py``) answers at most 100 ids per search
(``max_batch``) and refuses some searches with a ``503`` and ``Retry-After``, which
the poll retry policy absorbs. Each publish has a deadline (``with_timeout``): a
task not done by then is cancelled on the service with a ``DELETE``.

Run it; it starts its own task service on 127.0.0.1::

    python aio_publish.py                   # 500 tasks, on trio
    python aio_publish.py --backend asyncio --tasks 50
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

import anyio
import httpx
from task_service import MAX_SEARCH, TaskServer, TaskService

from fluent_executors import ExceptionRetryPolicy, PollDescriptor
from fluent_executors.aio import AsyncExecutors


async def publish_all(url: str, count: int, deadline: float) -> Counter[str]:
    """Publish ``count`` objects through the service at ``url``; the outcome of
    each (``finished``, ``error``, ``timeout``) counted."""
    outcomes: Counter[str] = Counter()
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:

        async def publish(object_id: int) -> int:
            response = await client.post(f"/object/{object_id}/publish")
            response.raise_for_status()
            task_id: int = response.json()["task_id"]
            return task_id

        async def poll(descriptors: list[PollDescriptor[Any]]) -> float:
            by_id = {d.result: d for d in descriptors}
            response = await client.post("/tasks/search", json={"task_id": [*by_id]})
            response.raise_for_status()  # a 503: the poll retry policy decides
            for task in response.json():
                descriptor = by_id[task["task_id"]]
                if task["state"] == "finished":
                    descriptor.yield_result(task["task_id"])
                elif task["state"] in ("error", "cancelled"):
                    error = RuntimeError(task.get("error", task["state"]))
                    descriptor.yield_exception(error)
            return 1.0

        async def cancel(task_id: int) -> bool:
            response = await client.delete(f"/tasks/{task_id}")
            return response.status_code == 200

        executor = (
            AsyncExecutors.inline()
            .with_retry(max_attempts=5, sleep=0.5)  # a publish answered 503
            .with_poll(
                poll,
                cancel,
                default_interval=1.0,
                max_batch=MAX_SEARCH,
                poll_retry_policy=ExceptionRetryPolicy(max_attempts=10, sleep=1.0),
                poll_timeout=10.0,
            )
            .with_timeout(deadline)
        )

        async def one(object_id: int) -> None:
            try:
                await executor.run(publish, object_id)
            except TimeoutError:
                outcomes["timeout"] += 1
            except Exception:
                outcomes["error"] += 1
            else:
                outcomes["finished"] += 1

        async with executor, anyio.create_task_group() as group:
            for object_id in range(count):
                group.start_soon(one, object_id)
    return outcomes


def main(argv: list[str] | None = None) -> None:
    """Publish through a task service of its own; print the outcomes and the
    service's request counts."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--backend", choices=["trio", "asyncio"], default="trio")
    parser.add_argument("--deadline", type=float, default=30.0)
    parser.add_argument("--min-duration", type=float, default=1.0)
    parser.add_argument("--max-duration", type=float, default=3.0)
    args = parser.parse_args(argv)
    service = TaskService(args.min_duration, args.max_duration, failure_rate=0.1)
    with TaskServer(service) as server:
        outcomes = anyio.run(
            publish_all, server.url, args.tasks, args.deadline, backend=args.backend
        )
        print("tasks:", dict(outcomes))
        print("service requests:", service.request_counts())


if __name__ == "__main__":
    main()
