"""Running users' callbacks: a raising one is logged and contained, and a long
chain of futures resolves without deep recursion."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any

from .logging import ContainedLogger

logger = ContainedLogger(logging.getLogger("fluent_executors._proxy"))

# Resolving a future runs the done callbacks of the futures that follow it, which
# resolve them and run the callbacks of the futures that follow those, and so on: a
# chain of n futures (say, a loop written with f_flat_map) would nest n levels deep,
# and past the interpreter's recursion limit the standard Future logs the
# RecursionError and leaves the rest of the chain pending forever. So callbacks
# run through run_flat nest at most this deep; deeper ones are queued, and run by
# the outermost one, in the same thread, before it returns. (A callback that deep
# which waits for a queued one would wait forever: callbacks must not block.)
_MAX_NESTING = 50


class _Nesting:
    """How deep the callbacks of one thread are nested, and what waits for the
    outermost one: a plain object, whose fields are quicker to read and write than
    those of a ``threading.local``, which is read once per callback."""

    __slots__ = ("depth", "queued")

    def __init__(self) -> None:
        self.depth = 0
        self.queued: deque[Callable[[], object]] = deque()


class _PerThread(threading.local):
    def __init__(self) -> None:
        self.nesting = _Nesting()


_per_thread = _PerThread()


class _ThreadRole(threading.local):
    library = False  # set in the library's own threads (scheduler, poll threads)


_thread_role = _ThreadRole()


def mark_library_thread() -> None:
    """Mark the calling thread as one of the library's own (the scheduler, its
    workers, a poll thread): there, a done callback's ``KeyboardInterrupt`` or
    ``SystemExit`` is logged and contained instead of re-raised."""
    _thread_role.library = True


def in_library_thread() -> bool:
    """Whether the calling thread is one of the library's own (see
    :func:`mark_library_thread`): one that must never block on a user's executor."""
    return _thread_role.library


def contain(error: BaseException, where: object) -> BaseException | None:
    """Log ``error``, raised by user code called back for ``where``; return it if
    the caller must re-raise it once the other callbacks have run.

    In the main thread a ``KeyboardInterrupt`` or ``SystemExit`` is re-raised then,
    so that Ctrl-C and ``sys.exit()`` still work; in any other thread (the
    library's own, a pool's worker, a thread that resolves a future of another
    executor), and for any other exception, it is only logged: such a thread serves
    every future that comes to it, and one callback must not end it.
    """
    logger.error("exception calling callback for %r", where, exc_info=error)
    return error if must_reraise(error) else None


def must_reraise(error: BaseException) -> bool:
    """Whether ``error``, raised by user code and logged, must still propagate: a
    ``KeyboardInterrupt`` or ``SystemExit`` in the main thread (where Ctrl-C
    arrives), not in another thread, which it would end for good."""
    return (
        isinstance(error, (KeyboardInterrupt, SystemExit))
        and threading.current_thread() is threading.main_thread()
        and not in_library_thread()
    )


def run_flat(callback: Callable[[Future[Any]], object], future: Future[Any]) -> None:
    """Run the done callback ``callback(future)`` so that a chain of futures, each
    resolved by a callback of the previous one, resolves without deep recursion,
    however long. Call it from a done callback; it never raises."""
    nesting = _per_thread.nesting
    if nesting.depth >= _MAX_NESTING:
        nesting.queued.append(partial(callback, future))
        return
    nesting.depth += 1
    escaped = None
    try:
        callback(future)
    except BaseException as error:  # as Future does for its callbacks: log, go on
        escaped = contain(error, future)
    finally:
        if nesting.depth == 1 and nesting.queued:
            escaped = _run_queued(nesting.queued) or escaped
        nesting.depth -= 1
    if escaped is not None:
        raise escaped


def _run_queued(queued: deque[Callable[[], object]]) -> BaseException | None:
    escaped = None
    while queued:
        call = queued.popleft()
        try:
            call()
        except BaseException as error:  # as Future does for its callbacks: log, go on
            escaped = contain(error, call) or escaped
    return escaped
