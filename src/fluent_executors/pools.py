"""Thread and process pools with the chainable ``with_*`` methods and a name."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from ._counts import Counts, open_counts
from ._fluent import FluentExecutor, SameResult
from ._proxy import ProxyFuture
from ._wrapper import check_name, check_submittable

__all__ = ["ThreadPoolExecutor"]  # and ProcessPoolExecutor, imported on first use

T = TypeVar("T")
P = ParamSpec("P")


def _run_counted(
    counts: Counts, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> T:
    """Call ``fn(*args, **kwargs)`` in a worker of a thread pool, counted as running
    meanwhile."""
    counts.running += 1
    try:
        return fn(*args, **kwargs)
    finally:
        counts.running -= 1


class _LibraryPool(FluentExecutor[SameResult]):
    """What both pools add to the standard ones: stats and metrics, and the library's
    futures.

    It comes before the standard class in the bases, so that ``super()`` reaches it.
    """

    def _submit_plain(
        self, fn: Callable[..., T], /, *args: Any, **kwargs: Any
    ) -> Future[T]:
        """Submit and return the standard future: for the wrapper executors, whose
        own futures are the library's already (a proxy here would only cost)."""
        check_submittable(fn)
        counts = self._counts
        future: Future[T]
        if counts.counts_running:  # a thread pool: its workers count what they run
            future = super().submit(_run_counted, counts, fn, args, kwargs)
        else:
            future = super().submit(fn, *args, **kwargs)
        counts.track(future)
        return future

    def submit(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> ProxyFuture[T]:
        """Run ``fn(*args, **kwargs)`` in a worker of the pool.

        Returns:
            A ``Future[T]`` of the library (:class:`~fluent_executors.ProxyFuture`),
            which can also be awaited in a coroutine.

        Raises:
            TypeError: ``fn`` is not callable, or is a coroutine function
                (``async def``: a coroutine needs an event loop).
            RuntimeError: the executor has been shut down.
        """
        proxy: ProxyFuture[T] = ProxyFuture()
        proxy._follow(self._submit_plain(fn, *args, **kwargs))
        return proxy

    def _repr_fields(self) -> dict[str, object]:
        return {"max_workers": getattr(self, "_max_workers", None)}

    # Wrappers call _submit_plain only while submit is this one (not overridden).
    _library_submit = submit

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Shut down the pool, as the standard one does.

        Args:
            wait: if ``True``, return once the running callables have returned.
            cancel_futures: if ``True``, cancel the futures that have not started.

        Calling it more than once is harmless. New submits raise ``RuntimeError``.
        """
        if self._counts.metrics is not None:
            self._counts.metrics.close()
        super().shutdown(wait, cancel_futures=cancel_futures)


class ThreadPoolExecutor(_LibraryPool, concurrent.futures.ThreadPoolExecutor):
    """The standard :class:`concurrent.futures.ThreadPoolExecutor`, with a name and
    the chainable ``with_*`` methods of :class:`~fluent_executors.FluentExecutor`.

    A ``FluentExecutor[SameResult]`` (see :ref:`guide-result-types`).

    Every argument but ``name`` goes to the standard class unchanged, as the caller
    gave it (positional arguments stay positional, keywords stay keywords, and
    nothing is added), with one exception: if the caller gives no
    ``thread_name_prefix``, the keyword ``thread_name_prefix="fluent-executors-<name>"``
    is added, so the pool's threads carry the executor's name.

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
    """

    if TYPE_CHECKING:
        # What type checkers see; at run time the arguments pass through as given.
        def __init__(
            self,
            max_workers: int | None = None,
            thread_name_prefix: str = "",
            initializer: Callable[..., object] | None = None,
            initargs: tuple[Any, ...] = (),
            *,
            name: str = "default",
        ) -> None: ...

    else:

        def __init__(self, *args, name="default", **kwargs):
            check_name(name)
            self._name = name
            if len(args) < 2 and "thread_name_prefix" not in kwargs:
                kwargs["thread_name_prefix"] = f"fluent-executors-{name}"
            super().__init__(*args, **kwargs)
            self._counts = open_counts(self, "threadpool", name, counts_running=True)


def __getattr__(name: str) -> object:
    # The process pool imports multiprocessing, which most programs never need:
    # it is defined in its own module, imported on first use (PEP 562).
    if name == "ProcessPoolExecutor":
        from ._process_pool import ProcessPoolExecutor

        return ProcessPoolExecutor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
