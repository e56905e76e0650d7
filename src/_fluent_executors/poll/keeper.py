"""The store keeper of a poll executor given a store (durable polling): what it has
to write, and the records it holds.

Contract: any thread tells it of a descriptor that entered polling
(:meth:`StoreKeeper.arrived`) and of one whose future is done
(:meth:`StoreKeeper.forget`); the poll thread alone (the async driver: its
loop, through one worker thread at a time), outside the driver's lock, calls
:meth:`StoreKeeper.sync` before each round: one ``add`` of the start
results that arrived since, one ``remove`` of the records of futures done since,
and one ``renew`` of the leases when a third of the lease has passed; each is one
call of the store, whatever the number of records. A descriptor enters the core
(is polled) only once its record is written. A store that fails leaves
everything as it was, to be written at the next sync: the futures stay pending,
and the outage is logged once, at its start, and once at its end. The keeper
holds a lock of its own, for its bookkeeping only, never across a store call.
"""

from __future__ import annotations

import itertools
import math
import threading
import weakref
from typing import TYPE_CHECKING, Any

from ..durable import NewRecord, RecordError, StoredTask

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..durable import Store
    from ..logging import ContainedLogger
    from .descriptor import PollDescriptor

__all__ = ["HELD", "QUEUED", "WAKE", "StoreKeeper", "claimed_error"]

# What StoreKeeper.arrived answers.
HELD, QUEUED, WAKE = 0, 1, 2

# The keeper of each store object in use, by the store's id: one store object
# serves one keeper (one poll executor), from its making until its close().
_keepers: dict[int, weakref.ref[StoreKeeper]] = {}
_keepers_lock = threading.Lock()

# A store that fails is tried again after max(retry_interval, RETRY_FLOOR)
# seconds, twice as long after each failure in a row, up to RETRY_CAP seconds.
RETRY_FLOOR, RETRY_CAP = 0.5, 30.0


def claimed_error(task: StoredTask) -> RecordError | None:
    """Why the future of a claimed record ``task`` fails at once (``resume()``):
    it cannot be read, or it is an intent (whether its remote task started is
    unknown); ``None``: it is polled."""
    if task.error is not None:
        return task.error
    if task.intent:
        return RecordError(
            task.key,
            f"its start call (label {task.label!r}) had not returned when the "
            "process that made it stopped: whether the remote task was started "
            "is unknown",
        )
    return None


class StoreKeeper:
    """The records of one poll executor's futures in its store.

    Args:
        store: the executor's store.
        owned: whether the executor made the store (from a path): it is closed
            as the poll thread ends.
        lease: seconds a record is held for after each write or renewal.
        retry_interval: seconds before the first retry of a store that failed
            (at least :data:`RETRY_FLOOR`; doubled after each failure in a row,
            up to :data:`RETRY_CAP`).
        logger: where to log an outage of the store.
        name: the executor's name, in the messages.

    Raises:
        ValueError: ``store`` serves another keeper that is not closed: two
            executors would hold their records under one owner, and each take
            the other's.
    """

    def __init__(
        self,
        store: Store,
        owned: bool,
        lease: float,
        retry_interval: float,
        logger: ContainedLogger,
        name: str,
    ) -> None:
        self.store = store
        self._owner = store.owner
        self._owned = owned
        self.lease = lease
        self._retry_interval = max(retry_interval, RETRY_FLOOR)
        self._failures = 0  # in a row
        self._retry_at = -math.inf  # after a failure: no sync before then
        self._logger = logger
        self._name = name
        self._lock = threading.Lock()
        self._closed = False
        self._serve(store)
        import uuid  # (imported here: only a poll executor with a store needs it)

        # Record keys: unique to this keeper, across processes and machines too.
        self._prefix, self._serials = uuid.uuid4().hex, itertools.count()
        # Entered polling, record not written yet: descriptor -> its new key.
        self._unwritten: dict[PollDescriptor[Any], str] = {}
        # Written (or being written), future not done: descriptor <-> key.
        self._keys: dict[PollDescriptor[Any], str] = {}
        self._held: dict[str, PollDescriptor[Any]] = {}
        self._removals: list[str] = []  # of futures done since the last sync
        # Of futures done, the keys whose records are not removed yet (their
        # removal waits, or is under way): held still, never claimed back.
        self._removing: set[str] = set()
        self._releases: list[str] = []  # claimed, given no future: to let go of
        # While resume() claims (how many at once): the keys forgotten meanwhile,
        # which a claim may have returned, and which are not to be adopted.
        self._claims = 0
        self._forgotten: set[str] = set()
        self._renewed_at: float | None = None  # the driver's clock
        # A renewal was made since renewal_due() last let a round begin: the
        # next round begins even if the next renewal is due already (a store
        # whose renewal takes longer than a third of the lease).
        self._renewed = False
        self._failing = False  # the store failed at the last call
        self._now = 0.0  # the time of the sync under way
        self.errors = 0  # failed calls of the store, in all

    # -- any thread ------------------------------------------------------------------

    def arrived(self, descriptor: PollDescriptor[Any]) -> int:
        """``descriptor`` entered polling: its record is to be written at the
        next sync, after which it is polled.

        Returns:
            :data:`HELD` if its record is held already (:meth:`adopt`): the
            driver polls it at once; :data:`WAKE` if it is the first to write
            since the last sync: the driver wakes the poll thread (the next ones
            need not, until it has synced); else :data:`QUEUED`.
        """
        with self._lock:
            if descriptor in self._keys:
                return HELD
            unwritten = self._unwritten
            first = not unwritten
            unwritten[descriptor] = f"{self._prefix}-{next(self._serials)}"
            return WAKE if first else QUEUED

    def adopt(self, task: StoredTask, descriptor: PollDescriptor[Any]) -> bool:
        """``descriptor`` polls the claimed record ``task`` (``resume()``).

        Returns:
            ``False`` if this executor polls that record already (its own lease
            ran out and it claimed it back): ``descriptor`` is not needed.
        """
        with self._lock:
            if self._holds(task.key):
                return False
            self._keys[descriptor] = task.key
            self._held[task.key] = descriptor
            return True

    def unadopt(self, descriptor: PollDescriptor[Any]) -> bool:
        """Undo :meth:`adopt` (``resume()`` failed after it): ``descriptor``
        polls its record no more, and the record is not removed as its future
        ends (it is to be released).

        Returns:
            ``False`` if the future ended already: its record goes as usual.
        """
        with self._lock:
            key = self._keys.pop(descriptor, None)
            if key is None:
                return False
            del self._held[key]
            return True

    def forget(self, descriptor: PollDescriptor[Any]) -> bool:
        """The future of ``descriptor`` is done: its record goes at the next sync
        (one never written is not written).

        Returns:
            ``True`` if the poll thread should wake to sync.
        """
        with self._lock:
            if self._unwritten.pop(descriptor, None) is not None:
                return False
            key = self._keys.pop(descriptor, None)
            if key is None:
                return False
            del self._held[key]
            self._removals.append(key)
            self._removing.add(key)
            if self._claims:
                self._forgotten.add(key)
            return len(self._removals) == 1

    def pending(self) -> bool:
        """Whether a sync has something to write."""
        return bool(self._unwritten or self._removals or self._releases)

    def due(self, now: float) -> bool:
        """Whether the poll thread should sync at ``now`` (the driver's clock)."""
        timeout = self.wait_timeout(now)
        return timeout is not None and timeout <= 0.0

    def _renewal_at(self) -> float:
        """When the leases are due for renewal (the driver's clock): a third of
        the lease after the last renewal, or at once for records claimed before
        any (``resume()`` first)."""
        renewed_at = self._renewed_at
        return -math.inf if renewed_at is None else renewed_at + self.lease / 3

    def renewal_due(self, now: float) -> bool:
        """Whether the driver may not begin a round at ``now`` (its clock), as
        :meth:`holds_rounds` answers; once a renewal has been made, it answers
        ``False`` once, so that a round begins between two renewals however long
        they take. Called by the driver once before each round it may begin."""
        if self._renewed:
            self._renewed = False
            return False
        return self.holds_rounds(now)

    def holds_rounds(self, now: float) -> bool:
        """Whether no round may begin at ``now`` (the driver's clock): the
        leases are due for renewal, or the store fails and the last renewal that
        succeeded is two thirds of the lease old (whatever the retry back-off
        says: a lease might run out during the round, and another process take
        its task over); but not after a renewal until :meth:`renewal_due` has
        let a round begin. The futures stay pending meanwhile; rounds begin
        again once a renewal succeeds."""
        if self._renewed or not self._held:
            return False
        renewed_at = self._renewed_at
        return renewed_at is None or now >= min(
            renewed_at + self.lease * 2 / 3, max(self._renewal_at(), self._retry_at)
        )

    def wait_timeout(self, now: float) -> float | None:
        """Seconds from ``now`` (the driver's clock) until the next sync: at once
        if something is to be written, when the leases are due for renewal, and
        after a failure not before the retry interval; ``None``: nothing to do."""
        if self.pending():
            due_at = -math.inf
        elif self._held:
            due_at = self._renewal_at()
        else:
            return None
        return max(max(due_at, self._retry_at) - now, 0.0)

    # -- the poll thread ---------------------------------------------------------------

    def sync(self, now: float) -> list[PollDescriptor[Any]]:
        """Write what arrived, remove what is done, renew the leases if due (at
        ``now``, on the driver's clock).

        Returns:
            The descriptors whose records are now written: the driver polls them.
            Those whose start result cannot be stored have failed with the
            :class:`~fluent_executors.stores.RecordError`.
        """
        self._now = now
        with self._lock:
            unwritten, self._unwritten = self._unwritten, {}
            removals, self._removals = self._removals, []
            for descriptor, key in unwritten.items():  # a forget() now removes it
                self._keys[descriptor] = key
                self._held[key] = descriptor
        written: list[PollDescriptor[Any]] = []
        if unwritten:
            records = [NewRecord(key, d.result) for d, key in unwritten.items()]
            failed = self._call("write", self._add, records)
            if failed is None:  # nothing written: again at the next sync
                self._put_back(unwritten)
            else:
                if self._renewed_at is None:  # the first: renewed a third later
                    self._renewed_at = now
                for descriptor, key in unwritten.items():
                    error = failed.get(key)
                    if error is None:
                        written.append(descriptor)
                        continue
                    with self._lock:  # never written: nothing to remove
                        if self._keys.pop(descriptor, None) is not None:
                            del self._held[key]
                    descriptor.yield_exception(error)
        if removals:
            removed = self._call("remove", self.store.remove, removals) is not None
            with self._lock:
                if removed:
                    self._removing.difference_update(removals)
                else:
                    self._removals[:0] = removals
        with self._lock:
            releases, self._releases = self._releases, []
        if releases and self._call("release", self.store.release, releases) is None:
            with self._lock:
                self._releases[:0] = releases
        if self._held and now >= self._renewal_at():
            self._renew(now)
        return written

    def _renew(self, now: float) -> None:
        """Renew this owner's leases; if it holds fewer records than it should,
        let go of those another process took over."""
        with self._lock:  # held, or done and not removed yet
            keys = [*self._held, *self._removing]
        held = self._call("renew", self._renew_leases, keys)
        if held is None:
            return
        self._renewed_at = now
        self._renewed = True
        if held < len(keys):
            self._let_go()

    def _let_go(self) -> None:
        """Fail the futures whose records another process holds now (their lease
        ran out: the store failed, or this process stalled, for longer than the
        lease), without removing the records: that process polls them."""
        mine = self._call("read", self._mine)
        if mine is None:
            return
        with self._lock:
            lost = [(key, d) for key, d in self._held.items() if key not in mine]
            for key, descriptor in lost:
                del self._held[key], self._keys[descriptor]
        for key, descriptor in lost:
            descriptor.yield_exception(
                RecordError(
                    key,
                    f"the lease of poll executor {self._name!r} ran out (its store "
                    "failed, or its process stalled, for longer than the lease) "
                    "and another process took the task over",
                )
            )

    def finish(self, now: float) -> None:
        """The poll thread ends (every future done, or the thread failed): a
        last sync removes the records of the futures done last; a store made by
        the executor is closed. Records that a failing store keeps are taken
        over, once their lease runs out, by the next ``resume()``."""
        try:
            self.sync(now)
        finally:
            self.close()

    def close(self) -> None:
        """Close the store if the executor made it (:meth:`finish` does, or the
        executor that ends without having started its poll thread); from then
        on another executor may be given the store."""
        with _keepers_lock:
            self._closed = True
            if _keepers.get(id(self.store)) is self._ref:
                del _keepers[id(self.store)]
        if self._owned:
            self._call("close", self.store.close)

    def _serve(self, store: Store) -> None:
        """Take ``store`` for this keeper alone.

        Raises:
            ValueError: another keeper, not closed, has it.
        """
        self._ref: weakref.ref[StoreKeeper] = weakref.ref(self)
        with _keepers_lock:
            ref = _keepers.get(id(store))
            other = None if ref is None else ref()
            if other is not None and not other._closed and other.store is store:
                raise ValueError(
                    f"store {store!r} serves poll executor {other._name!r} already: "
                    "one store object serves one poll executor (executors sharing "
                    "one would share its owner and take each other's records); "
                    "give each executor a store of its own, of the same database "
                    "if wanted"
                )
            _keepers[id(store)] = self._ref

    def claim(self, limit: int | None) -> list[StoredTask]:
        """The records whose lease has run out, now held here (``resume()``),
        but those this keeper wrote or holds (or held since the claim began),
        which are polled here already. Unless it raises, :meth:`end_claim` is
        to be called once the records are adopted.

        Raises:
            StoreError: none was taken.
        """
        with self._lock:
            self._claims += 1
        try:
            tasks = self.store.claim(self.lease, limit, mine=True)
            if not isinstance(tasks, list) or not all(
                isinstance(task, StoredTask) and isinstance(task.key, str)
                for task in tasks
            ):
                raise TypeError(
                    f"store.claim() returned {tasks!r}, not a list of StoredTask"
                )
            with self._lock:
                return [task for task in tasks if not self._holds(task.key)]
        except BaseException:
            self.end_claim()
            raise

    def release(self, tasks: Sequence[StoredTask]) -> None:
        """Let go of claimed records that no future polls (``resume()`` failed
        half-way), so that the next claim takes them; if the store fails, the
        poll thread's next sync tries again (while it runs, it renews this
        owner's leases: without it, they run out)."""
        keys = [task.key for task in tasks]
        if keys and self._call("release", self.store.release, keys) is None:
            with self._lock:
                self._releases += keys

    def end_claim(self) -> None:
        """The records of a :meth:`claim` are adopted."""
        with self._lock:
            self._claims -= 1
            if not self._claims:
                self._forgotten.clear()

    def _holds(self, key: str) -> bool:
        """Whether the record ``key`` is this keeper's own (written here), or
        held, or its future is done but the record not removed yet, or was held
        since a claim began (under the lock)."""
        return (
            key.startswith(self._prefix)
            or key in self._held
            or key in self._removing
            or key in self._forgotten
        )

    def _put_back(self, unwritten: dict[PollDescriptor[Any], str]) -> None:
        """After a failed write: those not done since are written next time."""
        with self._lock:
            for descriptor, key in unwritten.items():
                if self._keys.pop(descriptor, None) is not None:
                    del self._held[key]
                    self._unwritten[descriptor] = key
                else:  # done meanwhile: never written, nothing to remove
                    self._removals.remove(key)
                    self._removing.discard(key)

    # The store's calls whose answers are read, each answer checked: a user's
    # store that answers wrongly fails the call (contained by _call).

    def _add(self, records: list[NewRecord]) -> dict[str, RecordError]:
        failed = self.store.add(records, self.lease)
        if not isinstance(failed, dict) or not all(
            isinstance(error, BaseException) for error in failed.values()
        ):
            raise TypeError(
                f"store.add() returned {failed!r}, not a dict of RecordError by key"
            )
        return failed

    def _renew_leases(self, keys: list[str]) -> int:
        held = self.store.renew(keys, self.lease)
        if not isinstance(held, int):
            raise TypeError(f"store.renew() returned {held!r}, not an int")
        return held

    def _mine(self) -> set[str]:
        """The keys of the records this owner holds."""
        records = self.store.records()
        if not isinstance(records, list):
            raise TypeError(f"store.records() returned {records!r}, not a list")
        return {task.key for task in records if task.owner == self._owner}

    def _call(self, what: str, method: Any, *args: Any) -> Any:
        """``method(*args)``; ``None`` if the store failed (logged once an
        outage, and counted; a store of the user's that raises anything else, or
        answers wrongly, is contained alike): no sync before the retry interval
        has passed."""
        try:
            answer = method(*args)
        except BaseException:  # StoreError, or a user's store's own bug
            # Under the lock: release() calls the store in the thread of
            # resume() while the poll thread may too (without a GIL, two
            # "errors += 1" at once could count one).
            with self._lock:
                self.errors += 1
                self._retry_at = self._now + min(
                    self._retry_interval * 2.0 ** min(self._failures, 64), RETRY_CAP
                )
                self._failures += 1
                outage_begins, self._failing = not self._failing, True
            if outage_begins:
                self._logger.warning(
                    "store of poll executor %r failed to %s; its futures stay "
                    "pending and the store is tried again, less and less often (logged "
                    "once per outage)",
                    self._name,
                    what,
                    exc_info=True,
                )
            return None
        with self._lock:
            self._failures = 0
            outage_ends, self._failing = self._failing, False
            errors = self.errors
        if outage_ends:
            self._logger.warning(
                "store of poll executor %r works again (%d failed calls in all)",
                self._name,
                errors,
            )
        return answer if answer is not None else True
