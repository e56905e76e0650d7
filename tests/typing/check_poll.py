# pyright: strict, reportUnnecessaryTypeIgnoreComment=true
"""Static checks of the poll executor's types: ``PollDescriptor``, ``PollFn``,
``CancelFn``.

Checked by ``mypy --strict`` and ``pyright`` (``nox -s typecheck``), never run;
see ``README.rst`` in this directory for how the checks read.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from typing_extensions import assert_type

from fluent_executors import (
    CancelFn,
    Executors,
    PollDescriptor,
    PollExecutor,
    PollFn,
    ProxyFuture,
)

# What submit is annotated to return on the library's executors (the pools, sync,
# every wrapper but asyncio's): the library's own future, which is awaitable.
ExecutorFuture = ProxyFuture


def start_task(name: str) -> int:
    """A delegate callable: starts a remote task, returns its id."""
    return len(name)


def poll_tasks(descriptors: list[PollDescriptor[int]]) -> float:
    for descriptor in descriptors:
        # The descriptor's result is the delegate's result: the task id.
        assert_type(descriptor.result, int)
        if descriptor.result > 0:
            descriptor.yield_result()
        elif descriptor.result == 0:
            descriptor.yield_result(descriptor.result + 1)
        else:
            descriptor.yield_exception(ValueError(descriptor.result))
    return 5.0


def poll_default_interval(descriptors: list[PollDescriptor[Any]]) -> None:
    """A poll function may return None: the executor's default interval."""


def cancel_task(task_id: int) -> bool:
    return task_id > 0


def check_descriptor(descriptor: PollDescriptor[str]) -> None:
    assert_type(descriptor.result, str)
    assert_type(descriptor.yield_result(), None)
    assert_type(descriptor.yield_result("done"), None)
    assert_type(descriptor.yield_exception(RuntimeError("failed")), None)
    assert_type(descriptor.yield_exception(RuntimeError(), None), None)


def check_descriptor_errors(descriptor: PollDescriptor[str]) -> None:
    # yield_result takes a value of the delegate's result type.
    descriptor.yield_result(1)  # type: ignore[call-overload]
    descriptor.yield_exception("failed")  # type: ignore[arg-type]
    descriptor.result = "other"  # type: ignore[misc]


def check_poll_and_cancel_functions() -> None:
    # Poll functions typed for the delegate's result type are PollFn and CancelFn.
    poll: PollFn = poll_tasks
    poll_default: PollFn = poll_default_interval
    cancel: CancelFn = cancel_task
    also_cancel: CancelFn = lambda task_id: None  # noqa: E731
    del poll, poll_default, cancel, also_cancel


def check_poll_executor() -> None:
    executor = Executors.thread_pool().with_poll(poll_tasks, cancel_task, 1.0)
    assert_type(executor, PollExecutor)
    assert_type(executor.submit(start_task, "report"), ExecutorFuture[int])
    # Its futures are concurrent.futures ones: wait(), as_completed() take them.
    as_future: Future[int] = executor.submit(start_task, "report")
    del as_future
    assert_type(
        Executors.sync().with_poll(poll_default_interval).submit(start_task, "x"),
        ExecutorFuture[int],
    )


def check_poll_executor_errors() -> None:
    def not_a_poll_fn(task_id: int) -> None: ...

    def poll_returning_text(descriptors: list[PollDescriptor[int]]) -> str:
        return "soon"

    def cancel_with_two_arguments(task_id: int, force: bool) -> bool:
        return force

    executor = Executors.sync()
    executor.with_poll(not_a_poll_fn)  # type: ignore[arg-type]
    executor.with_poll(poll_returning_text)  # type: ignore[arg-type]
    executor.with_poll(poll_tasks, cancel_with_two_arguments)  # type: ignore[arg-type]
    executor.with_poll(poll_tasks, default_interval="5")  # type: ignore[arg-type]
    executor.with_poll(poll_tasks).submit(start_task, 1)  # type: ignore[call-overload]
