"""The descriptors that one poll executor is polling, and the list that its poll
function is given in each round.

Contract: the poll core (``core.PollCore``) makes every call here, under its
driver's lock. Descriptors (each a :class:`RoundEntry`) are taken in
(:meth:`Polled.add`) in order of arrival and dropped (:meth:`Polled.discard`) once
their future is done, from any thread. The driver takes the list of a round with
:meth:`Polled.begin_round`, passes it to the poll function outside the lock, and
hands it back with :meth:`Polled.end_round`, holding no reference to it any more;
in between, nobody but the poll function changes it. Between rounds, the driver
cuts out the descriptors dropped meanwhile (:meth:`Polled.tidy`): ``discard`` asks
for that once after each round, so that a list does not hold done futures and
their results until the next round.

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
through any method of the list is first copied, and the executor goes on with the
copy; one that anything but this object still refers to when the round ends (the
poll function kept it, or an exception's traceback holds it: its reference count
says so) is left to it, and a new one made from it. A list changed otherwise
(``list.sort(descriptors)``, C code) is found out when its length has changed,
or when a descriptor is not where its slot says: the list is then made anew from
the futures outstanding (``recover``), and the driver logs a warning.

Gain, measured against plain code (a dict of the descriptors in order of
arrival, a new list of it per round): the bookkeeping alone costs 0.24 us per
future at 64,000 and 0.23 at a million, against 0.94 and 1.82 us
(``PYTHONPATH=src python bench/fast_paths.py --rounds``, 3.11); the whole
``bench/poll_scale.py`` scenario at a million, 24.6 us per future against 28.1
(14 % more), where the flat cost per future is the target.
"""

from __future__ import annotations

import math
import operator
import sys
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, filterfalse
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["MAX_RUNS", "Polled", "RoundEntry"]

# Past this many runs of done descriptors in one compaction, a new list is made
# instead: each run costs a bisection and a move of the pointers after it, about
# 1/30 of what a new list costs per descriptor.
MAX_RUNS = 32

_SLOT = operator.attrgetter("_slot")
_GONE = operator.attrgetter("_gone")

# The reference count of an object, where the interpreter counts references
# (CPython); elsewhere the list is taken as kept, and a new one made each round.
_refcount: Callable[[object], int] | None = (
    sys.getrefcount if sys.implementation.name == "cpython" else None
)


class _Probe:
    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held: list[Any] = []


# What getrefcount says of a list that only a field refers to, read as
# end_round reads the round's list (a field read, passed on at once): 2 on
# CPython 3.10 to 3.15. (Not of a local variable: from 3.14 a local read may
# be borrowed, uncounted.)
_PROBE = _Probe()
_ONLY_A_FIELD = 0 if _refcount is None else _refcount(_PROBE.held)


class RoundEntry(Protocol):
    """What the list of a round keeps on each descriptor: two fields that only
    :class:`Polled` reads and writes, set to ``-1`` and ``False`` as the
    descriptor is made (``core.PollEntry`` declares them)."""

    _slot: int  # its number in order of arrival, once taken in
    _gone: bool  # its future is done, and it was taken in


E = TypeVar("E", bound=RoundEntry)


class _RoundList(list[Any]):
    """The list that the poll function is given: a ``list`` whose methods that
    change it first save a copy of what it held (``original``)."""

    __slots__ = ("original",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.original: _RoundList | None = None


def _saving_first(name: str) -> Callable[..., Any]:
    """``list.<name>``, which first saves a copy of the list if none is saved."""
    change = getattr(list, name)

    def method(self: _RoundList, *args: Any, **kwargs: Any) -> Any:
        if self.original is None:
            self.original = _RoundList(self)
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


class Polled(Generic[E]):
    """The descriptors being polled: taken in, and whose future is not done yet.

    Args:
        recover: what makes the list anew, if the poll function changed it other
            than through its methods: every descriptor whose future is not done,
            in any order (called under the driver's lock; those never taken in
            or dropped already are left out here).
    """

    __slots__ = (
        "_gone",
        "_in_round",
        "_next_slot",
        "_recover",
        "_round",
        "_taken",
        "count",
    )

    def __init__(self, recover: Callable[[], Iterable[E]]) -> None:
        self._recover = recover
        self._round = _RoundList()  # in slot order, done ones not yet cut out
        self._taken: list[E] = []  # since the round began
        self._gone: list[int] = []  # slots of done ones, in _round or _taken
        self._next_slot = 0
        # How many are polled: one field, which start_polling reads without the
        # lock (the lengths of the lists change one after the other), and the
        # core reads as a field (len() would call __len__: two calls per arrival).
        self.count = 0
        self._in_round = False  # the poll function holds _round

    def __len__(self) -> int:
        return self.count

    def add(self, descriptor: E) -> None:
        """Take ``descriptor`` in: it joins the next round."""
        descriptor._slot = self._next_slot
        self._next_slot += 1
        self._taken.append(descriptor)
        self.count += 1

    def discard(self, descriptor: E) -> bool:
        """Drop ``descriptor``, whose future is done (nothing if it was never
        taken in, or was dropped already).

        Returns:
            ``True`` if the poll thread should :meth:`tidy` now: the first
            descriptor dropped since the list was last tidied, outside a round.
        """
        if descriptor._slot < 0 or descriptor._gone:
            return False
        descriptor._gone = True
        gone = self._gone
        gone.append(descriptor._slot)
        self.count -= 1
        if self._in_round:
            return False  # end_round cuts it out
        if not self.count:  # none left: nothing to cut out from
            self._round, self._taken, self._gone = _RoundList(), [], []
            return False
        return len(gone) == 1

    def tidy(self) -> None:
        """Cut out the descriptors dropped since the last round (between rounds,
        on the poll thread)."""
        if self._gone and not self._in_round:
            self._compact()

    def __iter__(self) -> Iterator[E]:
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
        return self._round

    def end_round(self) -> None:
        """The round is over, and the driver holds no reference to its list: the
        list is the executor's again, unless the poll function changed it (then
        the copy saved before is) or something else still refers to it (then a
        copy of it is); the done descriptors are cut out."""
        self._in_round = False
        saved = self._round.original
        if saved is not None:
            self._round = saved
        elif len(self._round) != self.count + len(self._gone) - len(self._taken):
            self._rebuild()  # changed behind the list's methods
            return
        elif _refcount is None or _refcount(self._round) > _ONLY_A_FIELD:
            self._round = _RoundList(self._round)  # kept: it is the poll function's
        if self._gone:
            self._compact()

    def _compact(self) -> None:
        """Cut the done descriptors out of the list, in runs; make a new list
        instead if there are more than ``MAX_RUNS`` runs, or if a descriptor
        is not where its slot says (the list was changed behind its methods)."""
        gone, self._gone = self._gone, []
        gone.sort()
        taken = self._taken  # arrivals since the round began, after _round
        after = taken[0]._slot if taken else math.inf  # slots of _taken from here
        if gone[-1] >= after:
            self._taken = [d for d in taken if not d._gone]
        descriptors = self._round
        end = len(descriptors)
        runs: list[tuple[int, int]] = []
        i, count, stop = 0, len(gone), 0
        while i < count and gone[i] < after:
            if len(runs) == MAX_RUNS:
                self._round = _RoundList(filterfalse(_GONE, descriptors))
                return
            start = bisect_left(descriptors, gone[i], lo=stop, key=_SLOT)
            if start == end or descriptors[start]._slot != gone[i]:
                self._rebuild()
                return
            stop = start + 1
            i += 1
            while i < count and stop < end and descriptors[stop]._slot == gone[i]:
                stop += 1
                i += 1
            runs.append((start, stop))
        for start, stop in reversed(runs):
            list.__delitem__(descriptors, slice(start, stop))

    def _rebuild(self) -> None:
        """Make the list anew from ``recover()``: it was changed other than
        through its methods, and may have lost descriptors or their order."""
        live = [d for d in self._recover() if d._slot >= 0 and not d._gone]
        self._round = _RoundList(sorted(live, key=_SLOT))
        self._taken, self._gone = [], []
        self.count = len(self._round)
