"""ProxyFuture: the proxy-future base that every wrapper's futures share."""

from __future__ import annotations

import random
import threading
from concurrent.futures import CancelledError, Future, as_completed, wait
from concurrent.futures import TimeoutError as FuturesTimeoutError
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
    # ProxyFuture may set up Future's fields itself (see _LIGHT_INIT): it must miss
    # none, or some Future method would fail on it.
    assert set(vars(Future())) <= set(vars(ProxyFuture()))


def test_waits_with_a_timeout_and_wakes_on_resolution():
    future: ProxyFuture[int] = ProxyFuture()
    resolver = threading.Timer(0.05, future._try_set_result, args=(7,))
    resolver.start()

    assert future.result(timeout=TIMEOUT) == 7
    resolver.join()
