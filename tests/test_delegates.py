"""What a wrapper calls on its delegate: always the delegate's own ``submit`` (a
subclass's override, a ``MagicMock``, a proxy object), and what it does when that
returns something that is not a future (docs/guide.rst, Errors and logging)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any
from unittest import mock

import pytest
from wrapper_doubles import TIMEOUT, examples

from fluent_executors import Executors, ThreadPoolExecutor

WRAPPERS: dict[str, Callable[[Any], Any]] = examples(concurrent=True)


class CountingPool(ThreadPoolExecutor):
    """A subclass of the library's pool that overrides ``submit``."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.submitted = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=WRAPPERS.keys())
def test_a_subclass_overriding_submit_is_called(wrap: Callable[[Any], Any]) -> None:
    pool = CountingPool()
    with wrap(pool) as executor:
        assert executor.submit(pow, 2, 3).result(timeout=TIMEOUT) == 8
    assert pool.submitted == 1


@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=WRAPPERS.keys())
def test_a_magicmock_delegate_is_called_and_its_future_followed(
    wrap: Callable[[Any], Any],
) -> None:
    done: Future[int] = Future()
    done.set_result(8)
    delegate = mock.MagicMock(spec=concurrent.futures.Executor)
    delegate.submit.return_value = done

    executor = wrap(delegate)
    assert executor.submit(pow, 2, 3).result(timeout=TIMEOUT) == 8

    delegate.submit.assert_called_once_with(pow, 2, 3)
    executor.shutdown(wait=False)


class Proxy:
    """An object that forwards every attribute to the executor it stands for."""

    def __init__(self, target: Any) -> None:
        self._target = target
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        return getattr(self._target, name)


@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=WRAPPERS.keys())
def test_a_proxy_object_delegate_has_its_submit_called(
    wrap: Callable[[Any], Any],
) -> None:
    proxy = Proxy(Executors.thread_pool(max_workers=1))
    with wrap(proxy) as executor:
        assert executor.submit(pow, 2, 3).result(timeout=TIMEOUT) == 8
    assert "submit" in proxy.calls
    assert "_submit_plain" not in proxy.calls


IMMEDIATE = {k: v for k, v in WRAPPERS.items() if k not in ("throttle", "rate_limit")}


@pytest.mark.parametrize("wrap", IMMEDIATE.values(), ids=IMMEDIATE.keys())
def test_a_delegate_returning_no_future_raises_type_error_from_submit(
    wrap: Callable[[Any], Any],
) -> None:
    delegate = mock.MagicMock(spec=concurrent.futures.Executor)  # submit -> a Mock
    executor = wrap(delegate)

    with pytest.raises(TypeError, match=r"must return a concurrent\.futures\.Future"):
        executor.submit(pow, 2, 3)
    executor.shutdown(wait=False)


@pytest.mark.parametrize(
    "wrap",
    [WRAPPERS["throttle"], lambda d: Executors.with_rate_limit(d, 1, period=60.0)],
    ids=["throttle", "rate_limit"],
)
def test_a_queueing_wrapper_fails_the_future_and_frees_the_slot(
    wrap: Callable[[Any], Any],
) -> None:
    done: Future[int] = Future()
    done.set_result(8)
    delegate = mock.MagicMock(spec=concurrent.futures.Executor)
    delegate.submit.side_effect = [object(), done]  # no future, then a future
    executor = wrap(delegate)

    failed = executor.submit(pow, 2, 3)
    error = failed.exception(timeout=TIMEOUT)
    assert isinstance(error, TypeError)
    assert "must return a concurrent.futures.Future" in str(error)
    # The slot it held is free again: for the rate limit, its one call a minute.
    assert executor.submit(pow, 2, 3).result(timeout=TIMEOUT) == 8
    executor.shutdown(wait=False)
