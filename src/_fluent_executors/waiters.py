"""What a proxy future holds of waiters and done callbacks: none, the one, or a
list from the second on (a list per future would be one more object for the
garbage collector to walk)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from .stdlib_compat import Waiter

if TYPE_CHECKING:
    from .resolvable import ResolvableFuture

E = TypeVar("E")


def one_more(held: E | list[E] | None, item: E) -> E | list[E]:
    """``held`` with ``item`` added after the rest: what a future holds of waiters
    or done callbacks, none (``None``), the one (never a list itself), or a list
    of two or more. A list is made from the second on: the common case of one
    costs none."""
    if held is None:
        return item
    if isinstance(held, list):
        held.append(item)
        return held
    return [held, item]


class Waiters:
    """What a :class:`~fluent_executors.ProxyFuture`'s ``_waiters`` gives
    :func:`~concurrent.futures.wait` and :func:`~concurrent.futures.as_completed`
    where ``stdlib_compat.LIGHT_FUTURES``: they only ``append`` a waiter to a
    future's list and ``remove`` it (the standard library's source, 3.10 to 3.15;
    tests/test_future.py fails if a version uses it otherwise), under the future's
    ``_condition``. A future waited on by one waiter holds it without a list. In
    the portable mode a proxy future's ``_waiters`` is a list.
    """

    __slots__ = ("_future",)

    def __init__(self, future: ResolvableFuture[Any]) -> None:
        self._future = future

    def append(self, waiter: Waiter) -> None:
        """Add ``waiter`` (one more call ``waiter.add_result(future)`` or the like
        once the future is resolved)."""
        future = self._future
        held = future._waiter_entry
        # (The common case, the one waiter, without a call)
        future._waiter_entry = waiter if held is None else one_more(held, waiter)

    def remove(self, waiter: Waiter) -> None:
        """Remove ``waiter``; raise ``ValueError`` if it is not there, as a list
        does. (The message names no future: a future's repr takes its lock, which
        the caller holds.)"""
        future = self._future
        entry = future._waiter_entry
        if entry is waiter:
            future._waiter_entry = None
        elif isinstance(entry, list):
            entry.remove(waiter)
            if len(entry) < 2:  # back to none, or the one without a list
                future._waiter_entry = entry[0] if entry else None
        else:
            raise ValueError(f"{waiter!r} is not a waiter of the future")
