"""The descriptor of a future being polled, as the poll function sees it, and the
future of a poll executor; with the methods that a driver calls on them.

A future (:class:`PollFuture`) follows the delegate's future, then enters polling
through its driver (:class:`PollDriver`, the interface that ``thread.PollThread``
implements); its descriptor (:class:`~fluent_executors.PollDescriptor`) carries the
core's bookkeeping (``core.PollEntry``) and resolves it.
"""

from __future__ import annotations

from concurrent.futures import CancelledError, Future
from operator import attrgetter
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, overload

from ..handoff import Handoff
from ..proxy import ProxyFuture, outcome
from ..public import publish
from ..resolvable import DONE
from ..stdlib_compat import FINISHED
from ..wrapper import check_non_negative
from .core import PollEntry

__all__ = ["PollDescriptor", "PollDriver", "PollFuture"]

T = TypeVar("T")

_OMITTED: Any = object()


class PollDriver(Protocol):
    """What a poll executor's futures and descriptors ask of its driver."""

    name: str

    def start_polling(
        self, future: PollFuture[Any], descriptor: PollDescriptor[Any]
    ) -> None:
        """The delegate's future of ``future`` succeeded: ``descriptor`` (its
        :class:`~fluent_executors.PollDescriptor`) enters polling."""
        ...

    def forget(
        self, future: PollFuture[Any], descriptor: PollDescriptor[Any] | None
    ) -> None:
        """``future``, whose descriptor was ``descriptor`` (``None``: it never
        entered polling), is done: drop it from the bookkeeping."""
        ...

    def run_cancel_fn(self, result: object, future: PollFuture[Any]) -> bool:
        """Ask the cancel function to cancel the remote work behind ``result``."""
        ...

    def defer(self, entry: PollDescriptor[Any], delay: float) -> None:
        """Do not poll ``entry`` before ``delay`` seconds from now."""
        ...

    def age_of(self, entry: PollDescriptor[Any]) -> float:
        """Seconds since ``entry`` entered polling."""
        ...

    def polls_of(self, entry: PollDescriptor[Any]) -> int:
        """Calls of the poll function ``entry`` was passed to."""
        ...


class PollFuture(ProxyFuture[T]):
    """Follows the delegate's future, then is polled until the poll function resolves
    it.

    Args:
        driver: the driver of its executor's polls.
    """

    def __init__(self, driver: PollDriver) -> None:
        super().__init__()
        self._poller = driver
        self._descriptor: PollDescriptor[T] | None = None

    # -- what the driver calls -------------------------------------------------------

    @property
    def descriptor(self) -> PollDescriptor[T] | None:
        """Its descriptor, from its entering polling (or its attaching) until it is
        done and forgotten."""
        return self._descriptor

    def attach(self, descriptor: PollDescriptor[T]) -> None:
        """Give it ``descriptor`` before it is polled (``attach()``): a cancel
        before then calls the cancel function with its result."""
        self._descriptor = descriptor

    def enter_polling(self, descriptor: PollDescriptor[T]) -> bool:
        """``descriptor`` is its own from now; ``False`` if it is done already
        (cancelled meanwhile): it is not polled."""
        if self._state in DONE:  # (rechecked as it is taken in)
            return False
        self._descriptor = descriptor
        # The delegate's future is needed no more: cancel() reads the result
        # from the descriptor. (Not freed here: the delegate's future calls
        # this, so it lives until that call returns.)
        self._upstream = None
        return True

    def leave_polling(self) -> None:
        """It is done and was not polled: it lets go of its descriptor (no
        reference cycle)."""
        self._descriptor = None

    def fail(self, error: BaseException) -> None:
        """Fail with ``error`` unless it is done."""
        self._try_set_exception(error)

    def cancel_now(self) -> bool:
        """Cancel it without asking the cancel function (it answered yes);
        ``True`` if it is now cancelled."""
        return self._try_cancel()

    def cancel_after_shutdown(self) -> None:
        """``cancel()`` as it enters polling after ``shutdown(cancel_futures=True)``,
        which found it running on the delegate (a cancel in progress tries once
        more as it ends)."""
        self._cancel_or_defer()

    # -- ProxyFuture -----------------------------------------------------------------

    def _on_upstream_done(self, upstream: Future[Any]) -> None:
        # (The common case, the library pool's future succeeded, without a call)
        if (
            isinstance(upstream, (ProxyFuture, Handoff))
            and upstream._state == FINISHED
            and upstream._exception is None
        ):
            result = upstream._result
        else:
            cancelled, exception, result = outcome(upstream)
            if cancelled or exception is not None:
                self._try_copy(upstream)
                return
        self._poller.start_polling(self, PollDescriptor(self, result))

    def _on_resolved(self) -> None:
        descriptor, self._descriptor = self._descriptor, None  # no reference cycle
        self._poller.forget(self, descriptor)

    def _cancel_hook(self) -> bool:
        delegate = self._upstream  # None once polled: its result is the descriptor's
        if delegate is None:
            descriptor = self._descriptor
            if descriptor is None:  # resolved since cancel() looked
                return False
            return self._poller.run_cancel_fn(descriptor.result, self)
        try:
            if delegate.cancel():  # still queued on the delegate
                return True
            if not delegate.done():  # running on the delegate: nothing remote yet
                return False
            cancelled, exception, result = outcome(delegate)
        except CancelledError:  # cancelled meanwhile: this future follows it
            return True
        if cancelled:
            return True
        if exception is not None:  # this future fails with it
            return False
        return self._poller.run_cancel_fn(result, self)

    def _made_by(self) -> str | None:
        return self._poller.name

    def _is_running(self) -> bool:
        # Only while the delegate runs it: once polled it can still be cancelled,
        # so it is not running in the sense of Future.running().
        delegate = self._upstream
        return delegate is not None and delegate.running()


class PollDescriptor(PollEntry[PollFuture[T]], Generic[T]):
    """One future being polled, as the poll function sees it.

    The poll function receives a list of these and resolves each future by calling
    :meth:`yield_result` or :meth:`yield_exception` on its descriptor, or leaves it
    pending until a later poll by doing nothing. A descriptor may also be resolved
    from any other thread (for example on an external event); the first resolution
    wins and later ones are ignored. The executor creates descriptors; users never
    construct one.

    Type parameters:
        T: the type of the delegate's result, which is also the type of the
        executor future's result.
    """

    __slots__ = ()

    _result: T

    if TYPE_CHECKING:

        @property
        def result(self) -> T: ...

    else:  # read by the poll function per descriptor: a getter with no Python frame
        result = property(
            attrgetter("_result"),
            doc="""The delegate future's result (type ``T``), which drives the poll;
            typically the identifier of a remote task.""",
        )

    @overload
    def yield_result(self) -> None: ...

    @overload
    def yield_result(self, result: T) -> None: ...

    def yield_result(self, result: T = _OMITTED) -> None:
        """Resolve the future successfully.

        Args:
            result: the value the future resolves with (type ``T``). If omitted,
                the future resolves with :attr:`result`, the delegate's value.

        Does nothing if the future is already resolved or cancelled.
        """
        self._future._try_resolve(
            FINISHED, self._result if result is _OMITTED else result, None, "add_result"
        )

    def yield_exception(
        self, exception: BaseException, traceback: TracebackType | None = None
    ) -> None:
        """Make the future fail with ``exception``.

        Args:
            exception: the exception that the future's ``result()`` raises.
            traceback: a traceback to attach to ``exception`` (kept for compatibility
                with more-executors; exceptions carry their own traceback).

        Raises:
            TypeError: ``exception`` is not an exception instance.

        Does nothing if the future is already resolved or cancelled.
        """
        if not isinstance(exception, BaseException):
            raise TypeError(
                "exception must be an exception instance, "
                f"got {type(exception).__name__}"
            )
        self._future._try_set_exception(exception, traceback)

    def defer(self, delay: float) -> None:
        """Do not pass this descriptor to the poll function again before ``delay``
        seconds have passed: a service's ``Retry-After`` for this one task.

        The other descriptors are polled as usual; :meth:`PollExecutor.notify`
        does not override a defer. The poll function is never called with nothing
        due: the next poll comes at the earlier of the delay it returned and the
        first deferred descriptor's time. A later call replaces an earlier one.

        Args:
            delay: seconds, a real number >= 0 (``math.inf``: not again, until
                the future is resolved or cancelled by other means).

        Raises:
            TypeError: ``delay`` is not a real number.
            ValueError: ``delay`` is negative or NaN.

        .. versionadded:: 0.2.0
        """
        self._future._poller.defer(self, check_non_negative("delay", delay))

    @property
    def age(self) -> float:
        """Seconds since the future entered polling (``float``): since the
        delegate's future succeeded, or since :meth:`PollExecutor.attach`.

        .. versionadded:: 0.2.0
        """
        return self._future._poller.age_of(self)

    @property
    def polls(self) -> int:
        """How many calls of the poll function this descriptor has been passed to,
        the current one included (``int``).

        .. versionadded:: 0.2.0
        """
        return self._future._poller.polls_of(self)

    def __repr__(self) -> str:
        return f"<PollDescriptor result={self._result!r} future={self._future!r}>"


# Its public home, as more-executors' (and as help() and repr() show it).
publish("fluent_executors.poll", PollDescriptor)
