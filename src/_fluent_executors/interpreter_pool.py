"""InterpreterPoolExecutor: Python 3.14's pool of subinterpreters with a name, the
``with_*`` methods and ``stats()``. A module of its own, imported on first use, as
the process pool's: the standard pool imports :mod:`concurrent.interpreters`."""

from __future__ import annotations

import concurrent.futures
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .counts import open_counts
from .library_pool import LibraryPool, check_max_workers, needs_python
from .outstanding import Outstanding
from .public import publish
from .wrapper import check_name

if TYPE_CHECKING:
    from .proxy import ProxyFuture
    from .stats import ExecutorStats

__all__ = ["InterpreterPoolExecutor"]

T = TypeVar("T")

if sys.version_info >= (3, 14):
    _StandardPool = concurrent.futures.InterpreterPoolExecutor
else:  # a stand-in base, so that the class exists: its constructor refuses
    _StandardPool = concurrent.futures.ThreadPoolExecutor


class InterpreterPoolExecutor(LibraryPool, _StandardPool):
    """The standard :class:`concurrent.futures.InterpreterPoolExecutor` (Python
    3.14 and later), with a name, the chainable ``with_*`` methods of
    :class:`~fluent_executors.FluentExecutor` and ``stats()``.

    Each worker thread runs the callables in a subinterpreter of its own, so
    they run in parallel, with a GIL each. A callable and its arguments must be
    shareable between interpreters (what the standard pool cannot share, it
    pickles); its future fails with ``concurrent.interpreters.NotShareableError``,
    a :class:`TypeError`, otherwise.
    Callables run without the submitter's ``contextvars`` context, as in a
    process pool. A ``FluentExecutor[SameResult]`` (see
    :ref:`guide-result-types`).

    Args:
        max_workers: the most interpreters it runs at once; default as in the
            standard library.
        thread_name_prefix: the prefix of its threads' names; default
            ``fluent-executors-<name>``.
        initializer: called with ``initargs`` in each new interpreter, first.
        initargs: the arguments of ``initializer``.
        name: the executor's name, passed down the chains built on it.

    Raises:
        NotImplementedError: before Python 3.14, which added the standard pool.
        TypeError: ``name`` is not a ``str``, or ``max_workers`` is not an
            ``int`` (nor ``None``).
        ValueError: ``max_workers`` is less than 1.

    .. versionadded:: 0.2.0
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
        needs_python((3, 14), "InterpreterPoolExecutor")
        check_name(name)
        check_max_workers((max_workers,), {})
        self._name = name
        super().__init__(
            max_workers,
            thread_name_prefix or f"fluent-executors-{name}",
            initializer,
            initargs,
        )
        # The futures not done, for stats(): their work runs in another
        # interpreter, which cannot count it.
        self._not_done = Outstanding()
        self._counts = open_counts(self, "interpreterpool", name)

    def _submit(
        self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ProxyFuture[T]:
        future = super()._submit(fn, args, kwargs)
        not_done = self._not_done
        not_done.add(future)
        future.add_done_callback(not_done.discard)
        return future

    def stats(self) -> ExecutorStats:
        """What this executor has done with the futures its ``submit`` returned,
        and is doing now (see :meth:`FluentExecutor.stats
        <fluent_executors.FluentExecutor.stats>`). *Running* are the calls that
        a worker has started, *pending* the others not done: it costs O(futures
        not done).

        .. versionadded:: 0.2.0
        """
        from .stats import ExecutorStats  # on first use: see stats.py

        running = sum(1 for future in self._not_done.snapshot() if future.running())
        return ExecutorStats(**self._counts.fields(running))


publish("fluent_executors", InterpreterPoolExecutor)
