"""ProxyFuture: the proxy-future base that every wrapper's futures share."""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures._base
import inspect
import math
import random
import sys
import threading
import time
from concurrent.futures import (
    CancelledError,
    Future,
    InvalidStateError,
    as_completed,
    wait,
)
from concurrent.futures import TimeoutError as FuturesTimeoutError
from concurrent.futures._base import _Waiter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _fluent_executors.stdlib_compat import (
    LIGHT_FUTURES,
    LightCondition,
    condition_waiters,
)
from fluent_executors import ProxyFuture

TIMEOUT = 10.0


def follower(upstream: Future[Any]) -> ProxyFuture[Any]:
    proxy: ProxyFuture[Any] = ProxyFuture()
    proxy._follow(upstream)
    return proxy


def test_follows_upstream_result():
    upstream: Future[int] = Future()
    proxy = follower(upstream)
    assert not proxy.done()

    upstream.set_result(3)

    assert proxy.result(timeout=0) == 3


def test_follows_upstream_exception_unchanged():
    upstream: Future[int] = Future()
    proxy = follower(upstream)
    error = ValueError("boom")

    upstream.set_exception(error)

    assert proxy.exception(timeout=0) is error


def test_follows_upstream_cancel():
    upstream: Future[int] = Future()
    proxy = follower(upstream)

    upstream.cancel()

    assert proxy.cancelled()


def test_follows_upstream_already_done():
    upstream: Future[int] = Future()
    upstream.set_result(5)

    assert follower(upstream).result(timeout=0) == 5


def test_cancel_cancels_pending_upstream():
    upstream: Future[int] = Future()
    proxy = follower(upstream)

    assert proxy.cancel()

    assert upstream.cancelled()
    assert proxy.cancelled()


def test_cancel_refused_when_upstream_running():
    upstream: Future[int] = Future()
    upstream.set_running_or_notify_cancel()
    proxy = follower(upstream)

    assert not proxy.cancel()
    assert not proxy.done()
    assert proxy.running()


def test_cancel_consults_the_hook_before_agreeing():
    class Refusing(ProxyFuture[int]):
        def _cancel_hook(self) -> bool:
            return False

    future = Refusing()

    assert not future.cancel()
    assert not future.cancelled()


def test_cancel_of_done_future_returns_false_and_of_cancelled_true():
    done: ProxyFuture[int] = ProxyFuture()
    done._try_set_result(1)
    cancelled: ProxyFuture[int] = ProxyFuture()
    cancelled.cancel()

    assert not done.cancel()
    assert cancelled.cancel()


def test_try_set_resolves_at_most_once_without_error():
    future: ProxyFuture[int] = ProxyFuture()

    assert future._try_set_result(1)
    assert not future._try_set_result(2)
    assert not future._try_set_exception(ValueError())
    assert not future._try_cancel()
    assert future.result() == 1


@given(st.lists(st.sampled_from(["result", "exception", "cancel"]), min_size=2))
def test_racing_resolutions_resolve_once_and_never_raise(actions):
    future: ProxyFuture[int] = ProxyFuture()
    start = threading.Barrier(len(actions))
    won: list[bool] = []
    errors: list[BaseException] = []

    def act(action: str) -> None:
        start.wait()
        try:
            if action == "result":
                won.append(future._try_set_result(1))
            elif action == "exception":
                won.append(future._try_set_exception(ValueError()))
            else:
                won.append(future.cancel() and future._state != "FINISHED")
        except BaseException as error:  # pragma: no cover - the test fails on it
            errors.append(error)

    threads = [threading.Thread(target=act, args=(a,)) for a in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)

    assert errors == []
    assert future.done()
    if not future.cancelled():
        assert won.count(True) == 1


def test_done_callbacks_run_outside_the_futures_lock():
    future: ProxyFuture[int] = ProxyFuture()
    acquired_elsewhere: list[bool] = []

    def take_and_release(done: Future[int]) -> None:
        acquired = done._condition.acquire(timeout=TIMEOUT)
        if acquired:
            done._condition.release()
        acquired_elsewhere.append(acquired)

    def callback(done: Future[int]) -> None:
        # Another thread can take the lock only if this callback does not hold it.
        probe = threading.Thread(target=take_and_release, args=(done,))
        probe.start()
        probe.join()

    future.add_done_callback(callback)
    future._try_set_result(1)

    assert acquired_elsewhere == [True]


def test_cancelled_future_is_seen_by_wait_and_as_completed_in_its_callbacks():
    future: ProxyFuture[int] = ProxyFuture()
    seen: list[Any] = []
    future.add_done_callback(lambda f: seen.append(wait([f], timeout=TIMEOUT).done))

    future.cancel()

    assert seen == [{future}]
    assert list(as_completed([future], timeout=TIMEOUT)) == [future]


def test_as_completed_wakes_for_a_future_cancelled_while_waiting():
    future: ProxyFuture[int] = ProxyFuture()
    finished = threading.Event()

    def consume() -> None:
        list(as_completed([future], timeout=TIMEOUT))
        finished.set()

    consumer = threading.Thread(target=consume)
    consumer.start()
    future.cancel()

    assert finished.wait(TIMEOUT)
    consumer.join()


def test_result_and_exception_honour_timeouts():
    future: ProxyFuture[int] = ProxyFuture()

    with pytest.raises(FuturesTimeoutError):
        future.result(timeout=0.01)
    with pytest.raises(FuturesTimeoutError):
        future.exception(timeout=0.01)


def test_result_of_cancelled_future_raises_cancelled_error():
    future: ProxyFuture[int] = ProxyFuture()
    future.cancel()

    with pytest.raises(CancelledError):
        future.result()


def test_try_set_exception_attaches_a_given_traceback():
    try:
        raise ValueError("here")
    except ValueError as caught:
        traceback = caught.__traceback__
    error = KeyError("k")
    future: ProxyFuture[int] = ProxyFuture()

    future._try_set_exception(error, traceback)

    assert future.exception() is error
    assert error.__traceback__ is traceback


def test_stress_random_cancels_and_resolutions_leave_every_future_done(caplog):
    upstreams: list[Future[int]] = [Future() for _ in range(2000)]
    proxies = [follower(upstream) for upstream in upstreams]
    rng = random.Random(7)

    def resolve() -> None:
        for upstream in upstreams:
            if upstream.set_running_or_notify_cancel():
                upstream.set_result(1)

    resolver = threading.Thread(target=resolve)
    resolver.start()
    for proxy in rng.sample(proxies, 1000):
        proxy.cancel()
    resolver.join(TIMEOUT)

    assert all(proxy.done() for proxy in proxies)
    assert "InvalidStateError" not in caplog.text


def test_has_every_field_of_a_standard_future():
    # ProxyFuture sets up Future's fields itself, and wait() and as_completed() read
    # them: it must miss none.
    proxy: ProxyFuture[int] = ProxyFuture()
    for field in vars(Future()):
        getattr(proxy, field)


STANDARD_SOURCE = ast.parse(inspect.getsource(concurrent.futures._base))


def uses_on_other_futures(field: str) -> set[str]:
    """How ``concurrent.futures._base`` uses ``field`` of a future other than
    ``self``: ``"with"`` where it enters it, else the attribute it reads of it
    (the method it calls)."""
    parents = {
        child: node
        for node in ast.walk(STANDARD_SOURCE)
        for child in ast.iter_child_nodes(node)
    }
    uses = set()
    for node in ast.walk(STANDARD_SOURCE):
        if isinstance(node, ast.Attribute) and node.attr == field:
            if ast.unparse(node.value) == "self":
                continue
            parent = parents[node]
            if isinstance(parent, ast.withitem):
                uses.add("with")
            else:
                assert isinstance(parent, ast.Attribute), ast.unparse(parent)
                uses.add(parent.attr)
    return uses


def test_the_standard_functions_only_append_and_remove_a_futures_waiters():
    # What makes a list per future unneeded (_Waiters): outside the methods of
    # Future, which ProxyFuture overrides, concurrent.futures only appends a waiter
    # to another future's _waiters and removes it.
    assert uses_on_other_futures("_waiters") == {"append", "remove"}


@pytest.mark.skipif(not LIGHT_FUTURES, reason="the light fields only")
def test_its_waiters_are_held_without_a_list_while_there_is_one():
    # As wait() and as_completed() change them: under the future's _condition.
    proxy: ProxyFuture[int] = ProxyFuture()
    first, second, third = _Waiter(), _Waiter(), _Waiter()
    with proxy._condition:
        proxy._waiters.append(first)
        assert proxy._waiter_entry is first
        proxy._waiters.remove(first)
        assert proxy._waiter_entry is None
        with pytest.raises(ValueError, match="is not a waiter"):  # as list.remove
            proxy._waiters.remove(first)
        proxy._waiters.append(first)
        proxy._waiters.append(second)  # from the second on, a list
        proxy._waiters.append(third)
        assert proxy._waiter_entry == [first, second, third]
        proxy._waiters.remove(first)
        assert proxy._waiter_entry == [second, third]
        with pytest.raises(ValueError, match="not in list"):
            proxy._waiters.remove(first)
        proxy._waiters.remove(third)  # one left: no list any more
        assert proxy._waiter_entry is second
        with pytest.raises(ValueError, match="is not a waiter"):
            proxy._waiters.remove(third)


@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize("event", ["set_result", "set_exception", "cancel"])
def test_resolving_it_wakes_every_waiter_of_wait_and_as_completed(
    count: int, event: str
) -> None:
    # As wait() and as_completed() install theirs (on one future, then more).
    proxy: ProxyFuture[int] = ProxyFuture()
    kinds = [concurrent.futures._base._AS_COMPLETED, concurrent.futures.ALL_COMPLETED]
    waiters = [
        concurrent.futures._base._create_and_install_waiters([proxy], kinds[i % 2])
        for i in range(count)
    ]
    if event == "set_result":
        proxy.set_result(1)
    elif event == "set_exception":
        proxy.set_exception(ValueError())
    else:
        assert proxy.cancel()
    assert all(waiter.event.is_set() for waiter in waiters)
    assert all(waiter.finished_futures == [proxy] for waiter in waiters)
    for waiter in waiters:
        proxy._waiters.remove(waiter)
    if LIGHT_FUTURES:
        assert proxy._waiter_entry is None
    else:  # the standard future's list, which _wake reads
        assert proxy._waiters == []
        assert proxy._waiter_entry is proxy._waiters


def test_the_standard_functions_only_acquire_release_and_enter_a_futures_condition():
    # What makes a plain lock enough as a proxy future's _condition: outside the
    # methods of Future (which ProxyFuture overrides), the standard library's
    # concurrent.futures takes another future's _condition in these ways only.
    assert uses_on_other_futures("_condition") == {"acquire", "release", "with"}
    # And Future's own methods that take it: ProxyFuture overrides each of them,
    # but __repr__, which only enters it.
    future_class = next(
        node
        for node in STANDARD_SOURCE.body
        if isinstance(node, ast.ClassDef) and node.name == "Future"
    )
    for method in future_class.body:
        if isinstance(method, ast.FunctionDef) and "self._condition" in ast.unparse(
            method
        ):
            if method.name == "__repr__":
                assert "with self._condition:" in ast.unparse(method)
            else:
                overridden = getattr(ProxyFuture, method.name)
                assert overridden is not getattr(Future, method.name), method.name


# The standard library's source, whose modules read a future's state.
STDLIB = Path(inspect.getfile(concurrent.futures)).parents[2]

# Each private member of the standard Future that a module of concurrent.futures or
# asyncio reads off another object than ``self`` (outside Future's own methods, which
# ProxyFuture overrides), and why the futures of the library answer it rightly.
KNOWN_PRIVATE_READERS = {
    ("concurrent/futures/_base.py", "_condition"): "wait() and as_completed(): "
    "only acquire, release and enter it (test above)",
    ("concurrent/futures/_base.py", "_waiters"): "wait() and as_completed(): "
    "only append and remove (test above)",
    ("concurrent/futures/_base.py", "_state"): "wait() and as_completed(): a "
    "proxy future keeps the standard states (test_wait_and_as_completed_...)",
    ("asyncio/futures.py", "_get_snapshot"): "3.15 on: wrap_future() and await "
    "(ProxyFuture._get_snapshot, test_its_snapshot_... and test_asyncio_...)",
    ("asyncio/base_futures.py", "_state"): "an asyncio future's own (its repr)",
    ("asyncio/base_futures.py", "_result"): "an asyncio future's own (its repr)",
    ("asyncio/base_futures.py", "_exception"): "an asyncio future's own (its repr)",
    ("asyncio/base_tasks.py", "_exception"): "an asyncio task's own (its repr)",
}


def private_readers_of_futures() -> set[tuple[str, str]]:
    """``(module, member)`` for each private member of the standard Future (field
    or method) that a module of the standard library's concurrent.futures or
    asyncio reads off an object other than ``self``."""
    members = {
        name
        for name in {*vars(Future()), *vars(Future)}
        if name.startswith("_") and not name.startswith("__")
    }
    found = set()
    for package in ("concurrent/futures", "asyncio"):
        for path in sorted((STDLIB / package).glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr in members
                    and ast.unparse(node.value) != "self"
                ):
                    found.add((path.relative_to(STDLIB).as_posix(), node.attr))
    return found


def test_every_private_reader_of_a_futures_state_is_known():
    # A Python that reads another private member of a future (as 3.15's asyncio
    # reads _get_snapshot) fails here until the library's futures answer it.
    assert private_readers_of_futures() <= set(KNOWN_PRIVATE_READERS)


def test_the_readers_of_a_futures_state_are_found():
    # The scan above finds what it looks for, on every Python.
    found = private_readers_of_futures()
    assert {("concurrent/futures/_base.py", "_waiters")} <= found
    assert (("asyncio/futures.py", "_get_snapshot") in found) == (
        sys.version_info >= (3, 15)
    )


@pytest.mark.parametrize(
    "state", ["pending", "running", "result", "exception", "cancelled"]
)
def test_its_snapshot_is_a_standard_futures_in_the_same_state(state: str) -> None:
    error = ValueError("failed")
    expected = {
        "pending": (False, False, None, None),
        "running": (False, False, None, None),
        "result": (True, False, 7, None),
        "exception": (True, False, None, error),
        "cancelled": (True, True, None, None),
    }[state]
    proxy: ProxyFuture[int] = ProxyFuture()
    standard: Future[int] = Future()
    for future in (proxy, standard):
        if state == "running":
            future.set_running_or_notify_cancel()
        elif state == "result":
            future.set_result(7)
        elif state == "exception":
            future.set_exception(error)
        elif state == "cancelled":
            future.cancel()

    assert proxy._get_snapshot() == expected
    if hasattr(Future, "_get_snapshot"):  # 3.15 on
        assert standard._get_snapshot() == expected  # type: ignore[attr-defined]


@pytest.mark.parametrize("before", [True, False], ids=["done-before", "done-after"])
@pytest.mark.parametrize("outcome", ["result", "exception", "cancel"])
def test_asyncio_wrap_future_takes_on_its_outcome(outcome: str, before: bool) -> None:
    # What ``await proxy`` uses; on 3.15 it copies the outcome by _get_snapshot.
    proxy: ProxyFuture[int] = ProxyFuture()

    def resolve() -> None:
        if outcome == "result":
            proxy.set_result(7)
        elif outcome == "exception":
            proxy.set_exception(ValueError("failed"))
        else:
            assert proxy.cancel()

    async def main() -> int:
        if before:
            resolve()
        wrapped = asyncio.wrap_future(proxy)
        if not before:
            asyncio.get_running_loop().call_soon(resolve)
        return await asyncio.wait_for(wrapped, TIMEOUT)

    if outcome == "result":
        assert asyncio.run(main()) == 7
    else:
        expected = ValueError if outcome == "exception" else asyncio.CancelledError
        with pytest.raises(expected):
            asyncio.run(main())


@pytest.mark.skipif(not LIGHT_FUTURES, reason="the light fields only")
def test_its_condition_for_wait_and_as_completed_is_its_lock():
    # Those functions only acquire, release and enter a future's _condition (the
    # standard library's source, 3.10 to 3.15): a proxy future gives them its lock,
    # which guards its state and its waiters.
    proxy: ProxyFuture[int] = ProxyFuture()
    assert proxy._condition is proxy._lock  # type: ignore[comparison-overlap]
    with proxy._condition:
        assert proxy._lock._is_owned()  # type: ignore[attr-defined]


def test_its_condition_and_waiters_are_light_or_the_standard_ones():
    # The light fields where stdlib_compat.LIGHT_FUTURES; in the portable mode a
    # standard Condition over the future's lock, made when first asked for (by
    # wait(), as_completed(), or a thread blocking in result()), and a list.
    proxy: ProxyFuture[int] = ProxyFuture()
    assert proxy._made_condition is None
    if LIGHT_FUTURES:
        assert type(proxy._waiters).__name__ == "Waiters"
        assert proxy._condition is proxy._lock  # type: ignore[comparison-overlap]
        assert proxy._made_condition is None
    else:
        condition = proxy._condition
        assert type(condition) is threading.Condition
        assert proxy._made_condition is condition is proxy._condition
        with condition:
            assert proxy._lock._is_owned()  # type: ignore[attr-defined]
        assert type(proxy._waiters) is list
        assert proxy._waiter_entry is proxy._waiters
    with pytest.raises(FuturesTimeoutError):
        proxy.result(timeout=0.001)
    made = proxy._made_condition
    assert type(made) is (LightCondition if LIGHT_FUTURES else threading.Condition)
    assert proxy._condition is (proxy._lock if LIGHT_FUTURES else made)


def test_the_light_condition_sets_every_field_of_a_standard_condition():
    # A proxy future's Condition skips Condition.__init__ and sets the fields itself:
    # on a Python whose Condition has other fields, it would miss them.
    standard = threading.Condition(threading.RLock())
    light = LightCondition(threading.RLock())
    assert set(vars(light)) == set(vars(standard))
    if hasattr(standard, "locked"):  # 3.14 on: its lock's
        assert not light.locked()
        with light:
            assert light.locked()


def blocked_waiters(future: ProxyFuture[Any], count: int) -> None:
    """Return once ``count`` threads are blocked in a wait on ``future``'s Condition
    (so that what follows tests their wake-up, not the done future's fast path)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        condition = future._made_condition
        if condition is not None and (condition_waiters(condition) or 0) >= count:
            return
        time.sleep(0.001)  # polling a state, not waiting out a guess
    raise AssertionError(f"fewer than {count} threads blocked on the future")


def test_waits_with_a_timeout_and_wakes_on_resolution():
    future: ProxyFuture[int] = ProxyFuture()
    results: Future[int] = Future()
    waiter = threading.Thread(
        target=lambda: results.set_result(future.result(timeout=TIMEOUT))
    )
    waiter.start()
    blocked_waiters(future, 1)

    future._try_set_result(7)

    assert results.result(timeout=TIMEOUT) == 7
    waiter.join(TIMEOUT)


def test_many_threads_waiting_at_once_all_wake_with_the_outcome():
    # Each waiter may be the one to make the future's Condition (on first use): they
    # must all get the same one, and the resolution must wake every one of them.
    future: ProxyFuture[int] = ProxyFuture()
    start = threading.Barrier(9)
    results: list[int] = []

    def waiter() -> None:
        start.wait()
        results.append(future.result(timeout=TIMEOUT))

    threads = [threading.Thread(target=waiter) for _ in range(8)]
    for thread in threads:
        thread.start()
    start.wait()
    blocked_waiters(future, 8)  # all on the one Condition
    future._try_set_result(5)
    for thread in threads:
        thread.join(TIMEOUT)

    assert results == [5] * 8


@pytest.mark.parametrize("resolve", ["exception", "cancel"])
def test_waiting_threads_wake_on_failure_and_on_cancel(resolve):
    future: ProxyFuture[int] = ProxyFuture()
    seen: Future[BaseException | None] = Future()

    def waiter() -> None:
        try:
            seen.set_result(future.exception(timeout=TIMEOUT))
        except BaseException as error:
            seen.set_result(error)

    thread = threading.Thread(target=waiter)
    thread.start()
    blocked_waiters(future, 1)
    error = ValueError("boom")
    if resolve == "exception":
        future._try_set_exception(error)
    else:
        future.cancel()
    thread.join(TIMEOUT)

    outcome = seen.result(timeout=TIMEOUT)
    if resolve == "exception":
        assert outcome is error
    else:
        assert isinstance(outcome, CancelledError)


def test_result_raises_the_exception_unchanged():
    future: ProxyFuture[int] = ProxyFuture()
    error = KeyError("k")
    future._try_set_exception(error)

    with pytest.raises(KeyError) as raised:
        future.result()
    assert raised.value is error
    assert future.exception() is error


def test_set_result_and_set_exception_raise_once_done():
    future: ProxyFuture[int] = ProxyFuture()
    future.set_result(1)

    with pytest.raises(InvalidStateError):
        future.set_result(2)
    with pytest.raises(InvalidStateError):
        future.set_exception(ValueError())
    assert future.result() == 1

    failed: ProxyFuture[int] = ProxyFuture()
    failed.set_exception(ValueError())
    with pytest.raises(InvalidStateError):
        failed.set_result(1)


def test_set_exception_none_resolves_like_a_standard_future():
    for future in (Future(), ProxyFuture()):
        future.set_exception(None)
        assert future.result() is None
        assert future.exception() is None


def test_on_resolved_runs_once_before_the_done_callbacks():
    order: list[str] = []

    class Recording(ProxyFuture[int]):
        def _on_resolved(self) -> None:
            order.append("resolved")

    future = Recording()
    future.add_done_callback(lambda _: order.append("callback"))
    future._try_set_result(1)
    future._try_cancel()
    future.add_done_callback(lambda _: order.append("late callback"))

    assert order == ["resolved", "callback", "late callback"]
    assert not future._done_callbacks  # nothing kept alive by a done future


def test_wait_all_completed_wakes_on_proxies_resolved_in_other_threads():
    futures: list[ProxyFuture[int]] = [ProxyFuture() for _ in range(20)]
    resolvers = [
        threading.Thread(target=future._try_set_result, args=(i,))
        for i, future in enumerate(futures)
    ]
    for resolver in resolvers:
        resolver.start()

    done, not_done = wait(futures, timeout=TIMEOUT)
    for resolver in resolvers:
        resolver.join(TIMEOUT)

    assert not not_done
    assert sorted(f.result() for f in done) == list(range(20))


@pytest.mark.skipif(not LIGHT_FUTURES, reason="the light fields only")
def test_wait_and_as_completed_make_no_condition():
    # They take every future's _condition, done or not: a proxy future's is its
    # lock, so they make no Condition, for a pending future or a done one.
    done: list[ProxyFuture[int]] = [ProxyFuture() for _ in range(3)]
    for i, future in enumerate(done):
        future._try_set_result(i)
    pending: ProxyFuture[int] = ProxyFuture()

    finished, not_finished = wait([*done, pending], timeout=0)
    pending._try_set_result(3)
    completed = list(as_completed([*done, pending], timeout=TIMEOUT))

    assert (finished, not_finished) == (set(done), {pending})
    assert sorted(f.result() for f in completed) == [0, 1, 2, 3]
    assert all(future._made_condition is None for future in [*done, pending])


def raise_(error: BaseException) -> None:
    raise error


@pytest.mark.parametrize("raised", [KeyboardInterrupt, SystemExit])
def test_in_a_users_thread_exit_is_raised_after_the_other_callbacks_ran(raised):
    future: ProxyFuture[int] = ProxyFuture()
    ran: list[int] = []
    follower: ProxyFuture[int] = ProxyFuture()
    follower._follow(future)
    future.add_done_callback(lambda f: raise_(raised()))
    future.add_done_callback(lambda f: ran.append(f.result()))

    with pytest.raises(raised):
        future.set_result(1)

    assert ran == [1]
    assert follower.result(timeout=0) == 1


def test_other_base_exceptions_of_a_callback_are_logged_and_contained(caplog):
    class Custom(BaseException):
        pass

    future: ProxyFuture[int] = ProxyFuture()
    ran: list[int] = []
    future.add_done_callback(lambda f: raise_(Custom()))
    future.add_done_callback(lambda f: ran.append(f.result()))

    future.set_result(1)

    assert ran == [1]
    assert [r.exc_info[0] for r in caplog.records if r.exc_info] == [Custom]


@pytest.mark.parametrize("raised", [KeyboardInterrupt, SystemExit])
def test_in_the_scheduler_thread_exit_of_a_callback_is_contained(raised, caplog):
    from _fluent_executors import scheduler as _scheduler

    future: ProxyFuture[int] = ProxyFuture()
    ran: list[int] = []
    future.add_done_callback(lambda f: raise_(raised()))
    future.add_done_callback(lambda f: ran.append(f.result()))
    later = threading.Event()

    _scheduler.call_later(0.0, lambda: future.set_result(1))
    _scheduler.call_later(0.0, later.set)

    assert later.wait(5)
    assert ran == [1]
    assert any(r.exc_info and r.exc_info[0] is raised for r in caplog.records)
    assert not any("scheduled callback" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("timeout", [1e10, math.inf])
def test_result_with_a_timeout_beyond_what_a_thread_can_wait_waits(timeout):
    future: ProxyFuture[int] = ProxyFuture()
    threading.Timer(0.01, future.set_result, (1,)).start()

    assert future.result(timeout=timeout) == 1
