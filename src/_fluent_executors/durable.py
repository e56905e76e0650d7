"""What durable polling stands on: the store protocol (:class:`Store`), a record as
written (:class:`NewRecord`) and as read (:class:`StoredTask`), the store's errors,
and :class:`SQLStore`, what the two SQL stores of ``fluent_executors.stores`` share.

Contract: a store keeps one record per remote task, in a named *queue* (one poll
executor's tasks: its poll function knows how to poll them). A record is held by
one *owner* (a process; one store object is one owner) until its *lease* runs out.
Every method does a constant number of statements, whatever the number of records
it is given or finds; each is one transaction: it is done whole, or not at all
(:class:`StoreError`). Any thread may call a store's methods; a store serialises
its own calls.

Lease times are wall-clock seconds since the epoch (:func:`time.time`, or the
``clock`` given to the store), not :func:`time.monotonic`: the processes sharing a
store, on one machine or several, must compare them. Machines sharing a store keep
their clocks in step (NTP); a clock ahead of the others takes their tasks over
early, by as much as it is ahead.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .public import publish
from .wrapper import check_callable, check_non_negative

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "NewRecord",
    "RecordError",
    "SQLStore",
    "Serializer",
    "Store",
    "StoreError",
    "StoredTask",
]

TABLE = "fluent_executors_tasks"
"""The table that both SQL stores keep every queue's records in."""


class StoreError(Exception):
    """A store could not be read or written: the database is unreachable, was
    restarted, is locked, or its disk is full. Nothing of the call that raised it
    was done (its transaction was rolled back); the same call may be made again.
    Its ``__cause__`` is the database driver's error.

    .. versionadded:: 0.2.0
    """


class RecordError(ValueError):
    """One record could not be written or read: a start result that the store's
    serializer cannot encode, or a stored record that it cannot decode (written by
    another serializer, or corrupt). Its ``__cause__`` is the serializer's error.

    Args:
        key: the record's key (``str``).
        message: what went wrong.

    .. versionadded:: 0.2.0
    """

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"record {key!r}: {message}")
        self.key = key
        """The key of the record (``str``)."""


class Serializer(Protocol):
    """How a store turns start results into text and back; the :mod:`json` module
    is one (the default of both stores).

    .. versionadded:: 0.2.0
    """

    def dumps(self, obj: Any, /) -> str:
        """The text of ``obj``; raises (any ``Exception``) if it cannot."""
        ...

    def loads(self, s: str, /) -> Any:
        """The object of the text ``s``; raises (any ``Exception``) if it cannot."""
        ...


class NewRecord(NamedTuple):
    """A record to write (:meth:`Store.add`).

    .. versionadded:: 0.2.0
    """

    key: str
    """The record's identity, unique among every queue of the store, made by the
    writer (a poll executor: a random UUID's hex digits, unique to it, and a
    serial number). Writing a key again replaces its record (so an intent is
    replaced by its start result)."""
    result: object = None
    """The start call's result, which the poll function's descriptors hold (the
    remote task's identifier), stored as its serializer's text. Ignored for an
    intent."""
    intent: bool = False
    """Whether the start call has not returned yet (``True``), so that a record
    is left to reconcile if the process dies before the result is written."""
    label: str | None = None
    """The program's text for the task (its input's name, say), kept unchanged
    when the key is written again with no label. A poll executor writes none:
    labels are for records a program writes through the store itself."""


class StoredTask(NamedTuple):
    """A record as read back (:meth:`Store.claim`, :meth:`Store.records`).

    .. versionadded:: 0.2.0
    """

    key: str
    """The record's identity (see :attr:`NewRecord.key`)."""
    result: Any
    """The start result, decoded (``None`` for an intent, or a record that could
    not be decoded)."""
    intent: bool
    """Whether it was written before its start call returned (``True``); then
    whether the remote task was started is unknown, and the program reconciles
    it with its service."""
    label: str | None
    """The text its writer gave (:attr:`NewRecord.label`); ``None`` in the
    records of a poll executor, which writes no label."""
    owner: str
    """The owner that holds its lease (``""``: none, it was released)."""
    expires: float
    """When its lease runs out, in wall-clock seconds since the epoch."""
    error: RecordError | None = None
    """Why it could not be decoded (a corrupt record), or ``None``."""


class Store(Protocol):
    """The store that a poll executor writes its remote tasks to, so that they
    survive a crash of the process and can be shared by several processes.

    A store keeps the records of one queue (:attr:`queue`) for one owner
    (:attr:`owner`). Every method is one transaction of a constant number of
    statements; each raises :class:`StoreError` when the store cannot be read or
    written, and then did nothing. ``lease`` is in seconds (a float > 0); lease
    times are wall-clock seconds since the epoch, compared across processes and
    machines. :class:`~fluent_executors.SQLiteStore` and
    :class:`~fluent_executors.PostgresStore` are the library's stores. One store
    object serves one poll executor: executors sharing one would share its owner,
    and take each other's records; give each its own.

    .. versionadded:: 0.2.0
    """

    @property
    def queue(self) -> str:
        """The queue whose records this store reads and writes (``str``)."""
        ...

    @property
    def owner(self) -> str:
        """The identity this store holds leases under (``str``), unique among
        the live processes sharing the store; kept across restarts, it lets a
        restarted process take its records back without waiting for their
        lease."""
        ...

    def add(self, records: Sequence[NewRecord], lease: float) -> dict[str, RecordError]:
        """Write ``records``, held by this owner for ``lease`` seconds from now;
        a key written before is replaced.

        Returns:
            The records not written, by key, with why (a result the serializer
            cannot encode); every other record is written.

        Raises:
            StoreError: nothing was written.
        """
        ...

    def remove(self, keys: Collection[str]) -> None:
        """Delete the records of ``keys`` (whoever holds them; a missing key is no
        error).

        Raises:
            StoreError: nothing was deleted.
        """
        ...

    def release(self, keys: Collection[str]) -> None:
        """Let go of the records of ``keys`` that this owner holds: they are
        held by no owner (``""``) and their lease has run out, so that the next
        claim of any owner, this one's too, takes them (a missing key, or one
        another owner holds, is left as it is).

        Raises:
            StoreError: nothing was released.
        """
        ...

    def renew(self, keys: Collection[str], lease: float) -> int:
        """Extend the leases of the records of ``keys`` that this owner holds to
        ``lease`` seconds from now (others of this owner, an earlier process's
        under the same owner, are left to run out).

        Returns:
            How many records of ``keys`` this owner holds (fewer than asked:
            others took over some whose lease had run out).

        Raises:
            StoreError: no lease was extended.
        """
        ...

    def claim(
        self, lease: float, limit: int | None = None, *, mine: bool = False
    ) -> list[StoredTask]:
        """Take over the records of the queue whose lease has run out (of a
        process that died), for ``lease`` seconds from now: at most ``limit``
        (``None``: all), those expiring first. With ``mine``, those this owner
        holds too: left by an earlier process under the same owner, which
        restarted, they are taken back at once (and those this process holds
        are read again). Two owners claiming at once never both get the same
        record.

        Returns:
            The records taken, each decoded (or with its :attr:`StoredTask.error`).

        Raises:
            StoreError: none was taken.
        """
        ...

    def records(self) -> list[StoredTask]:
        """Every record of the queue, whoever holds it, decoded; nothing changes.

        Raises:
            StoreError: the store could not be read.
        """
        ...

    def close(self) -> None:
        """Close the store's connection; calling it again does nothing."""
        ...


def _default_owner() -> str:
    """``host:pid:random``: unique, and tells an operator where it ran."""
    import socket  # (imported here: 4 ms, for a store without an owner given)
    import uuid

    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def check_lease(lease: object) -> float:
    """``lease`` as a float, or an error naming it (:func:`check_seconds`)."""
    return check_seconds("lease", lease)


def check_seconds(argument: str, value: object) -> float:
    """``value`` as a float, or an error naming ``argument``.

    Raises:
        TypeError: not a real number.
        ValueError: not finite and > 0.
    """
    try:
        seconds = check_non_negative(argument, value, finite=True)
        if seconds > 0:
            return seconds
    except ValueError:
        pass
    raise ValueError(
        f"{argument} must be a finite number of seconds > 0, got {value!r:.40}"
    )


def check_limit(limit: object) -> int | None:
    """``limit`` (``None`` or an int >= 1), or an error naming it."""
    if limit is None:
        return None
    if not isinstance(limit, int) or isinstance(limit, bool):
        raise TypeError(f"limit must be an int or None, got {type(limit).__name__}")
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    return limit


def check_store(store: object) -> Store | str | os.PathLike[str]:
    """``store`` (of ``store=``) if it is a path (an SQLite file) or a store, or
    an error naming it.

    Raises:
        TypeError: neither a path nor a store.
    """
    if isinstance(store, (str, os.PathLike)):
        return store
    methods = ("add", "remove", "release", "renew", "claim", "records", "close")
    if not all(callable(getattr(store, method, None)) for method in methods) or (
        not isinstance(getattr(store, "owner", None), str)
    ):
        raise TypeError(
            "store must be a path (an SQLite file) or a store "
            f"(fluent_executors.stores.Store: {', '.join(methods)} and a str "
            f"owner), got {type(store).__name__}"
        )
    return store  # type: ignore[return-value]


def _check_text(argument: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be a str, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{argument} must not be empty")
    return value


class SQLStore(Store):
    """What the SQL stores share: their arguments, checked; the encoding and
    decoding of records; one lock around each call; the driver's errors turned
    into :class:`StoreError`. A subclass connects, and writes each method's SQL.

    Args:
        queue: the queue's name (a non-empty ``str``).
        serializer: turns start results into text and back (:class:`Serializer`).
        owner: the identity this store holds leases under (a non-empty ``str``),
            unique among the live processes sharing the store; default:
            ``host:pid:`` and a random part, unique to this object.
        clock: the wall clock, ``Callable[[], float]``, seconds since the epoch;
            default :func:`time.time` (tests give another).

    Raises:
        TypeError: ``queue`` or ``owner`` is not a ``str``; ``serializer`` has no
            ``dumps`` or ``loads``; ``clock`` is not callable.
        ValueError: ``queue`` or ``owner`` is empty.
    """

    _driver_errors: tuple[type[BaseException], ...] = ()  # made StoreError

    def __init__(
        self,
        *,
        queue: str,
        serializer: Serializer | None,
        owner: str | None,
        clock: Callable[[], float] | None,
    ) -> None:
        self._queue = _check_text("queue", queue)
        self._owner = _default_owner() if owner is None else _check_text("owner", owner)
        if serializer is None:
            import json

            serializer = json
        for method in ("dumps", "loads"):
            if not callable(getattr(serializer, method, None)):
                raise TypeError(
                    f"serializer must have a {method}() method (as the json module "
                    f"has), got {type(serializer).__name__}"
                )
        self._serializer = serializer
        if clock is not None:
            check_callable("clock", clock)
        self._clock = time.time if clock is None else clock
        self._lock = threading.Lock()
        self._closed = False

    @property
    def queue(self) -> str:
        """The queue whose records this store reads and writes (``str``)."""
        return self._queue

    @property
    def owner(self) -> str:
        """The identity this store holds leases under (``str``)."""
        return self._owner

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} queue={self._queue!r} owner={self._owner!r}>"

    def close(self) -> None:
        """Close the store's connection; calling it again does nothing. A call
        after it raises :class:`~fluent_executors.stores.StoreError`."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._disconnect()

    # -- for the subclasses ------------------------------------------------------------

    def _disconnect(self) -> None:
        """Close the connection (once, under the lock)."""
        raise NotImplementedError

    def _expiry(self, seconds: float) -> tuple[float, float]:
        """The time now and the end of a lease of ``seconds`` (checked by
        :func:`check_lease`). Read within the call, once its locks are held: a
        wait for them would shorten the lease."""
        now = float(self._clock())
        return now, now + seconds

    @contextmanager
    def _calling(self, what: str) -> Iterator[None]:
        """One call: under the lock, on an open store; a driver's error becomes a
        :class:`StoreError` saying ``what`` failed."""
        with self._lock:
            if self._closed:
                raise StoreError(f"{self!r} is closed")
            try:
                yield
            except self._driver_errors as error:
                self._failed(error)
                raise StoreError(
                    f"{self!r} could not {what}: {type(error).__name__}: {error}"
                ) from error

    def _failed(self, error: BaseException) -> None:
        """A call failed with the driver's ``error`` (under the lock): a subclass
        drops a broken connection here."""

    def _encode(
        self, records: Sequence[NewRecord]
    ) -> tuple[list[tuple[str, str | None, str | None]], dict[str, RecordError]]:
        """The rows of ``records`` (key, text or ``None`` for an intent, label),
        and the errors of those that cannot be encoded."""
        rows: list[tuple[str, str | None, str | None]] = []
        failed: dict[str, RecordError] = {}
        dumps = self._serializer.dumps
        for record in records:
            key, result, intent, label = record
            if not isinstance(key, str) or not key:
                raise TypeError(f"a record's key must be a non-empty str, got {key!r}")
            if label is not None and not isinstance(label, str):
                raise TypeError(
                    f"record {key!r}: label must be a str or None, "
                    f"got {type(label).__name__}"
                )
            if intent:
                rows.append((key, None, label))
                continue
            try:
                text = dumps(result)
                if not isinstance(text, str):
                    raise TypeError(f"dumps() returned {type(text).__name__}, not str")
            except Exception as error:
                failed[key] = RecordError(
                    key,
                    f"cannot store the start result {_short(result)} with "
                    f"{_name(self._serializer)}: {type(error).__name__}: {error}",
                )
                failed[key].__cause__ = error
                continue
            rows.append((key, text, label))
        return rows, failed

    def _decode(self, rows: Sequence[Sequence[Any]]) -> list[StoredTask]:
        """Read rows of (key, text or ``None``, label, owner, expires)."""
        tasks = []
        loads = self._serializer.loads
        for key, text, label, owner, expires in rows:
            if text is None:
                tasks.append(StoredTask(key, None, True, label, owner, expires))
                continue
            try:
                result = loads(text)
            except Exception as error:
                corrupt = RecordError(
                    key,
                    f"cannot read the stored start result {_short(text)} with "
                    f"{_name(self._serializer)}: {type(error).__name__}: {error}",
                )
                corrupt.__cause__ = error
                tasks.append(
                    StoredTask(key, None, False, label, owner, expires, corrupt)
                )
                continue
            tasks.append(StoredTask(key, result, False, label, owner, expires))
        return tasks


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _name(serializer: object) -> str:
    return getattr(serializer, "__name__", None) or type(serializer).__name__


publish(
    "fluent_executors.stores",
    NewRecord,
    RecordError,
    Serializer,
    Store,
    StoreError,
    StoredTask,
)
