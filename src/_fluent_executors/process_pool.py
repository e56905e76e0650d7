"""ProcessPoolExecutor: the standard process pool with a name and the ``with_*``
methods. A module of its own, imported on first use: the standard process pool
imports :mod:`multiprocessing`, which importing the library should not."""

from __future__ import annotations

import concurrent.futures
from typing import TYPE_CHECKING, Any

from .counts import open_counts
from .library_pool import LibraryPool, check_max_workers
from .public import publish
from .wrapper import check_name

if TYPE_CHECKING:
    from .stats import ExecutorStats

__all__ = ["ProcessPoolExecutor"]


class ProcessPoolExecutor(LibraryPool, concurrent.futures.ProcessPoolExecutor):
    """The standard :class:`concurrent.futures.ProcessPoolExecutor`, with a name and
    the chainable ``with_*`` methods of :class:`~fluent_executors.FluentExecutor`.

    Every argument but ``name`` goes to the standard class unchanged, as the caller
    gave it (positional arguments stay positional, keywords stay keywords, and
    nothing is added): ``max_workers``, ``mp_context``, ``initializer``,
    ``initargs``, and ``max_tasks_per_child`` on Python 3.11+. Submitted callables
    and their arguments must be picklable: if one cannot be pickled, its future
    fails with the pickling error; if a worker process dies, the futures fail with
    :class:`~concurrent.futures.process.BrokenProcessPool`.

    A ``FluentExecutor[SameResult]`` (see :ref:`guide-result-types`).

    Args:
        args: positional arguments of the standard class.
        name: the executor's name, passed down the chains built on it.
        kwargs: keyword arguments of the standard class.

    Raises:
        TypeError: ``name`` is not a ``str``, or ``max_workers`` is not an ``int``
            (nor ``None``); see the standard class for the rest.
        ValueError: ``max_workers`` is less than 1.
    """

    def __init__(self, *args: Any, name: str = "default", **kwargs: Any) -> None:
        check_name(name)
        check_max_workers(args, kwargs)
        self._name = name
        super().__init__(*args, **kwargs)
        self._counts = open_counts(self, "processpool", name)

    def stats(self) -> ExecutorStats:
        """What this executor has done with the futures its ``submit`` returned, and
        is doing now (see :meth:`FluentExecutor.stats
        <fluent_executors.FluentExecutor.stats>`). *Running* are the calls handed
        to the worker processes (those whose future's ``running()`` is true),
        *pending* the others not done: the pool's queue is read for it, which costs
        O(futures not done).

        .. versionadded:: 0.2.0
        """
        from .stats import ExecutorStats  # on first use: see stats.py

        items = self._pending_work_items.copy()
        running = sum(1 for item in items.values() if item.future.running())
        return ExecutorStats(**self._counts.fields(running))


publish("fluent_executors", ProcessPoolExecutor)
