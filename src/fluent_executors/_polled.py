"""The descriptors that one poll executor is polling, and the list that its poll
function is given in each round.

Contract: the poller (``_poll_thread._Poller``) holds its lock around every call
here. Descriptors are taken in (:meth:`Polled.add`) in order of arrival and
dropped (:meth:`Polled.discard`) once their future is done, from any thread. The
poll thread takes the list of a round with :meth:`Polled.begin_round`, passes it
to the poll function outside the lock, and hands it back with
:meth:`Polled.end_round`; in between, nobody but the poll function changes it.

Why one list for every round: the standard way, a fresh list per round, touches
every descriptor twice per round (its reference count, as the list is made and
freed). With a million descriptors polled, 100 rounds per future, that is a walk
through a hundred megabytes of descriptors per round, and it bounds the poll
thread by memory bandwidth. Here the list lives from round to round: arrivals are
appended, and done descriptors are cut out in runs (``del`` of a slice moves the
pointers that follow, without touching what they point to). Each descriptor
carries a *slot*, its number in order of arrival, so the list is sorted by slot
and a run is found by bisection. Many scattered runs cost more than a new list,
so past :data:`MAX_RUNS` runs a new list is made.

The poll function still sees a list of its own, as if fresh: one it changes
(through any method of the list) is first copied, and the copy is kept; one it
keeps beyond the call (its reference count says so) is left to it, and a new one
made from it.
"""

from __future__ import annotations

import operator
import sys
from bisect import bisect_left
from collections.abc import Callable, Iterator
from itertools import chain, filterfalse
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .poll import PollDescriptor

__all__ = ["MAX_RUNS", "Polled"]

T = TypeVar("T")

# Past this many runs of done descriptors in one compaction, a new list is made
# instead: each run costs a bisection and a move of the pointers after it, about
# 1/30 of what a new list costs per descriptor.
MAX_RUNS = 32

_SLOT = operator.attrgetter("_slot")
_GONE = operator.attrgetter("_gone")

# The reference count of an object, where the interpreter counts references
# (CPython); elsewhere the list is taken as kept, and a new one made each round.
_refcount: Callable[[object], int] | None = getattr(sys, "getrefcount", None)


class _RoundList(list["PollDescriptor[Any]"]):
    """The list that the poll function is given: a ``list`` whose methods that
    change it first save a copy of what it held (``original``)."""

    __slots__ = ("original",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.original: list[PollDescriptor[Any]] | None = None


def _saving_first(name: str) -> Callable[..., Any]:
    """``list.<name>``, which first saves a copy of the list if none is saved."""
    change = getattr(list, name)

    def method(self: _RoundList, *args: Any, **kwargs: Any) -> Any:
        if self.original is None:
            self.original = list(self)
        return change(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = change.__doc__
    return method


for _name in (
    "__delitem__",
    "__iadd__",
    "__imul__",
    "__setitem__",
    "append",
    "clear",
    "extend",
    "insert",
    "pop",
    "remove",
    "reverse",
    "sort",
):
    setattr(_RoundList, _name, _saving_first(_name))


class Polled:
    """The descriptors being polled: taken in, and whose future is not done yet."""

    __slots__ = (
        "_count",
        "_gone",
        "_in_round",
        "_kept",
        "_next_slot",
        "_round",
        "_taken",
    )

    def __init__(self) -> None:
        self._round = _RoundList()  # in slot order, done ones not yet cut out
        self._taken: list[PollDescriptor[Any]] = []  # since the round began
        self._gone: list[int] = []  # slots of done ones, in _round or _taken
        self._next_slot = 0
        # How many are polled: one field, which start_polling reads without the
        # lock (the lengths of the lists change one after the other).
        self._count = 0
        self._in_round = False  # the poll function holds _round
        self._kept = False  # the poll function kept _round beyond its call

    def __len__(self) -> int:
        return self._count

    def add(self, descriptor: PollDescriptor[Any]) -> None:
        """Take ``descriptor`` in: it joins the next round."""
        descriptor._slot = self._next_slot
        self._next_slot += 1
        self._taken.append(descriptor)
        self._count += 1

    def discard(self, descriptor: PollDescriptor[Any]) -> None:
        """Drop ``descriptor``, whose future is done (nothing if it was never
        taken in). With most of the list done and no round under way, the done
        ones are cut out now: a list holds their futures and results."""
        if descriptor._slot < 0 or descriptor._gone:
            return
        descriptor._gone = True
        self._gone.append(descriptor._slot)
        self._count -= 1
        if self._in_round:
            return
        if not self._count:
            self._round, self._taken, self._gone = _RoundList(), [], []
        elif len(self._gone) > self._count + 64:
            self._compact()

    def __iter__(self) -> Iterator[PollDescriptor[Any]]:
        """The descriptors being polled, in order of arrival."""
        return filterfalse(_GONE, chain(self._round, self._taken))

    def begin_round(self) -> _RoundList:
        """The list of a round: every descriptor being polled, in order of
        arrival. Nobody else changes it until :meth:`end_round`."""
        if self._taken:
            list.extend(self._round, self._taken)
            self._taken = []
        if self._gone:
            self._compact()
        self._in_round = True
        self._kept = False
        return self._round

    def lend(
        self,
        poll: Callable[[list[PollDescriptor[Any]]], T],
        batch: list[PollDescriptor[Any]],
    ) -> T:
        """``poll(batch)``, for the round's list ``batch``; notes whether ``poll``
        keeps a reference to it (outside the lock: only the poll thread calls)."""
        given = 0 if _refcount is None else _refcount(batch)
        try:
            return poll(batch)
        finally:
            self._kept = _refcount is None or _refcount(batch) > given

    def end_round(self) -> None:
        """The round is over: the list is the executor's again, unless the poll
        function changed it (then the copy saved before is) or keeps it (then a
        copy of it is); the done descriptors are cut out."""
        self._in_round = False
        saved = self._round.original
        if saved is not None:
            self._round = _RoundList(saved)
        elif self._kept:
            self._round = _RoundList(self._round)
        if self._gone:
            self._compact()

    def _compact(self) -> None:
        """Cut the done descriptors out of the list, in runs; make a new list
        instead if there are more than ``MAX_RUNS`` runs."""
        gone, self._gone = self._gone, []
        gone.sort()
        taken = self._taken  # arrivals since the round began, after _round
        if taken and gone[-1] >= taken[0]._slot:
            self._taken = [d for d in taken if not d._gone]
        descriptors = self._round
        end = len(descriptors)
        last = descriptors[-1]._slot if end else -1  # the rest are in _taken
        runs: list[tuple[int, int]] = []
        i, count = 0, len(gone)
        while i < count and gone[i] <= last:
            if len(runs) == MAX_RUNS:
                self._round = _RoundList(filterfalse(_GONE, descriptors))
                return
            start = bisect_left(descriptors, gone[i], key=_SLOT)
            stop = start + 1
            i += 1
            while i < count and stop < end and descriptors[stop]._slot == gone[i]:
                stop += 1
                i += 1
            runs.append((start, stop))
        for start, stop in reversed(runs):
            list.__delitem__(descriptors, slice(start, stop))
