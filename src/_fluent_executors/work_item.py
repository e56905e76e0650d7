"""What the library's thread pool (``fluent_executors.pools``) queues for its
worker threads: a call, and what its outcome resolves.

A :class:`FutureItem` resolves a future of the library, the one the pool's
``submit`` returns. A :class:`~_fluent_executors.handoff.Handoff` is the item of
a call whose one follower (a poll, map or flat-map future) is known as it is
queued: it holds the outcome itself and hands it to the follower, with no future
of the pool in between. Either way the item is one object per call.

Who calls what: a worker calls :meth:`WorkItem.run` (with its ``WorkerContext``
from Python 3.14); the pool's ``shutdown(cancel_futures=True)`` calls
``item.future.cancel()`` and a failed initializer
``item.future.set_exception(...)``, as the standard pool's code does with its own
work items (``tests/test_pools.py`` checks that code, 3.10 to 3.15).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from .stdlib_compat import FINISHED

if TYPE_CHECKING:
    from .counts import Counts
    from .handoff import Handoff
    from .proxy import ProxyFuture

__all__ = ["FutureItem", "WorkItem"]


class WorkItem:
    """A call of the thread pool, ``fn(*args, **kwargs)`` run in ``context`` (if
    not ``None``), counted as running in ``counts`` while it runs; a subclass
    gives the ``future`` that its outcome resolves.

    Args:
        fn: the callable.
        args: its positional arguments.
        kwargs: its keyword arguments.
        counts: the pool's counts.
        context: the ``contextvars`` context to run it in; ``None``: it runs in
            a context of its own (an ``InContext`` with a span).
    """

    __slots__ = ("args", "context", "counts", "fn", "kwargs")

    if TYPE_CHECKING:

        @property
        def future(self) -> ProxyFuture[Any] | Handoff:
            """What the outcome resolves: set running, then resolved, by
            :meth:`run`; cancelled by the pool's shutdown."""
            ...

    def __init__(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        counts: Counts,
        context: contextvars.Context | None,
    ) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.counts = counts
        self.context = context

    def run(self, ctx: object = None) -> None:
        """Run the call, unless its future was cancelled, and resolve the future
        with its outcome. ``ctx``: the worker's ``WorkerContext`` (3.14 and
        later), not needed: the standard context runs a task as ``fn(*args,
        **kwargs)``, which this does itself."""
        future = self.future
        if not future.set_running_or_notify_cancel():
            return
        counts = self.counts
        counts.running_changed(1)
        context = self.context
        try:
            if context is None:
                result = self.fn(*self.args, **self.kwargs)
            else:
                result = context.run(self.fn, *self.args, **self.kwargs)
        except BaseException as error:
            counts.running_changed(-1)
            future._try_resolve(FINISHED, None, error, "add_exception")
            del future, self  # no reference cycle through the traceback
        else:
            counts.running_changed(-1)
            # (Not set_result: a future a user resolved meanwhile must not raise
            # InvalidStateError here, which would end the worker thread.)
            future._try_resolve(FINISHED, result, None, "add_result")


class FutureItem(WorkItem):
    """The work item of a call whose outcome resolves ``future``, the future of
    the library that the pool's ``submit`` returned (the other arguments as for
    :class:`WorkItem`)."""

    __slots__ = ("_future",)

    if TYPE_CHECKING:

        @property
        def future(self) -> ProxyFuture[Any]:
            """The future that the pool's ``submit`` returned."""
            ...

    else:  # read by run() per call: a getter with no Python frame
        future = property(attrgetter("_future"))

    def __init__(
        self,
        future: ProxyFuture[Any],
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        counts: Counts,
        context: contextvars.Context | None,
    ) -> None:
        self._future = future
        super().__init__(fn, args, kwargs, counts, context)
