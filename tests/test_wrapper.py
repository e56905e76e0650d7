"""What every wrapper shares: argument checks and shutdown forwarding."""

from __future__ import annotations

import math
from concurrent.futures import Executor, Future
from typing import Any

import pytest

from _fluent_executors.wrapper import (
    check_callable,
    check_delegate,
    check_name,
    check_non_negative,
    shutdown_delegate,
)


@pytest.mark.parametrize("value", [0, 0.5, 3, math.inf])
def test_check_non_negative_returns_a_float(value: float) -> None:
    assert check_non_negative("delay", value) == float(value)


@pytest.mark.parametrize("value", [True, "1", None, 1j])
def test_check_non_negative_refuses_what_is_not_a_real_number(value: object) -> None:
    with pytest.raises(TypeError, match="delay must be a real number"):
        check_non_negative("delay", value)


@pytest.mark.parametrize("value", [-0.1, math.nan, -math.inf])
def test_check_non_negative_refuses_negative_and_nan(value: float) -> None:
    with pytest.raises(ValueError, match="delay must be >= 0"):
        check_non_negative("delay", value)


def test_check_non_negative_refuses_infinity_when_asked_for_a_finite_number() -> None:
    with pytest.raises(ValueError, match="delay must be finite"):
        check_non_negative("delay", math.inf, finite=True)


def test_check_delegate_wants_a_submit_method() -> None:
    with pytest.raises(TypeError, match="delegate must be an executor"):
        check_delegate(object())


def test_check_name_wants_a_str() -> None:
    with pytest.raises(TypeError, match="name must be a str, got int"):
        check_name(3)


def test_check_callable_names_the_argument() -> None:
    with pytest.raises(TypeError, match="poll_fn must be callable, got str"):
        check_callable("poll_fn", "poll")


class Recorder(Executor):
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        raise NotImplementedError


class Standard(Recorder):
    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.calls.append({"wait": wait, "cancel_futures": cancel_futures})


class WaitOnly(Recorder):  # as Dask's ClientExecutor
    def shutdown(self, wait: bool = True) -> None:  # type: ignore[override]
        self.calls.append({"wait": wait})


class Flexible(Recorder):
    def shutdown(self, wait: bool = True, **kwargs: Any) -> None:  # type: ignore[override]
        self.calls.append({"wait": wait, **kwargs})


@pytest.mark.parametrize("cancel_futures", [False, True])
def test_shutdown_delegate_passes_both_arguments_to_a_standard_executor(
    cancel_futures: bool,
) -> None:
    delegate = Standard()

    shutdown_delegate(delegate, False, cancel_futures)

    assert delegate.calls == [{"wait": False, "cancel_futures": cancel_futures}]


def test_shutdown_delegate_leaves_out_cancel_futures_where_it_is_not_taken() -> None:
    delegate = WaitOnly()

    shutdown_delegate(delegate, True, True)

    assert delegate.calls == [{"wait": True}]


def test_shutdown_delegate_passes_cancel_futures_to_a_var_keyword_shutdown() -> None:
    delegate = Flexible()

    shutdown_delegate(delegate, True, True)

    assert delegate.calls == [{"wait": True, "cancel_futures": True}]
