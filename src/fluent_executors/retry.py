"""RetryExecutor: resubmit a callable to the delegate while its retry policy says so."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from functools import partial
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from _fluent_executors import clock as _clock
from _fluent_executors.counts import event_count
from _fluent_executors.fluent import Delegate, R, SameResult
from _fluent_executors.hints import retry_after
from _fluent_executors.logging import trace
from _fluent_executors.outstanding import Outstanding
from _fluent_executors.proxy import ProxyFuture, outcome
from _fluent_executors.retry_policy import (
    ExceptionRetryPolicy,
    RetryPolicy,
    ask_policy,
    check_policy,
    policy_of,
    success_is_final,
)
from _fluent_executors.scheduler import TimerHandle, call_later
from _fluent_executors.stdlib_compat import FINISHED, LOCK_FREE
from _fluent_executors.tracing import InContext, end_attempt
from _fluent_executors.wrapper import (
    NO_KWARGS,
    WrapperExecutor,
    check_submittable,
    shutdown_delegate,
)

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from _fluent_executors.stats import RetryStats

__all__ = ["ExceptionRetryPolicy", "RetryExecutor", "RetryPolicy", "retry_after"]
# policies: from _fluent_executors.retry_policy, also used by the poll executor
# (poll_retry_policy); retry_after: from _fluent_executors.hints, also used by the
# rate limit executor

T = TypeVar("T")
P = ParamSpec("P")


# Where a _RetryFuture is, for cancel(): an attempt being handed to the delegate, an
# attempt on the delegate, the policy deciding about a done attempt, or a wait for
# the next attempt (the only phase in which nothing runs, and so a cancel succeeds).
_SUBMITTING, _ATTEMPT, _DECIDING, _WAITING = range(4)


class _RetryFuture(ProxyFuture[T]):
    """Follows one attempt's future at a time; between attempts it waits on the
    shared scheduler, holding no thread."""

    # The attempt whose decision was handed to a scheduler worker, until it is
    # taken (_decide_deferred); a class default: most futures never set it.
    _deferred: Future[Any] | None = None
    # The span of the attempt on the delegate, with tracing on; a class default.
    _attempt_span: Span | None = None

    def __init__(
        self,
        executor: RetryExecutor[Any],
        policy: RetryPolicy,
        call: InContext,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        super().__init__()
        self._executor = executor
        self._policy = policy
        # What the attempts after the first run: not ``call`` itself, which the
        # first attempt passes on and then drops (one object less per future in
        # flight for the garbage collector to walk), but what it holds.
        self._fn, self._context, self._span = call.fn, call.context, call.span
        self._args, self._kwargs = args, kwargs or NO_KWARGS
        self._attempts = 0
        self._started = _clock.monotonic()
        self._timer: TimerHandle | None = None  # set while waiting for a retry
        self._phase = _SUBMITTING  # guarded by the future's _lock
        self._stopped = False  # cancel() was called: no more attempts
        # The first attempt is being submitted, by submit(): an attempt done by
        # then is decided on in a worker thread of the scheduler (_on_upstream_done).
        # Cleared by the executor's _submit.
        self._in_submit = True

    def _submit_attempt(self, first: InContext | None = None) -> None:
        """Submit the callable to the delegate once more: ``first``, the callable
        as ``submit`` got it, for the first attempt; ``None`` for a later one.

        Raises:
            Exception: whatever the delegate's ``submit`` raises.
        """
        if first is None:  # a later attempt
            call = InContext(self._fn, self._context, self._span)
            call = call.again(self._attempts + 1)
            self._attempt_span = call.span
        elif first.span is not None:  # the first, with tracing on
            call = first.again(1)
            self._attempt_span = call.span
        else:
            call = first
        upstream = self._executor._submit_to_delegate(call, self._args, self._kwargs)
        executor = self._executor
        if self._attempts:
            executor._later_attempt_count.add()
        else:  # the first: submit() returns this future (and counts as an attempt)
            executor._counts.adopt(self)
        self._attempts += 1
        # No lock: _cancel_hook reads it with the upstream, which is set next
        # (with the previous attempt's, done, it finds nothing to cancel either).
        self._phase = _ATTEMPT
        self._follow(upstream)

    def _retry(self) -> None:
        """Start the next attempt; runs in a worker thread of the scheduler."""
        with self._lock:
            if self.done() or self._stopped:
                return
            self._timer = None
            self._phase = _SUBMITTING
        counts = self._executor._counts
        counts.pending_changed(-1)  # out of _WAITING
        metrics = counts.metrics
        if metrics is not None:
            metrics.retry_attempt()
        try:
            self._submit_attempt()
        except BaseException as error:
            self._executor._log_failure(
                logging.WARNING,
                "retry executor %r could not submit attempt %d; failing the future",
                self._executor._name,
                self._attempts + 1,
            )
            self._try_set_exception(error)

    def _on_resolved(self) -> None:
        self._executor._outstanding.discard(self)  # (_forget, one call less)

    def _on_upstream_done(self, upstream: Future[Any]) -> None:
        if success_is_final(self._policy):  # the common case: no retry to decide
            cancelled, error, result = outcome(upstream)
            if not cancelled and error is None:
                if self._attempt_span is not None:  # tracing on
                    end_attempt(self._attempt_span, upstream, None)
                self._try_resolve(FINISHED, result, None, "add_result")
                return
        # No lock: to _cancel_hook, an attempt done is as final as one decided on
        # (it refuses either), and _decide checks for a cancel again under it.
        # (Without a GIL the phase and the flag take the lock: see
        # _fluent_executors.stdlib_compat.)
        if LOCK_FREE:
            self._phase = _DECIDING
            stopped = self._stopped
        else:
            with self._lock:
                self._phase = _DECIDING
                stopped = self._stopped
        if stopped:  # cancel() during the attempt: its outcome is the future's
            end_attempt(self._attempt_span, upstream, None)
            self._try_copy(upstream)
            return
        if self._in_submit:
            # Done before submit() returned (a synchronous delegate, a quick
            # callable): as in more-executors, the policy decides in another
            # thread, so that submit() returns at once whatever the policy does
            # (it may block) and a cancel() meanwhile is refused, the future then
            # ending with the attempt's outcome.
            self._deferred = upstream
            try:
                call_later(
                    0.0, partial(self._decide_deferred, upstream), may_block=True
                )
            except Exception:  # no thread could be started: decide here (once)
                self._decide_deferred(upstream)
            return
        self._decide(upstream)

    def _decide_deferred(self, upstream: Future[Any]) -> None:
        """``_decide``, once: a callback scheduled without a thread to run it may
        still run later, when a thread starts."""
        with self._lock:
            if self._deferred is not upstream:
                return
            self._deferred = None
        self._decide(upstream)

    def _decide(self, upstream: Future[Any]) -> None:
        """Ask the policy about the done attempt ``upstream``; schedule the next
        attempt, or end the future with the outcome of this one."""
        delay = self._next_delay(upstream)
        end_attempt(self._attempt_span, upstream, delay)
        if delay is None:
            self._try_copy(upstream)
            return
        trace(
            self._executor._logger,
            "retry executor %r: attempt %d in %.3f s",
            self._executor._name,
            self._attempts + 1,
            delay,
        )
        try:
            with self._lock:
                stopped = self._stopped
                if not stopped and not self.done():
                    self._timer = call_later(delay, self._retry, may_block=True)
                    self._phase = _WAITING
                    self._executor._retry_count.add()
                    self._executor._counts.pending_changed(1)
        except BaseException as error:  # the scheduler's thread could not start
            self._executor._log_failure(
                logging.ERROR,
                "retry executor %r could not schedule attempt %d; failing the future",
                self._executor._name,
                self._attempts + 1,
            )
            self._try_set_exception(error)
            return
        if stopped:  # cancel() while the policy decided
            self._try_copy(upstream)

    def _next_delay(self, upstream: Future[Any]) -> float | None:
        """Ask the policy about the done attempt ``upstream``: the delay before the
        next attempt, or ``None`` for no retry (also when the policy misbehaves:
        the future then ends with the attempt's outcome, as in more-executors)."""
        elapsed = _clock.monotonic() - self._started
        try:
            # math.inf: never; the future waits until cancelled.
            return ask_policy(self._policy, self._attempts, upstream, elapsed)
        except BaseException as error:  # a future left pending would hang its waiters
            if not (isinstance(error, CancelledError) and upstream.cancelled()):
                self._executor._logger.exception(
                    "Exception while evaluating retry policy %r of retry executor "
                    "%r; the future ends with the outcome of attempt %d",
                    self._policy,
                    self._executor._name,
                    self._attempts,
                )
            # else the policy read a cancelled attempt's outcome: no retry
            return None

    def _cancel_hook(self) -> bool:
        with self._lock:
            self._stopped = True
            phase, timer, upstream = self._phase, self._timer, self._upstream
            if phase == _WAITING:  # out of it: the future is cancelled next
                self._phase = _DECIDING
                self._executor._counts.pending_changed(-1)
        if phase == _WAITING:  # nothing runs: the next attempt is not made
            if timer is not None:
                timer.cancel()
            return True
        if phase == _ATTEMPT and upstream is not None and not upstream.done():
            return upstream.cancel()  # the delegate decides: queued, or running
        # An attempt being submitted, or done with the policy deciding: it cannot
        # be stopped, and the future ends with its outcome.
        return False


class RetryExecutor(WrapperExecutor[R]):
    """An executor that retries failed callables, as its retry policy decides.

    Each callable is submitted to the *delegate* executor; when the attempt is done,
    the policy (:meth:`RetryPolicy.next_delay`) decides whether to submit it again
    and after how long. The executor's future resolves only with the last attempt:
    its result or its exception, unchanged.

    - The first attempt is submitted from :meth:`submit` itself; an exception from the
      delegate's ``submit`` propagates to the caller. If that attempt is done before
      ``submit`` returns, the policy decides about it in a worker thread of the
      scheduler, after ``submit`` has returned (as in more-executors). The delays
      are waited out by the shared scheduler thread, ``fluent-executors-scheduler``:
      no thread is held per waiting future. Later attempts are submitted from one of
      its worker threads, ``fluent-executors-scheduler-worker``, so a ``submit``
      that blocks holds up no other timer. A delegate whose ``submit`` fails on a
      later attempt fails the future with that error, and so does a retry that
      cannot be scheduled (no thread could be started). (A delegate that runs
      callables inside ``submit``, like :class:`~fluent_executors.SyncExecutor`,
      runs the retries in that worker, one of four shared by the whole process:
      prefer a pool for slow work.)
    - :meth:`~concurrent.futures.Future.cancel` stops any further attempt, whether
      or not it succeeds (as in more-executors). Between attempts, while the next
      one waits for its delay, it succeeds. During an attempt it succeeds only if
      the delegate's future can be cancelled (still queued); once the attempt runs
      it returns ``False``, and the future ends with that attempt's outcome. The
      same holds while the attempt is handed to the delegate (on a synchronous
      delegate: from inside the attempt itself) and while the policy decides
      about a finished attempt.
    - An attempt cancelled on the delegate (by a timeout executor inside this one,
      say) counts as an attempt that failed with
      :class:`~concurrent.futures.CancelledError`, retried as the policy decides;
      once no retry is left, the future is cancelled.
    - A policy (or its ``before_sleep`` hook) that raises, or returns a delay
      that is not a number >= 0, is logged with its traceback, and the future
      ends with the attempt's own outcome (its exception), as in more-executors.
      A delay of ``math.inf`` means never: the future waits until cancelled.

    Args:
        delegate: the executor that runs the attempts.
        retry_policy: the policy of :meth:`submit`; default an
            :class:`ExceptionRetryPolicy` built from ``kwargs``.
        logger: where to log; default ``logging.getLogger("fluent_executors.retry")``.
        name: the executor's name, used in log messages.
        kwargs: the arguments of :class:`ExceptionRetryPolicy`, when
            ``retry_policy`` is ``None``.

    Raises:
        TypeError: ``delegate`` has no ``submit`` method; ``retry_policy`` is not a
            :class:`RetryPolicy`; ``kwargs`` are given with ``retry_policy``, or one
            of them is not an :class:`ExceptionRetryPolicy` argument or has the
            wrong type; ``name`` is not a ``str``.
        ValueError: a policy argument is out of range.
    """

    def __init__(
        self,
        delegate: Delegate[R],
        retry_policy: RetryPolicy | None = None,
        logger: logging.Logger | None = None,
        name: str = "default",
        **kwargs: Any,
    ) -> None:
        super().__init__(delegate, logger=logger, name=name)
        self._policy = policy_of(retry_policy, kwargs)
        self._outstanding = Outstanding()
        self._cancel_at_idle = False
        # Attempts submitted to the delegate after the first of their future (the
        # first ones: the futures submitted); retries scheduled (stats())
        self._later_attempt_count, self._retry_count = event_count(), event_count()
        self._open_metrics("retry")

    def _wrapper_fields(self) -> dict[str, object]:
        return {"retry_policy": self.retry_policy}

    def stats(self) -> RetryStats:
        """What this executor has done with the futures its ``submit`` returned, and
        is doing now (see :meth:`FluentExecutor.stats
        <fluent_executors.FluentExecutor.stats>`; *pending* are the futures waiting
        for their next attempt), and how many attempts and retries it made.

        Returns:
            A :class:`~fluent_executors.RetryStats`.

        .. versionadded:: 0.2.0
        """
        # On first use: see _fluent_executors.stats.
        from _fluent_executors.stats import RetryStats

        later_attempts = self._later_attempt_count.value  # read before the firsts
        return RetryStats(
            **self._counts.fields(),
            attempts=self._counts.submitted + later_attempts,
            retries=self._retry_count.value,
        )

    @property
    def retry_policy(self) -> RetryPolicy:
        """The policy of :meth:`submit` (:class:`RetryPolicy`)."""
        return self._policy

    @overload
    def submit_retry(
        self: RetryExecutor[SameResult],
        retry_policy: RetryPolicy,
        fn: Callable[P, T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> ProxyFuture[T]: ...

    @overload
    def submit_retry(
        self,
        retry_policy: RetryPolicy,
        fn: Callable[P, object],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> ProxyFuture[R]: ...

    def submit_retry(
        self,
        retry_policy: RetryPolicy,
        fn: Callable[P, T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> ProxyFuture[T] | ProxyFuture[R]:
        """Submit ``fn(*args, **kwargs)``, retried as ``retry_policy`` decides.

        Args:
            retry_policy: the policy for this call only.
            fn: the callable.
            args: its positional arguments.
            kwargs: its keyword arguments.

        Returns:
            A ``Future[T]`` resolved like the last attempt, for a ``fn`` returning
            ``T``; a ``Future[R]`` if the executor's result type ``R`` is not
            :class:`~fluent_executors.SameResult`.

        Raises:
            TypeError: ``retry_policy`` is not a :class:`RetryPolicy`; ``fn`` is
                not callable, or is a coroutine function.
            RuntimeError: the executor has been shut down.
            Exception: whatever the delegate's ``submit`` raises for the first
                attempt.
        """
        check_policy(retry_policy)
        check_submittable(fn)
        return self._submit_in_context(self._submit, fn, args, kwargs, retry_policy)

    def _submit(
        self,
        fn: InContext,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        retry_policy: RetryPolicy | None = None,
    ) -> ProxyFuture[Any]:
        """Submit the first attempt, retried as ``retry_policy`` decides (default:
        the executor's)."""
        policy = self._policy if retry_policy is None else retry_policy
        future: _RetryFuture[Any] = _RetryFuture(self, policy, fn, args, kwargs)
        self._outstanding.add(future)
        try:
            future._submit_attempt(fn)
        except BaseException:
            self._forget(future)
            raise
        finally:
            future._in_submit = False
        return future

    def _forget(self, future: Future[Any]) -> None:
        """Drop a done future from the bookkeeping; the last one after a shutdown
        without ``wait`` shuts down the delegate."""
        self._outstanding.discard(future)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting work; shut down the delegate once every future is done.

        Futures already submitted keep being retried as their policy decides, so
        the delegate is shut down only once they are all done.

        Args:
            wait: if ``True``, return once every future is done and the delegate is
                shut down (with ``wait=True``); if ``False``, return at once and let
                the last future to finish shut down the delegate.
            cancel_futures: if ``True``, first cancel every future not done: those
                waiting for a retry are cancelled, those running on the delegate
                make no further attempt.

        Calling it more than once is harmless. New submits raise ``RuntimeError``.
        """
        with self._shutdown_lock:
            self._is_shutdown = True
            # A shutdown without wait, then one with cancel_futures: the delegate
            # is shut down with cancel_futures once idle.
            cancel = self._cancel_at_idle = self._cancel_at_idle or cancel_futures
        outstanding = self._outstanding.close()
        self._close_metrics()
        if cancel_futures:
            for future in outstanding:
                future.cancel()
        self._outstanding.finish(
            wait, partial(shutdown_delegate, self._delegate, wait, cancel)
        )
