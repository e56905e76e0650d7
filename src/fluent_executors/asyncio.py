"""AsyncioExecutor: submit to any executor from a coroutine, and await the future."""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from _fluent_executors.fluent import Delegate, R, SameResult
from _fluent_executors.wrapper import DelegatingExecutor, check_submittable

if TYPE_CHECKING:
    import asyncio

__all__ = ["AsyncioExecutor"]

T = TypeVar("T")
P = ParamSpec("P")


def _check_loop(argument: str, loop: object) -> None:
    import asyncio  # on first use: importing the library does not import asyncio

    if not isinstance(loop, asyncio.AbstractEventLoop):
        raise TypeError(
            f"{argument} must be an asyncio event loop, got {type(loop).__name__}"
        )


class AsyncioExecutor(DelegatingExecutor[R]):
    """An executor whose futures are :class:`asyncio.Future` objects, for coroutines.

    Each callable is submitted to the *delegate*; :meth:`submit` returns an
    :class:`asyncio.Future` bound to an event loop, which takes on the outcome of
    the delegate's future. A coroutine can then ``await executor.submit(fn)``
    without blocking its event loop::

        async def main() -> None:
            executor = Executors.thread_pool().with_asyncio()
            response = await executor.submit(requests.get, url)

    The event loop is ``loop`` if one was given, else the loop running in the thread
    that calls :meth:`submit`, else the loop set for that thread with
    :func:`asyncio.set_event_loop`; :meth:`submit_with_loop` chooses it per call.

    Cancelling an asyncio future (for example by cancelling the task that awaits
    it) cancels the delegate's future, from the event loop's thread; whether that
    stops the work depends on the delegate. Completing the asyncio future is
    scheduled on its event loop from the thread that completes the delegate's
    future; if the loop is closed by then, the outcome is dropped.

    :meth:`~fluent_executors.FluentExecutor.map` works as on every executor:
    the calls go to the delegate, and the iterator waits for their results in the
    thread that takes them (no event loop is involved: in a coroutine, ``await
    asyncio.gather(*(executor.submit(fn, x) for x in items))`` instead).

    Since its futures are not :class:`concurrent.futures.Future` objects, this
    executor belongs at the outer end of a chain: wrapping it in another wrapper
    executor does not work. The futures of this library are awaitable directly
    too; this executor is for delegates whose futures are not, and for code that
    wants :class:`asyncio.Future` objects.

    Args:
        delegate: the executor that runs the submitted callables.
        loop: the event loop of the futures; ``None``: the loop running when
            :meth:`submit` is called.
        logger: a logger for the executor's messages (it has none at present; the
            argument is there for the same signature as the other wrappers).
        name: the executor's name.

    Raises:
        TypeError: ``delegate`` has no ``submit`` method; ``loop`` is neither an
            event loop nor ``None``; ``name`` is not a ``str``.
    """

    def __init__(
        self,
        delegate: Delegate[R],
        loop: asyncio.AbstractEventLoop | None = None,
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None:
        super().__init__(delegate, logger=logger, name=name)
        if loop is not None:
            _check_loop("loop", loop)
        self._loop = loop
        self._open_metrics("asyncio")

    _passes_resumed = False  # (its futures are asyncio's, not ProxyFutures)

    def _wrapper_fields(self) -> dict[str, object]:
        return {"loop": self.loop}

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop given to the constructor, or ``None``
        (:class:`asyncio.AbstractEventLoop`)."""
        return self._loop

    # Executor.submit promises a concurrent.futures.Future; returning an asyncio
    # future instead is the purpose of this executor.
    @overload  # type: ignore[override]
    def submit(
        self: AsyncioExecutor[SameResult],
        fn: Callable[P, T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> asyncio.Future[T]: ...

    @overload
    def submit(
        self, fn: Callable[P, object], /, *args: P.args, **kwargs: P.kwargs
    ) -> asyncio.Future[R]: ...

    def submit(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> asyncio.Future[T] | asyncio.Future[R]:
        """Submit ``fn(*args, **kwargs)`` to the delegate; return an asyncio future.

        Returns:
            An ``asyncio.Future[T]`` for a ``fn`` returning ``T`` (an
            ``asyncio.Future[R]`` if the executor's result type ``R`` is not
            :class:`~fluent_executors.SameResult`), bound to the executor's loop;
            if it has none, to the loop running in the calling thread, else to
            the loop set for that thread with :func:`asyncio.set_event_loop` (as
            in more-executors). No loop is ever created here.

        Raises:
            TypeError: ``fn`` is not callable.
            RuntimeError: the executor has been shut down; or it has no loop,
                none is running in the calling thread and none was set for it
                with :func:`asyncio.set_event_loop`.
            Exception: whatever the delegate's ``submit`` raises.
        """
        loop = self._loop or _current_loop()
        if loop is None:
            raise RuntimeError(
                "AsyncioExecutor.submit() needs an event loop: call it from a "
                "coroutine, set one with asyncio.set_event_loop(), give a loop to "
                "the executor, or use submit_with_loop()"
            )
        return self.submit_with_loop(loop, fn, *args, **kwargs)

    @overload
    def submit_with_loop(
        self: AsyncioExecutor[SameResult],
        loop: asyncio.AbstractEventLoop,
        fn: Callable[P, T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> asyncio.Future[T]: ...

    @overload
    def submit_with_loop(
        self,
        loop: asyncio.AbstractEventLoop,
        fn: Callable[P, object],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> asyncio.Future[R]: ...

    def submit_with_loop(
        self,
        loop: asyncio.AbstractEventLoop,
        fn: Callable[P, T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> asyncio.Future[T] | asyncio.Future[R]:
        """Like :meth:`submit`, with the future bound to ``loop``.

        May be called from any thread, also one where no event loop runs; the future
        is then awaited from ``loop``'s thread.

        Args:
            loop: the event loop of the returned future.
            fn: the callable to run on the delegate.
            args: its positional arguments.
            kwargs: its keyword arguments.

        Returns:
            An ``asyncio.Future[T]`` for a ``fn`` returning ``T`` (an
            ``asyncio.Future[R]`` if the executor's result type ``R`` is not
            :class:`~fluent_executors.SameResult`), bound to ``loop``.

        Raises:
            TypeError: ``loop`` is not an event loop, or ``fn`` is not callable
                or is a coroutine function.
            RuntimeError: the executor has been shut down.
            Exception: whatever the delegate's ``submit`` raises.
        """
        _check_loop("loop", loop)
        check_submittable(fn)
        self._check_open()
        import asyncio

        future = asyncio.wrap_future(
            self._submit_in_context(self._submit_to_delegate, fn, args, kwargs),
            loop=loop,
        )
        self._counts.track_asyncio(future)
        return future

    def _map_submit(
        self, fn: Callable[..., T]
    ) -> Callable[[AsyncioExecutor[Any], tuple[Any, ...]], Future[T]]:
        # Refuses at once once shut down, even for empty iterables.
        self._check_open()
        return _submitter(fn)


def _submitter(
    fn: Callable[..., T],
) -> Callable[[AsyncioExecutor[Any], tuple[Any, ...]], Future[T]]:
    """What ``AsyncioExecutor.map`` submits for each tuple of arguments:
    ``fn(*args)`` to the delegate, a standard future counted by the executor."""

    def submit(executor: AsyncioExecutor[Any], args: tuple[Any, ...]) -> Future[T]:
        executor._check_open()
        future: Future[T] = executor._submit_in_context(
            executor._submit_to_delegate, fn, args, {}
        )
        executor._counts.track(future)
        return future

    return submit


def _current_loop() -> asyncio.AbstractEventLoop | None:
    """The loop running in this thread, else the loop set for it with
    :func:`asyncio.set_event_loop`, else ``None``: never a new loop, and no
    ``DeprecationWarning``.

    From Python 3.14 on, :func:`asyncio.get_event_loop` does just that (it no
    longer makes a loop, and raises ``RuntimeError`` where none is set), and the
    event loop policies it used to be read through are deprecated (gone in 3.16).
    Before 3.14 ``asyncio.get_event_loop()`` would make a loop, with a
    ``DeprecationWarning`` on 3.12 and 3.13: there the default policy's loop for
    the thread is read without it."""
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    if sys.version_info >= (3, 14):
        try:
            return asyncio.get_event_loop()
        except RuntimeError:
            return None
    policy = asyncio.get_event_loop_policy()
    if isinstance(policy, asyncio.DefaultEventLoopPolicy):
        # What get_event_loop() would return, read without making a loop.
        local = getattr(policy, "_local", None)
        loop: asyncio.AbstractEventLoop | None = getattr(local, "_loop", None)
        return loop
    try:  # another policy (uvloop's, say): ask it
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return policy.get_event_loop()
    except RuntimeError:
        return None
