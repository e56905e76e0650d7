# pyright: strict, reportUnnecessaryTypeIgnoreComment=true
"""Static checks of the future combinators' types (``fluent_executors.futures``).

Checked by ``mypy --strict`` and ``pyright`` (``nox -s typecheck``), never run;
see ``README.rst`` in this directory for how the checks read.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from typing_extensions import assert_type

from fluent_executors import (
    ProxyFuture,
    f_and,
    f_apply,
    f_flat_map,
    f_map,
    f_nocancel,
    f_or,
    f_proxy,
    f_return,
    f_return_cancelled,
    f_return_error,
    f_sequence,
    f_timeout,
    f_traverse,
    f_zip,
)


def show(number: int) -> str:
    return str(number)


def recover(error: Exception) -> str:
    return type(error).__name__


def later(number: int) -> Future[str]:
    return f_return(str(number))


def recover_later(error: Exception) -> Future[str]:
    return f_return(repr(error))


def needs_bytes(data: bytes) -> int:
    return len(data)


def label(number: int, text: str) -> bytes:
    return f"{number}: {text}".encode()


def check_return(number: Future[int]) -> None:
    assert_type(f_return(), ProxyFuture[None])
    assert_type(f_return(1), ProxyFuture[int])
    assert_type(f_return("text"), ProxyFuture[str])
    assert_type(f_return(number), ProxyFuture[Future[int]])
    assert_type(f_return_error(ValueError("no")), ProxyFuture[Any])
    assert_type(f_return_cancelled(), ProxyFuture[Any])
    # A failed or cancelled future stands in for a future of any type.
    failed: Future[int] = f_return_error(ValueError("no"))
    cancelled: Future[bytes] = f_return_cancelled()
    del failed, cancelled
    # A ProxyFuture is a concurrent.futures.Future, and keeps its result type.
    as_future: Future[int] = f_return(1)
    del as_future


def check_return_errors() -> None:
    number = f_return(1)
    wrong: Future[str] = number  # type: ignore[assignment]
    f_return_error("not an exception")  # type: ignore[arg-type]
    del wrong


def check_map(number: Future[int]) -> None:
    assert_type(f_map(number), ProxyFuture[int])
    assert_type(f_map(number, show), ProxyFuture[str])
    assert_type(f_map(number, show, recover), ProxyFuture[str])
    assert_type(f_map(number, show, error_fn=recover), ProxyFuture[str])
    # With error_fn alone, a result passes through unchanged: either type.
    assert_type(f_map(number, error_fn=recover), ProxyFuture[int | str])
    assert_type(f_map(f_map(number, show), len), ProxyFuture[int])


def check_map_errors(number: Future[int]) -> None:
    f_map(number, needs_bytes)  # type: ignore[arg-type]
    f_map(show, show)  # type: ignore[call-overload]


def check_flat_map(number: Future[int]) -> None:
    assert_type(f_flat_map(number), ProxyFuture[int])
    assert_type(f_flat_map(number, later), ProxyFuture[str])
    assert_type(f_flat_map(number, later, recover_later), ProxyFuture[str])
    assert_type(f_flat_map(number, error_fn=recover_later), ProxyFuture[int | str])


def check_flat_map_errors(number: Future[int]) -> None:
    # fn must return a future: show returns a str.
    f_flat_map(number, show)  # type: ignore[arg-type]


def check_zip(
    a: Future[int], b: Future[str], c: Future[bytes], d: Future[float]
) -> None:
    assert_type(f_zip(), ProxyFuture[tuple[()]])
    assert_type(f_zip(a), ProxyFuture[tuple[int]])
    assert_type(f_zip(a, b), ProxyFuture[tuple[int, str]])
    assert_type(f_zip(a, b, c), ProxyFuture[tuple[int, str, bytes]])
    assert_type(f_zip(a, b, c, d), ProxyFuture[tuple[int, str, bytes, float]])
    assert_type(f_zip(a, b, c, d, a), ProxyFuture[tuple[int, str, bytes, float, int]])
    # Past five inputs, the tuple's elements are no longer typed one by one.
    assert_type(f_zip(a, b, c, d, a, b), ProxyFuture[tuple[Any, ...]])


def check_zip_errors(a: Future[int]) -> None:
    f_zip(a, 2)  # type: ignore[call-overload]


def check_sequence_and_traverse(numbers: list[Future[int]]) -> None:
    assert_type(f_sequence(numbers), ProxyFuture[list[int]])
    assert_type(f_sequence(iter(numbers)), ProxyFuture[list[int]])
    assert_type(f_sequence(f for f in numbers), ProxyFuture[list[int]])
    assert_type(f_traverse(later, [1, 2, 3]), ProxyFuture[list[str]])
    assert_type(f_traverse(later, range(3)), ProxyFuture[list[str]])


def check_sequence_and_traverse_errors(numbers: list[Future[int]]) -> None:
    f_sequence(numbers[0])  # type: ignore[arg-type]
    f_traverse(later, ["a", "b"])  # type: ignore[arg-type]
    f_traverse(show, [1, 2])  # type: ignore[arg-type]


def check_or_and(a: Future[int], b: Future[int]) -> None:
    assert_type(f_or(a), ProxyFuture[int])
    assert_type(f_or(a, b, a), ProxyFuture[int])
    assert_type(f_and(a, b), ProxyFuture[int])


def check_apply(a: Future[int], b: Future[str]) -> None:
    assert_type(f_apply(f_return(show), a), ProxyFuture[str])
    assert_type(f_apply(f_return(label), a, b), ProxyFuture[bytes])
    assert_type(f_apply(f_return(label), a, text=b), ProxyFuture[bytes])


def check_behaviour_changers(a: Future[int]) -> None:
    assert_type(f_nocancel(a), ProxyFuture[int])
    assert_type(f_proxy(a), ProxyFuture[int])
    assert_type(f_proxy(a, timeout=1.0), ProxyFuture[int])
    assert_type(f_timeout(a, 10.0), ProxyFuture[int])
    assert_type(f_timeout(a, 10), ProxyFuture[int])


def check_behaviour_changers_errors(a: Future[int]) -> None:
    f_timeout(a, "10")  # type: ignore[arg-type]
    f_nocancel(1)  # type: ignore[arg-type]


async def check_await(a: ProxyFuture[int]) -> None:
    # Every ProxyFuture is awaitable, and await gives its result type.
    assert_type(await a, int)
    assert_type(await f_return("text"), str)
    assert_type(await f_map(a, show), str)
    assert_type(await f_zip(a, f_return(b"")), tuple[int, bytes])


async def check_await_errors(a: Future[int]) -> None:
    # The standard library's futures are not awaitable; wrap them first.
    await a  # type: ignore[misc]
