# pyright: strict, reportUnnecessaryTypeIgnoreComment=true
"""Static checks of durable polling on the async side: ``with_poll(store=,
lease=)`` takes a store or a path, ``resume()`` gives each run with its record,
``attach()`` a run to await, each of the chain's result type.

Checked by ``mypy --strict`` and ``pyright`` (``nox -s typecheck``), never run;
see ``README.rst`` in this directory for how the checks read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typing_extensions import assert_type

from fluent_executors import SQLiteStore
from fluent_executors.aio import AsyncExecutors, PollDescriptor, PolledRun
from fluent_executors.stores import StoredTask


def poll_all(descriptors: list[PollDescriptor[Any]]) -> None:
    for descriptor in descriptors:
        descriptor.yield_result()


async def check_resume_and_attach(store: SQLiteStore) -> None:
    base = AsyncExecutors.inline()
    base.with_poll(poll_all, store=Path("tasks.db"), lease=30.0)
    executor = base.with_poll(poll_all, store=store)
    async with executor:
        resumed = await executor.resume(limit=10)
        assert_type(resumed, dict[PolledRun[Any], StoredTask])
        for run, task in resumed.items():
            assert_type(await run, Any)
            assert_type(task.key, str)
        assert_type(executor.attach("task-1"), PolledRun[Any])
    # Through a map layer outside the poll layer: runs of its result type.
    mapped = executor.with_map(str)
    async with mapped:
        runs = await mapped.resume()
        assert_type(runs, dict[PolledRun[str], StoredTask])
        for run in runs:
            assert_type(await run, str)
        assert_type(mapped.attach("task-1"), PolledRun[str])


def check_bad_store() -> None:
    AsyncExecutors.inline().with_poll(poll_all, store=42)  # type: ignore[arg-type]
