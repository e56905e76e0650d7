"""Thread and process pools with the chainable ``with_*`` methods and a name."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

from ._chain import FluentExecutor
from ._wrapper import check_name

__all__ = ["ProcessPoolExecutor", "ThreadPoolExecutor"]


class ThreadPoolExecutor(concurrent.futures.ThreadPoolExecutor, FluentExecutor):
    """The standard :class:`concurrent.futures.ThreadPoolExecutor`, with a name and
    the chainable ``with_*`` methods of :class:`~fluent_executors.FluentExecutor`.

    Args:
        max_workers: the most threads it runs at once; default as in the standard
            library (``min(32, os.cpu_count() + 4)``).
        thread_name_prefix: the prefix of its threads' names; default
            ``fluent-executors-<name>``.
        initializer: called with ``initargs`` at the start of each worker thread.
        initargs: the arguments of ``initializer``.
        name: the executor's name, passed down the chains built on it.

    Raises:
        TypeError: ``name`` is not a ``str``; see the standard class for the rest.
        ValueError: ``max_workers`` is not positive.

    .. versionadded:: 0.1.0
    """

    def __init__(
        self,
        max_workers: int | None = None,
        thread_name_prefix: str = "",
        initializer: Callable[..., object] | None = None,
        initargs: tuple[Any, ...] = (),
        *,
        name: str = "default",
    ) -> None:
        check_name(name)
        self._name = name
        super().__init__(
            max_workers,
            thread_name_prefix or f"fluent-executors-{name}",
            initializer,
            initargs,
        )


class ProcessPoolExecutor(concurrent.futures.ProcessPoolExecutor, FluentExecutor):
    """The standard :class:`concurrent.futures.ProcessPoolExecutor`, with a name and
    the chainable ``with_*`` methods of :class:`~fluent_executors.FluentExecutor`.

    Every argument but ``name`` is passed to the standard class (``max_workers``,
    ``mp_context``, ``initializer``, ``initargs``, and ``max_tasks_per_child`` on
    Python 3.11+). Submitted callables and their arguments must be picklable.

    Args:
        args: positional arguments of the standard class.
        name: the executor's name, passed down the chains built on it.
        kwargs: keyword arguments of the standard class.

    Raises:
        TypeError: ``name`` is not a ``str``; see the standard class for the rest.

    .. versionadded:: 0.1.0
    """

    def __init__(self, *args: Any, name: str = "default", **kwargs: Any) -> None:
        check_name(name)
        self._name = name
        super().__init__(*args, **kwargs)
