"""ProcessPoolExecutor: the standard process pool with a name and the ``with_*``
methods. A module of its own, imported on first use: the standard process pool
imports :mod:`multiprocessing`, which importing the library should not."""

from __future__ import annotations

import concurrent.futures
import itertools
from collections.abc import Callable, Generator, Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from .counts import open_counts
from .library_pool import LibraryPool, check_max_workers, needs_python
from .public import publish
from .wrapper import check_name

if TYPE_CHECKING:
    from .stats import ExecutorStats

__all__ = ["ProcessPoolExecutor"]

T = TypeVar("T")


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

    # A process pool's result type is always SameResult: one signature serves.
    def map(  # type: ignore[override]  # pyright: ignore[reportIncompatibleMethodOverride]
        self,
        fn: Callable[..., T],
        *iterables: Iterable[Any],
        timeout: float | None = None,
        chunksize: int = 1,
        buffersize: int | None = None,
    ) -> Iterator[T]:
        """:meth:`FluentExecutor.map <fluent_executors.FluentExecutor.map>`, with
        the calls sent to the worker processes ``chunksize`` at a time, as the
        standard process pool does: one submit per chunk, and ``buffersize``
        counts chunks.

        Raises:
            ValueError: ``chunksize`` is less than 1, or ``buffersize`` is.
            TypeError: ``buffersize`` is neither an ``int`` nor ``None``.
            RuntimeError: the pool has been shut down.

        .. versionadded:: 0.2.0
           ``buffersize``, on every Python.
        """
        if chunksize < 1:
            raise ValueError(f"chunksize must be at least 1, got {chunksize}")
        chunks = super().map(
            partial(_call_chunk, fn),
            _chunks(zip(*iterables, strict=False), chunksize),
            timeout=timeout,
            buffersize=buffersize,
        )
        return _one_by_one(chunks)

    def terminate_workers(self) -> None:
        """Terminate the worker processes (``SIGTERM``), as the standard
        :meth:`~concurrent.futures.ProcessPoolExecutor.terminate_workers` does:
        the calls under way fail with
        :class:`~concurrent.futures.process.BrokenProcessPool`, those not
        started are cancelled, and the pool refuses new work.

        Raises:
            NotImplementedError: before Python 3.14, which added it.

        .. versionadded:: 0.2.0
        """
        needs_python((3, 14), "ProcessPoolExecutor.terminate_workers()")
        super().terminate_workers()  # type: ignore[misc]

    def kill_workers(self) -> None:
        """Kill the worker processes (``SIGKILL``), as the standard
        :meth:`~concurrent.futures.ProcessPoolExecutor.kill_workers` does; see
        :meth:`terminate_workers`.

        Raises:
            NotImplementedError: before Python 3.14, which added it.

        .. versionadded:: 0.2.0
        """
        needs_python((3, 14), "ProcessPoolExecutor.kill_workers()")
        super().kill_workers()  # type: ignore[misc]

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


def _chunks(
    arguments: Iterator[tuple[Any, ...]], size: int
) -> Iterator[tuple[tuple[Any, ...], ...]]:
    """The tuples of ``arguments``, ``size`` at a time (the last chunk may be
    shorter), read as they are asked for."""
    while chunk := tuple(itertools.islice(arguments, size)):
        yield chunk


def _one_by_one(chunks: Iterator[list[T]]) -> Generator[T, None, None]:
    """The results of ``chunks``, one by one: a generator, as the standard process
    pool's ``map`` returns, whose ``close()`` (or collection) closes ``chunks``,
    which cancels the calls not yet taken."""
    try:
        for chunk in chunks:
            yield from chunk
    finally:
        if isinstance(chunks, Generator):  # map's iterator is one
            chunks.close()


def _call_chunk(fn: Callable[..., T], chunk: tuple[tuple[Any, ...], ...]) -> list[T]:
    """In a worker process: ``fn(*args)`` for each ``args`` of ``chunk``."""
    return [fn(*args) for args in chunk]


publish("fluent_executors", ProcessPoolExecutor)
