"""The poll core: the decisions of a poll executor's rounds, as a state machine that
does no I/O, starts no thread and reads no clock (it is told the time).

A driver (``thread.PollThread``; an async one is built the same way) feeds it
events and acts on its answers:

- a future entered polling: :meth:`PollCore.arrive` (without the lock), then, if
  it answers ``True``, :meth:`PollCore.admit` (under it);
- a future is done: :meth:`PollCore.forget`; :meth:`PollCore.notify`: poll soon;
- it is now *t*: :meth:`PollCore.due` (start a round?), :meth:`PollCore.wait_timeout`
  (how long to sleep), :meth:`PollCore.take_in` (between rounds);
- a round: :meth:`PollCore.begin_round`, then :meth:`PollCore.next_batch` ("poll
  this batch") until it answers ``None``; for each batch, :meth:`PollCore.lending`
  just before the call of the poll function and :meth:`PollCore.returned` or
  :meth:`PollCore.raised` just after; the latter answers with a
  :class:`PollFailure` (the futures of the batch to fail, or the retry's delay);
  then :meth:`PollCore.end_round`, which sets the next wake-up, once the driver
  holds no reference to a batch of the round (the round's list is reused only if
  nothing refers to it then: ``rounds.Polled``).

Contract: the driver holds one lock around every call but ``arrive``, ``defer``,
``age_of``, ``list_changed`` and the round's ``next_batch``, ``lending``,
``returned`` and ``raised``, which only the driver's poll loop calls, outside the
lock, between ``begin_round`` and ``end_round``. The core holds no lock, calls back
nothing of the driver's, and keeps no reference to the driver; it calls user code
only through the ``poll_retry_policy`` (contained: see :meth:`PollCore.raised`).

The core's per-descriptor bookkeeping lives on each descriptor, in the slots of
:class:`PollEntry` (its base class), so that a round reads it with no call per
descriptor.
"""

from __future__ import annotations

import math
import operator
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar

from ..wrapper import seconds_returned
from .rounds import Polled

if TYPE_CHECKING:
    from ..retry_policy import RetryPolicy

__all__ = ["PollCore", "PollEntry", "PollFailure"]


class _Resolvable(Protocol):
    """What the core asks of the future of an entry."""

    def done(self) -> bool: ...

    def leave_polling(self) -> object:
        """It is done and not polled: it lets go of its entry."""


F = TypeVar("F", bound=_Resolvable)
E = TypeVar("E", bound="PollEntry[Any]")

# A descriptor's time of "not deferred", one float for all (-math.inf written in
# __init__ would make a float per descriptor, walked by every full collection).
_NOT_DEFERRED = -math.inf
_LAST_POLLED = operator.attrgetter("_last_polled")


class PollEntry(Generic[F]):
    """What the core keeps of one future being polled (the base class of
    :class:`~fluent_executors.PollDescriptor`, which adds the poll function's
    methods): the future, the delegate's result that drives its poll, and the
    bookkeeping of the core and of its list (``rounds.RoundEntry``), in slots,
    so that a round reads them with no call per descriptor and the descriptor
    is made with one.

    Args:
        future: the future that the poll resolves (type ``F``, with ``done()``).
        result: the delegate's result, which the poll function is given.
    """

    __slots__ = (
        "_future",
        "_gone",
        "_last_polled",
        "_not_before",
        "_polls",
        "_result",
        "_rounds_from",
        "_since",
        "_slot",
    )

    def __init__(self, future: F, result: Any) -> None:
        self._future = future
        self._result = result
        self._polls = 0  # calls of the poll function it was passed to, counted
        # one by one; plus, while the core counts rounds that pass every
        # descriptor (nothing deferred yet) and until its future is done, those
        # since it was taken in:
        self._rounds_from: int | None = None  # the core's full rounds then
        self._not_before = _NOT_DEFERRED  # deferred until then (the driver's clock)
        self._since = self._last_polled = 0.0  # set as it arrives
        self._slot = -1  # the list's (rounds.RoundEntry): not taken in yet
        self._gone = False


class PollFailure(NamedTuple):
    """The core's answer to a failed call of the poll function."""

    retry_in: float | None
    """Seconds until the next poll, the futures of the call staying pending; or
    ``None``: fail them with the error (the next poll in ``default_interval``)."""
    failures: int
    """Consecutive failed calls, this one included."""
    policy_error: BaseException | None
    """What the ``poll_retry_policy`` raised, if it did (then ``retry_in`` is
    ``None``)."""


class PollCore(Generic[E]):
    """The rounds of one poll executor: which descriptors are polled, when, and in
    which batches.

    Args:
        default_interval: seconds between polls when the poll function returns
            ``None``, raises, or returns something that is not a number.
        max_batch: at most this many descriptors per call (``None``: no limit).
        poll_retry_policy: asked after a failed call whether to keep the futures
            of that call pending (``None``: fail them).
        recover: the descriptors of every future outstanding (any order), from
            which the core makes its list anew if the poll function changed it
            behind its methods (called under the driver's lock).
    """

    def __init__(
        self,
        default_interval: float,
        *,
        max_batch: int | None = None,
        poll_retry_policy: RetryPolicy | None = None,
        recover: Callable[[], Iterable[E]],
    ) -> None:
        self.default_interval = default_interval
        self.max_batch = max_batch
        self.poll_retry_policy = poll_retry_policy
        self._recover_from = recover
        self._polled: Polled[E] = Polled(self._recover)  # taken in, future not done
        # Futures that entered polling and are not taken in yet: appended to
        # without the lock (deque.append is atomic), taken in under it.
        self._arrivals: deque[E] = deque()
        self._fresh = 0  # taken in since the last round began: in no round yet
        self._wake = False  # poll at once: notify(), or a future arrived while idle
        self._deadline: float | None = None  # time of the next poll; None: none
        self._any_deferred = False  # a descriptor was deferred: rounds filter
        # Until the first defer, every round passes every descriptor once (in one
        # call, or in calls of max_batch): PollEntry._polls and the time of the
        # last poll are then counted by rounds, not per descriptor and call.
        self._full_rounds = 0  # such rounds so far
        self._full_round_at = 0.0  # when the last one started
        self._counting_rounds = True
        self._poll_failures = 0  # consecutive failed calls of the poll function
        self._failing_since = 0.0  # when the first of them failed
        # The poll function changed its list behind its methods: None never,
        # True not told yet, False told.
        self._list_changed: bool | None = None
        # The round under way: its list, whether it is full, the descriptors due
        # (a round that is not full, from its first batch), where the next batch
        # starts, and the earliest delay so far.
        self._batch: list[E] = []
        self._full = True
        self._due: list[E] | None = None
        self._next = 0
        self._delay = math.inf
        # Whether this round has called the poll function, and whether the last
        # round did: then the next one comes when a call asked, and an arrival
        # joins it; after a round that called nothing (every descriptor deferred)
        # the next wake-up is a deferred one's time, and an arrival is polled at
        # once, not then.
        self._called = False
        self._cadenced = True

    def __len__(self) -> int:
        """The number of descriptors taken in whose future is not done."""
        return self._polled.count

    # -- futures coming and going ----------------------------------------------------

    def arrive(self, entry: E, now: float) -> bool:
        """A future entered polling at ``now`` (without the lock: the delegate's
        threads call it once per future).

        Returns:
            ``True`` if the driver should take it in at once (:meth:`admit`, under
            the lock): nothing else was polled as it arrived, or there is no
            deadline. Otherwise it joins the next round, taken in by the driver.
        """
        entry._since = entry._last_polled = now
        # Looked at before and after the append: the driver may take it in
        # meanwhile.
        at_once = not self._polled.count or not self._cadenced
        self._arrivals.append(entry)
        return at_once or self._deadline is None or not self._polled.count

    def admit(self, *, if_idle: bool = False) -> bool:
        """Take the arrivals in; with ``if_idle``, only poll them at once if
        nothing was polled or there is no deadline.

        Returns:
            ``True`` if the driver should wake to poll now: futures taken in are in
            no round yet. (Called during a round, from a poll function that calls
            ``stats()``, ``attach()`` or a sync delegate's ``submit``, it makes one
            more round after the current one.)
        """
        idle = (
            not if_idle
            or not self._polled.count
            or self._deadline is None
            or not self._cadenced
        )
        self._take_arrivals()
        if idle and self._fresh:  # else a round that polls them has begun
            self._wake = True
            return True
        return False

    def _take_arrivals(self) -> None:
        """Move the arrivals into the list, but those done meanwhile (their
        ``forget`` found nothing to drop), and count them in ``_fresh``."""
        arrivals, polled = self._arrivals, self._polled
        if not arrivals:
            return
        rounds_from = self._full_rounds if self._counting_rounds else None
        taken = 0
        while arrivals:
            entry = arrivals.popleft()
            if entry._future.done():
                entry._future.leave_polling()  # no reference cycle
                continue
            entry._rounds_from = rounds_from
            polled.add(entry)
            taken += 1
        self._fresh += taken

    def forget(self, entry: E) -> bool:
        """The future of ``entry`` is done: drop it; its ``polls`` stop counting
        rounds.

        Returns:
            ``True`` if the driver should wake to :meth:`take_in` (which tidies
            the list).
        """
        tidy = self._polled.discard(entry)
        rounds_from = entry._rounds_from
        if rounds_from is not None:
            entry._polls += self._full_rounds - rounds_from
            entry._rounds_from = None
        return tidy

    def take_in(self) -> None:
        """Between rounds: take the arrivals in and cut the descriptors of futures
        done since the last round out of the list. Those in no round yet are
        polled at once if there is no deadline, else at the next round."""
        self._take_arrivals()
        self._polled.tidy()
        if self._fresh and self._deadline is None:
            self._wake = True

    def notify(self) -> None:
        """Poll as soon as possible (not before a deferred descriptor's time)."""
        self._wake = True

    def defer(self, entry: E, until: float) -> None:
        """Do not pass ``entry`` to the poll function before ``until`` (without
        the lock)."""
        entry._not_before = until
        self._any_deferred = True

    # -- what the descriptors tell ---------------------------------------------------

    @staticmethod
    def age_of(entry: PollEntry[Any], now: float) -> float:
        """Seconds from ``entry``'s arrival until ``now`` (without the lock)."""
        return now - entry._since

    def polls_of(self, entry: E) -> int:
        """How many calls of the poll function ``entry`` was passed to."""
        rounds_from = entry._rounds_from
        if rounds_from is None:
            return entry._polls
        return entry._polls + self._full_rounds - rounds_from

    def list_changed(self) -> bool:
        """``True`` once, after the poll function changed its list other than
        through the list's methods: the driver warns (without the lock)."""
        if self._list_changed:
            self._list_changed = False
            return True
        return False

    def _recover(self) -> Iterable[E]:
        if self._list_changed is None:
            self._list_changed = True
        return self._recover_from()

    # -- time ------------------------------------------------------------------------

    def due(self, now: float) -> bool:
        """Whether a round is due at ``now``."""
        if not self._polled.count:
            return False
        if self._wake:
            return True
        return self._deadline is not None and now >= self._deadline

    def wait_timeout(self, now: float) -> float | None:
        """Seconds to sleep from ``now`` until the next round (``None``: until
        woken)."""
        if not self._polled.count or self._deadline is None:
            return None
        return max(self._deadline - now, 0.0)

    # -- a round -----------------------------------------------------------------------

    def begin_round(self, now: float) -> bool:
        """Begin a round at ``now`` if one is due.

        Returns:
            ``True`` if a round began: the driver asks :meth:`next_batch` until it
            answers ``None``, then calls :meth:`end_round`.
        """
        if not self.due(now):
            return False
        self._wake = False
        full = not self._any_deferred  # every descriptor is due
        if full:
            self._full_rounds += 1
            self._full_round_at = now
        elif self._counting_rounds:  # descriptors count their own now
            self._stop_counting_rounds()
        self._batch = self._polled.begin_round()
        self._full = full
        self._due = None
        self._next = 0
        self._delay = math.inf
        self._called = False
        self._fresh = 0
        return True

    def _stop_counting_rounds(self) -> None:
        """Turn the counts of full rounds into each descriptor's own: from now on
        rounds count per descriptor."""
        rounds, polled_at = self._full_rounds, self._full_round_at
        for entry in self._polled:
            rounds_from = entry._rounds_from
            if rounds_from is not None and rounds > rounds_from:
                entry._polls += rounds - rounds_from
                entry._last_polled = polled_at
            entry._rounds_from = None
        self._counting_rounds = False

    def next_batch(self, now: float) -> list[E] | None:
        """The next batch to pass to the poll function, at ``now``; ``None``: the
        round is over.

        A full round (nothing was ever deferred) passes every descriptor, in the
        order of arrival, which is also the order of their last polls, and counts
        nothing per descriptor; with no ``max_batch`` in one call, of the round's
        list itself. Otherwise the descriptors due at the round's first batch
        (not deferred past it), those longest since their last poll first when
        ``max_batch`` is set, and each batch without those done meanwhile. A
        descriptor whose future another thread resolves meanwhile may still be
        passed (resolving it again is harmless).
        """
        batch, size, start = self._batch, self.max_batch, self._next
        if self._full:
            if size is None or size >= len(batch):  # one call: no copy of the list
                self._next = -1
                return batch if start == 0 else None
            if start < 0 or start >= len(batch):
                return None
            self._next = start + size
            return batch[start : start + size]
        due = self._due
        if due is None:
            due = self._due = [d for d in batch if d._not_before <= now]
            self._delay = self._next_deferred(batch, now)
            if size is not None:
                due.sort(key=_LAST_POLLED)
        size = size or len(due) or 1
        while start < len(due):
            self._next = start + size
            chunk = [d for d in due[start : start + size] if not d._future.done()]
            start += size
            if chunk:
                for entry in chunk:
                    entry._polls += 1
                    entry._last_polled = now
                return chunk
        return None

    def lending(self, batch: list[E]) -> None:
        """``batch`` goes to the poll function now. The driver lets go of it once
        the call is over: the round's list is reused only if nothing else refers
        to it at :meth:`end_round`."""
        self._called = True

    def returned(self, batch: list[E], value: object) -> bool:
        """The poll function returned ``value`` for ``batch``: the delay until the
        next poll (``None``: ``default_interval``).

        Returns:
            ``False`` if ``value`` is not a number of seconds (a ``bool``, a
            string, NaN): ``default_interval`` is used, and the driver may warn.
        """
        self._poll_failures = 0
        delay = self.default_interval if value is None else seconds_returned(value)
        if delay is None:
            self._delay = min(self._delay, self.default_interval)
            return False
        self._delay = min(self._delay, delay)
        return True

    def raised(self, batch: list[E], error: BaseException, now: float) -> PollFailure:
        """The poll function raised ``error`` for ``batch`` at ``now``: the
        ``poll_retry_policy`` decides whether its futures stay pending (then the
        next poll comes after the policy's delay) or fail with ``error`` (the
        driver fails them; the next poll comes after ``default_interval``). It is
        asked as the retry executor asks it (``next_delay``, with the seconds since
        the first failure in a row: ``max_duration``, ``before_sleep`` and delay
        hints apply). A policy that raises, or gives a bad delay, counts as
        "fail"."""
        self._poll_failures += 1
        failures = self._poll_failures
        if failures == 1:
            self._failing_since = now
        retry_in, policy_error = None, None
        policy = self.poll_retry_policy
        if policy is not None:
            from ..retry_policy import ask_policy  # loaded: the policy is one of its

            failed: Future[Any] = Future()
            failed.set_exception(error)
            try:
                retry_in = ask_policy(
                    policy, failures, failed, now - self._failing_since
                )
            except BaseException as raised:  # the policy's: contained
                policy_error = raised
        if retry_in is None:
            self._poll_failures = 0
        self._delay = min(
            self._delay, self.default_interval if retry_in is None else retry_in
        )
        return PollFailure(retry_in, failures, policy_error)

    def end_round(self, now: float) -> None:
        """The round is over at ``now``: the list is the core's again, and the
        next wake-up is set from the earliest delay returned and the first
        deferred descriptor's time. The arrivals are taken in."""
        self._batch = []
        self._due = None
        self._polled.end_round()
        delay = self._delay
        self._cadenced = self._called
        if self._any_deferred:  # the poll function may have deferred some
            delay = min(delay, self._next_deferred(self._polled, now))
        self._deadline = now + delay if delay < math.inf else None
        self.take_in()

    @staticmethod
    def _next_deferred(entries: Iterable[PollEntry[Any]], now: float) -> float:
        """Seconds from ``now`` until the first of ``entries`` deferred is due
        (``inf``: none)."""
        later = [d._not_before for d in entries if d._not_before > now]
        return min(later) - now if later else math.inf
