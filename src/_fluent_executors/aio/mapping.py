"""``AsyncExecutor.map``: many runs of one function with bounded concurrency and
results in input order (:class:`AsyncMap`)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
import anyio.lowlevel

from ..public import publish

if TYPE_CHECKING:
    from types import TracebackType

    from anyio.abc import TaskGroup
    from anyio.streams.memory import (
        MemoryObjectReceiveStream,
        MemoryObjectSendStream,
    )

    from .executor import AsyncExecutor

__all__ = ["AsyncMap"]

T = TypeVar("T")

# Without a buffersize, the feed reads this many inputs between checkpoints.
_CHECKPOINT_EVERY = 100


class _Slot:
    """The outcome of one input's run, once ``done`` is set."""

    __slots__ = ("done", "error", "value")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class AsyncMap(Generic[T]):
    """The runs of ``executor.map(fn, *iterables, buffersize=...)``: an async
    context manager whose value is an async iterator of the results (type
    ``T``), in the order of the inputs.

    Entering it starts the runs in a task group of its own, at most
    ``buffersize`` of them ahead of the consumer (started and not yet taken);
    the inputs are read as the runs start. A run that failed raises its
    exception where its result would come (the runs after it go on). Leaving
    the block cancels the runs still under way (a remote task polled through
    the cancel function), and lets the body's exception out as it was raised.

    .. versionadded:: 0.2.0
    """

    def __init__(
        self,
        executor: AsyncExecutor[Any],
        fn: Callable[..., Any],
        iterables: tuple[Iterable[Any], ...],
        buffersize: int | None,
    ) -> None:
        self._executor = executor
        self._fn = fn
        self._iterables = iterables
        self._room = anyio.Semaphore(buffersize) if buffersize is not None else None
        self._group: TaskGroup | None = None
        self._iterator: AsyncGenerator[T, None] | None = None

    async def __aenter__(self) -> AsyncIterator[T]:
        send, receive = anyio.create_memory_object_stream[_Slot](math.inf)
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        group.start_soon(self._feed, send)
        self._iterator = self._results(receive)
        return self._iterator

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        group, iterator = self._group, self._iterator
        assert group is not None
        assert iterator is not None
        self._group = self._iterator = None
        group.cancel_scope.cancel()  # the runs left; none of its tasks raises
        await group.__aexit__(None, None, None)
        await iterator.aclose()

    async def _feed(self, send: MemoryObjectSendStream[_Slot]) -> None:
        """Start a run per input, in order, as ``buffersize`` lets it."""
        group = self._group
        assert group is not None
        room = self._room
        inputs = zip(*self._iterables, strict=False)  # as map() does
        read = 0
        with send, contextlib.suppress(anyio.BrokenResourceError):  # no consumer
            while True:
                read += 1
                if room is not None:
                    await room.acquire()
                elif not read % _CHECKPOINT_EVERY:  # a huge input never holds the loop
                    await anyio.lowlevel.checkpoint()
                slot = _Slot()
                try:
                    args = next(inputs, None)
                except Exception as error:  # the inputs' own: where it came
                    slot.error = error
                    slot.done.set()
                    send.send_nowait(slot)
                    return
                if args is None:
                    return
                send.send_nowait(slot)
                group.start_soon(self._one, slot, args)

    async def _one(self, slot: _Slot, args: tuple[Any, ...]) -> None:
        """The run of one input, its outcome kept in ``slot``."""
        try:
            slot.value = await self._executor.run(self._fn, *args)
        except Exception as error:  # the run's: raised where its result comes
            slot.error = error
        finally:
            slot.done.set()

    async def _results(
        self, receive: MemoryObjectReceiveStream[_Slot]
    ) -> AsyncGenerator[T, None]:
        """The results, in order, as the consumer asks for them."""
        room = self._room
        with receive:
            async for slot in receive:
                await slot.done.wait()
                if room is not None:
                    room.release()
                if slot.error is not None:
                    raise slot.error
                yield slot.value


publish("fluent_executors.aio", AsyncMap)
