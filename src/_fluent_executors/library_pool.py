"""What the library's two pools add to the standard ones (``LibraryPool``): stats
and metrics, the library's futures, and the check of ``max_workers``. The thread
pool is public (``fluent_executors.pools``); the process pool has a module of its
own (``process_pool``), imported on first use."""

from __future__ import annotations

import concurrent.futures
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from .counts import Counts
from .fluent import FluentExecutor, SameResult
from .proxy import ProxyFuture
from .tracing import InContext, submit_captured
from .wrapper import check_submittable

T = TypeVar("T")
P = ParamSpec("P")


class _Submit:
    """One call of the standard pool's ``submit``. If it raised after queueing its
    work item (a worker that could not be started), a worker that a later submit
    starts still takes the item: ``abandoned`` then tells it to do nothing."""

    __slots__ = ("abandoned",)

    def __init__(self) -> None:
        self.abandoned = False


def _run_counted(
    counts: Counts,
    fn: Callable[..., T],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    submit: _Submit,
) -> T:
    """Call ``fn(*args, **kwargs)`` in a worker of a thread pool that takes the
    standard submit, counted as running meanwhile; unless that submit raised (then
    the future, which nobody holds, is cancelled instead)."""
    if submit.abandoned:
        raise concurrent.futures.CancelledError
    counts.running_changed(1)
    try:
        return fn(*args, **kwargs)
    finally:
        counts.running_changed(-1)


def needs_python(version: tuple[int, int], what: str) -> None:
    """Refuse ``what`` (``"ProcessPoolExecutor.kill_workers()"``) on a Python
    older than ``version``, which lacks it.

    Raises:
        NotImplementedError: this Python is older than ``version``.
    """
    if sys.version_info < version:
        raise NotImplementedError(
            f"{what} needs Python {version[0]}.{version[1]} or later "
            f"(this is Python {sys.version_info[0]}.{sys.version_info[1]})"
        )


def check_max_workers(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Check the ``max_workers`` among the arguments of a standard pool (its first
    positional or keyword argument): ``None`` or a positive ``int``.

    Raises:
        TypeError: ``max_workers`` is not an ``int`` (nor ``None``).
        ValueError: ``max_workers`` is less than 1.
    """
    value = args[0] if args else kwargs.get("max_workers")
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(
            f"max_workers must be an int or None, got {type(value).__name__} {value!r}"
        )
    if value < 1:
        raise ValueError(f"max_workers must be at least 1, got {value}")


class LibraryPool(FluentExecutor[SameResult]):
    """What both pools add to the standard ones: stats and metrics, and the library's
    futures.

    It comes before the standard class in the bases, so that ``super()`` reaches it.
    Its ``_submit`` wraps the standard pool's future once, in a
    :class:`~fluent_executors.ProxyFuture` that follows it: the process pool's way
    (the thread pool's own ``_submit`` makes no standard future at all).
    """

    _name: str  # set by each pool's __init__

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
        if isinstance(fn, InContext):  # from a wrapper, which captured its context
            return self._submit(fn, args, kwargs)
        check_submittable(fn)
        return self._submit_captured(fn, args, kwargs)

    def _submit_captured(
        self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ProxyFuture[T]:
        """``_submit`` of ``fn`` in a copy of the submitter's context, under a call
        span if tracing is on: a thread pool's way."""
        return submit_captured(
            self._submit, fn, self._counts.kind, self._name, args, kwargs
        )

    def _submit(
        self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ProxyFuture[T]:
        """Submit ``fn(*args, **kwargs)`` to the standard pool; return a future
        that follows the standard one."""
        counts = self._counts
        upstream: concurrent.futures.Future[T]
        if counts.counts_running:  # a thread pool: its workers count what they run
            submit = _Submit()
            try:
                upstream = super().submit(
                    _run_counted, counts, fn, args, kwargs, submit
                )
            except BaseException:  # no job may be left behind a submit that raised
                submit.abandoned = True
                raise
        else:  # a process or interpreter pool: the callable alone, a context
            # stays in its interpreter
            if isinstance(fn, InContext):
                fn = fn.fn
            upstream = super().submit(fn, *args, **kwargs)
        proxy: ProxyFuture[T] = ProxyFuture()
        counts.adopt(proxy)
        proxy._follow(upstream)
        return proxy

    def _repr_fields(self) -> dict[str, object]:
        return {"max_workers": getattr(self, "_max_workers", None)}

    def _shut_down(self) -> bool:
        # The standard thread pool's flag, or the process pool's.
        return bool(getattr(self, "_shutdown", getattr(self, "_shutdown_thread", 0)))

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
