"""The future combinators of fluent_executors.futures.

For each function: its value, its errors, cancellation both ways, inputs already
done, and futures that are not ours (the standard library's, a foreign subclass).
Then the algebra (hypothesis) and the scale (100,000 inputs).
"""

from __future__ import annotations

import functools
import math
import operator
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import (
    Future,
    ThreadPoolExecutor,
    TimeoutError,
    wait,
)
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

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

TIMEOUT = 10.0  # seconds: a generous bound for anything that should happen "now"


class ForeignFuture(Future[Any]):
    """A future of another library: a plain subclass that never agrees to cancel."""

    def cancel(self) -> bool:
        return False


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=2) as executor:
        yield executor


@pytest.fixture
def running(pool: ThreadPoolExecutor) -> Iterator[Future[str]]:
    """A future of a standard thread pool that is running, so cannot be cancelled;
    it returns ``"released"`` once the test ends."""
    started, release = threading.Event(), threading.Event()

    def work() -> str:
        started.set()
        release.wait(TIMEOUT)
        return "released"

    future = pool.submit(work)
    assert started.wait(TIMEOUT)
    yield future
    release.set()


def outcome(future: Future[Any]) -> tuple[str, Any]:
    """The outcome of a done future as a comparable value."""
    assert future.done()
    if future.cancelled():
        return ("cancelled", None)
    error = future.exception()
    if error is not None:
        return ("error", error)
    return ("value", future.result())


# -- argument checks ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: f_map(42), "future"),
        (lambda: f_flat_map("x"), "future"),
        (lambda: f_zip(f_return(1), 2), r"fs\[1\]"),
        (lambda: f_sequence([f_return(1), None]), r"futures\[1\]"),
        (lambda: f_or(1), "f"),
        (lambda: f_and(f_return(1), 0), r"fs\[0\]"),
        (lambda: f_apply(len), "future_fn"),
        (lambda: f_apply(f_return(len), [1]), r"futures\[0\]"),
        (lambda: f_apply(f_return(dict), x=1), "x"),
        (lambda: f_nocancel(object()), "future"),
        (lambda: f_proxy(object()), "future"),
        (lambda: f_timeout(object(), 1.0), "future"),
    ],
)
def test_a_non_future_argument_raises_type_error_naming_it(
    call: Callable[[], object], argument: str
) -> None:
    with pytest.raises(TypeError, match=rf"^{argument} must be a concurrent"):
        call()


def test_an_asyncio_future_is_not_accepted() -> None:
    import asyncio

    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(TypeError, match="got Future"):
            f_map(loop.create_future())
    finally:
        loop.close()


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: f_map(f_return(1), 3), TypeError, "^fn must be callable"),
        (lambda: f_map(f_return(1), None, 3), TypeError, "^error_fn must be"),
        (lambda: f_flat_map(f_return(1), 3), TypeError, "^fn must be callable"),
        (lambda: f_sequence(3), TypeError, "^futures must be iterable"),
        (lambda: f_traverse(3, []), TypeError, "^fn must be callable"),
        (lambda: f_traverse(f_return, 3), TypeError, "^items must be iterable"),
        (lambda: f_return_error("boom"), TypeError, "^exception must be"),
        (lambda: f_return_error(ValueError(), 3), TypeError, "^traceback must"),
        (lambda: f_proxy(f_return(1), timeout="1"), TypeError, "^timeout must"),
        (lambda: f_proxy(f_return(1), timeout=-1), ValueError, "^timeout must"),
        (lambda: f_timeout(f_return(1), True), TypeError, "^timeout must"),
        (lambda: f_timeout(f_return(1), -0.5), ValueError, "^timeout must"),
        (lambda: f_timeout(f_return(1), math.nan), ValueError, "^timeout must"),
    ],
)
def test_a_bad_argument_raises_at_once_naming_it(
    call: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        call()


# -- f_return, f_return_error, f_return_cancelled -----------------------------------


def test_f_return_is_done_with_the_value() -> None:
    assert outcome(f_return("x")) == ("value", "x")


def test_f_return_defaults_to_none() -> None:
    assert outcome(f_return()) == ("value", None)


def test_f_return_error_is_done_with_the_exception() -> None:
    error = ValueError("boom")
    assert outcome(f_return_error(error)) == ("error", error)


def test_f_return_error_attaches_the_traceback() -> None:
    try:
        raise KeyError("k")
    except KeyError as caught:
        traceback = caught.__traceback__
    error = ValueError("boom")
    assert f_return_error(error, traceback).exception().__traceback__ is traceback


def test_f_return_cancelled_is_cancelled_and_seen_by_wait() -> None:
    future = f_return_cancelled()
    assert future.cancelled()
    assert wait([future], timeout=0).done == {future}


# -- f_map --------------------------------------------------------------------------


def test_f_map_applies_fn_to_the_result() -> None:
    pending: Future[int] = Future()
    mapped = f_map(pending, lambda x: x * 2)
    assert not mapped.done()
    pending.set_result(21)
    assert mapped.result(TIMEOUT) == 42


def test_f_map_without_fn_passes_the_result_on() -> None:
    assert f_map(f_return(5)).result() == 5


def test_f_map_passes_an_error_on_without_error_fn() -> None:
    error = ValueError("boom")
    assert outcome(f_map(f_return_error(error), str)) == ("error", error)


def test_f_map_error_fn_recovers_from_an_error() -> None:
    mapped = f_map(f_return_error(KeyError("k")), str, lambda e: f"recovered {e!r}")
    assert mapped.result() == "recovered KeyError('k')"


def test_f_map_error_fn_is_not_called_on_success() -> None:
    calls: list[BaseException] = []
    assert f_map(f_return(1), error_fn=calls.append).result() == 1
    assert calls == []


def test_f_map_fn_that_raises_fails_the_future() -> None:
    error = RuntimeError("fn broke")

    def broken(value: int) -> int:
        raise error

    assert outcome(f_map(f_return(1), broken)) == ("error", error)


def test_f_map_error_fn_that_raises_fails_the_future() -> None:
    def reraise(raised: Exception) -> int:
        raise RuntimeError("replaced") from raised

    error = f_map(f_return_error(ValueError()), error_fn=reraise).exception()
    assert isinstance(error, RuntimeError)
    assert isinstance(error.__cause__, ValueError)


def test_f_map_error_fn_never_sees_a_base_exception() -> None:
    interrupt = KeyboardInterrupt()
    calls: list[BaseException] = []
    mapped = f_map(f_return_error(interrupt), error_fn=calls.append)
    assert outcome(mapped) == ("error", interrupt)
    assert calls == []


def test_f_map_fn_raising_a_base_exception_fails_the_future_not_the_thread() -> None:
    def leave(value: int) -> int:
        raise SystemExit(3)

    pending: Future[int] = Future()
    mapped = f_map(pending, leave)
    resolver = threading.Thread(target=pending.set_result, args=(1,))
    resolver.start()
    resolver.join(TIMEOUT)
    assert isinstance(mapped.exception(TIMEOUT), SystemExit)


def test_f_map_runs_fn_in_the_thread_that_resolves_the_input() -> None:
    threads: queue.Queue[threading.Thread] = queue.Queue()
    pending: Future[int] = Future()
    f_map(pending, lambda x: threads.put(threading.current_thread()))
    resolver = threading.Thread(target=pending.set_result, args=(1,))
    resolver.start()
    resolver.join(TIMEOUT)
    assert threads.get(timeout=TIMEOUT) is resolver


def test_f_map_of_a_cancelled_input_is_cancelled_without_calling_error_fn() -> None:
    calls: list[BaseException] = []
    mapped = f_map(f_return_cancelled(), str, calls.append)
    assert mapped.cancelled()
    assert calls == []


def test_f_map_cancel_cancels_the_pending_input() -> None:
    pending: Future[int] = Future()
    mapped = f_map(pending, str)
    assert mapped.cancel()
    assert pending.cancelled()
    assert mapped.cancelled()


def test_f_map_cancel_is_refused_while_the_input_runs(running: Future[str]) -> None:
    mapped = f_map(running, str.upper)
    assert not mapped.cancel()
    assert mapped.running()


def test_f_map_works_on_a_thread_pool_future(pool: ThreadPoolExecutor) -> None:
    assert f_map(pool.submit(pow, 2, 10), str).result(TIMEOUT) == "1024"


def test_f_map_cancel_of_a_foreign_future_that_refuses_returns_false() -> None:
    foreign = ForeignFuture()
    mapped = f_map(foreign, str)
    assert not mapped.cancel()
    foreign.set_result(7)
    assert mapped.result(TIMEOUT) == "7"


# -- f_flat_map ---------------------------------------------------------------------


def test_f_flat_map_takes_on_the_outcome_of_the_returned_future() -> None:
    inner: Future[str] = Future()
    mapped = f_flat_map(f_return(1), lambda x: inner)
    assert not mapped.done()
    inner.set_result("inner")
    assert mapped.result(TIMEOUT) == "inner"


def test_f_flat_map_error_fn_returns_the_future_to_follow() -> None:
    mapped = f_flat_map(f_return_error(ValueError()), error_fn=lambda e: f_return(0))
    assert mapped.result() == 0


def test_f_flat_map_without_fn_passes_the_result_on() -> None:
    assert f_flat_map(f_return(3), error_fn=lambda e: f_return(0)).result() == 3


def test_f_flat_map_fn_returning_a_non_future_fails_with_type_error() -> None:
    mapped = f_flat_map(f_return(1), lambda x: x)
    with pytest.raises(TypeError, match=r"must return a concurrent\.futures\.Future"):
        mapped.result()


def test_f_flat_map_fn_that_raises_fails_the_future() -> None:
    error = RuntimeError("fn broke")

    def broken(value: int) -> Future[int]:
        raise error

    assert outcome(f_flat_map(f_return(1), broken)) == ("error", error)


def test_f_flat_map_cancel_cancels_the_input_before_fn_ran() -> None:
    pending: Future[int] = Future()
    mapped = f_flat_map(pending, f_return)
    assert mapped.cancel()
    assert pending.cancelled()


def test_f_flat_map_cancel_cancels_the_returned_future_after_fn_ran() -> None:
    inner: Future[int] = Future()
    mapped = f_flat_map(f_return(1), lambda x: inner)
    assert mapped.cancel()
    assert inner.cancelled()
    assert mapped.cancelled()


def test_f_flat_map_of_a_cancelled_returned_future_is_cancelled() -> None:
    mapped = f_flat_map(f_return(1), lambda x: f_return_cancelled())
    assert mapped.cancelled()


# -- f_zip and f_sequence -----------------------------------------------------------


def test_f_zip_holds_the_results_in_argument_order() -> None:
    first: Future[int] = Future()
    second: Future[str] = Future()
    zipped = f_zip(first, second, f_return(None))
    second.set_result("b")
    assert not zipped.done()
    first.set_result(1)
    assert zipped.result(TIMEOUT) == (1, "b", None)


def test_f_zip_of_nothing_is_an_empty_tuple() -> None:
    assert f_zip().result() == ()


def test_f_zip_accepts_the_same_future_twice() -> None:
    shared: Future[int] = Future()
    zipped = f_zip(shared, shared)
    shared.set_result(4)
    assert zipped.result(TIMEOUT) == (4, 4)


def test_f_zip_fails_with_the_first_error_and_leaves_the_other_inputs_alone() -> None:
    # As in more-executors: another caller may still want the other results.
    pending: Future[int] = Future()
    error = ValueError("boom")
    zipped = f_zip(pending, f_return_error(error))
    assert outcome(zipped) == ("error", error)
    assert not pending.done()
    pending.set_result(1)  # still the caller's to resolve


@pytest.mark.parametrize(
    "combine",
    [
        lambda fs: f_zip(*fs),
        f_sequence,
        lambda fs: f_traverse(lambda f: f, fs),
        lambda fs: f_apply(*fs),
    ],
    ids=["f_zip", "f_sequence", "f_traverse", "f_apply"],
)
def test_an_input_that_fails_later_leaves_the_pending_inputs_alone(
    combine: Callable[[list[Future[Any]]], Future[Any]],
) -> None:
    first, second, third = inputs = [Future(), Future(), Future()]
    combined = combine(inputs)
    error = ValueError("first")
    second.set_exception(error)
    assert outcome(combined) == ("error", error)
    assert not first.done()
    assert not third.done()
    first.set_result(str)
    third.set_exception(KeyError("third"))
    assert outcome(combined) == ("error", error)


@pytest.mark.parametrize(
    "combine",
    [lambda fs: f_zip(*fs), f_sequence, lambda fs: f_traverse(lambda f: f, fs)],
    ids=["f_zip", "f_sequence", "f_traverse"],
)
def test_an_input_that_is_cancelled_cancels_the_pending_inputs(
    combine: Callable[[list[Future[Any]]], Future[Any]],
) -> None:
    # As in more-executors; the returned future is cancelled too (there it stays
    # pending for f_sequence and f_traverse).
    first, second = inputs = [Future(), Future()]
    combined = combine(inputs)
    assert first.cancel()
    assert combined.cancelled()
    assert second.cancelled()


def test_f_apply_leaves_the_pending_inputs_alone_when_an_input_is_cancelled() -> None:
    # As in more-executors, whose f_apply then stays pending: here it is cancelled.
    function: Future[Callable[[int], int]] = Future()
    argument: Future[int] = Future()
    applied = f_apply(function, argument)
    assert argument.cancel()
    assert applied.cancelled()
    assert not function.done()


def test_f_zip_is_cancelled_when_an_input_is() -> None:
    pending: Future[int] = Future()
    zipped = f_zip(f_return(1), pending)
    pending.cancel()
    assert zipped.cancelled()


def test_f_zip_cancel_cancels_every_pending_input() -> None:
    inputs: list[Future[int]] = [Future(), Future()]
    zipped = f_zip(f_return(0), *inputs)
    assert zipped.cancel()
    assert [f.cancelled() for f in inputs] == [True, True]


def test_f_zip_cancel_is_refused_when_no_input_can_be_cancelled(
    running: Future[str],
) -> None:
    zipped = f_zip(running, ForeignFuture())
    assert not zipped.cancel()
    assert not zipped.done()


def test_f_zip_of_mixed_futures(pool: ThreadPoolExecutor) -> None:
    foreign = ForeignFuture()
    zipped = f_zip(pool.submit(len, "abc"), f_map(f_return(2), str), foreign)
    foreign.set_result("foreign")
    assert zipped.result(TIMEOUT) == (3, "2", "foreign")


def test_f_sequence_holds_the_results_in_input_order() -> None:
    inputs: list[Future[int]] = [Future() for _ in range(3)]
    sequenced = f_sequence(inputs)
    for index in (2, 0, 1):
        inputs[index].set_result(index)
    assert sequenced.result(TIMEOUT) == [0, 1, 2]


def test_f_sequence_reads_a_generator_once() -> None:
    assert f_sequence(f_return(n) for n in range(3)).result() == [0, 1, 2]


def test_f_sequence_of_nothing_is_an_empty_list() -> None:
    assert f_sequence([]).result() == []


def test_f_sequence_fails_with_an_input_error() -> None:
    error = ValueError("boom")
    assert outcome(f_sequence([f_return(1), f_return_error(error)])) == (
        "error",
        error,
    )


# -- f_traverse ---------------------------------------------------------------------


def test_f_traverse_holds_the_results_of_fn_in_item_order() -> None:
    assert f_traverse(lambda s: f_return(s.upper()), "ab").result() == ["A", "B"]


def test_f_traverse_fn_that_raises_fails_the_future_and_leaves_earlier_ones() -> None:
    created: list[Future[int]] = []
    error = RuntimeError("fn broke")

    def start(item: int) -> Future[int]:
        if item == 2:
            raise error
        future: Future[int] = Future()
        created.append(future)
        return future

    assert outcome(f_traverse(start, [0, 1, 2, 3])) == ("error", error)
    assert [f.done() for f in created] == [False, False]  # as in more-executors


def test_f_traverse_fn_returning_a_non_future_fails_with_type_error() -> None:
    traversed = f_traverse(lambda x: x, [1])
    with pytest.raises(TypeError, match="returned by fn must be a concurrent"):
        traversed.result()


def test_f_traverse_cancel_cancels_the_futures_of_fn() -> None:
    created: list[Future[int]] = []

    def start(item: int) -> Future[int]:
        created.append(Future())
        return created[-1]

    assert f_traverse(start, range(2)).cancel()
    assert [f.cancelled() for f in created] == [True, True]


# -- f_or and f_and -----------------------------------------------------------------


def test_f_or_resolves_with_the_first_truthy_result_to_arrive() -> None:
    first: Future[int] = Future()
    second: Future[int] = Future()
    ored = f_or(first, second)
    second.set_result(2)
    assert ored.result(TIMEOUT) == 2
    assert first.cancelled()


def test_f_or_waits_while_results_are_falsy() -> None:
    later: Future[int] = Future()
    ored = f_or(f_return(0), later)
    assert not ored.done()
    later.set_result(5)
    assert ored.result(TIMEOUT) == 5


def test_f_or_of_falsy_results_is_the_last_one_to_complete() -> None:
    first: Future[Any] = Future()
    second: Future[Any] = Future()
    ored = f_or(first, second)
    second.set_result("")
    first.set_result(0)
    assert outcome(ored) == ("value", 0)


def test_f_or_an_error_does_not_decide_while_another_may_be_truthy() -> None:
    later: Future[str] = Future()
    ored = f_or(f_return_error(ValueError()), later)
    later.set_result("ok")
    assert ored.result(TIMEOUT) == "ok"


def test_f_or_an_error_that_completes_last_fails_it() -> None:
    error = ValueError("last")
    assert outcome(f_or(f_return(0), f_return_error(error))) == ("error", error)


def test_f_or_a_cancellation_that_completes_last_cancels_it() -> None:
    assert f_or(f_return(0), f_return_cancelled()).cancelled()


def test_f_or_bool_that_raises_fails_it() -> None:
    class Undecided:
        def __bool__(self) -> bool:
            raise RuntimeError("no truth")

    pending: Future[Any] = Future()
    ored = f_or(pending, f_return(Undecided()))
    with pytest.raises(RuntimeError, match="no truth"):
        ored.result()
    assert pending.cancelled()


def test_f_or_does_not_cancel_an_input_wrapped_in_f_nocancel() -> None:
    protected: Future[int] = Future()
    ored = f_or(f_nocancel(protected), f_return(1))
    assert ored.result() == 1
    assert not protected.cancelled()


def test_f_or_cancel_cancels_every_pending_input() -> None:
    inputs: list[Future[int]] = [Future(), Future()]
    ored = f_or(*inputs)
    assert ored.cancel()
    assert ored.cancelled()
    assert [f.cancelled() for f in inputs] == [True, True]


def test_f_and_resolves_with_the_first_falsy_result_to_arrive() -> None:
    first: Future[int] = Future()
    second: Future[int] = Future()
    anded = f_and(first, second)
    second.set_result(0)
    assert outcome(anded) == ("value", 0)
    assert first.cancelled()


def test_f_and_of_truthy_results_is_the_last_one_to_complete() -> None:
    first: Future[str] = Future()
    anded = f_and(first, f_return("done first"))
    first.set_result("done last")
    assert anded.result(TIMEOUT) == "done last"


def test_f_and_fails_with_the_first_error() -> None:
    pending: Future[int] = Future()
    error = ValueError("boom")
    assert outcome(f_and(pending, f_return_error(error))) == ("error", error)
    assert pending.cancelled()


def test_f_and_is_cancelled_when_an_input_is() -> None:
    pending: Future[int] = Future()
    anded = f_and(f_return(1), pending)
    pending.cancel()
    assert anded.cancelled()


def test_f_and_cancel_is_refused_while_the_inputs_run(running: Future[str]) -> None:
    anded = f_and(running)
    assert not anded.cancel()
    assert anded.running()


def test_f_or_settles_even_if_a_foreign_input_refuses_to_be_cancelled() -> None:
    foreign = ForeignFuture()
    assert f_or(foreign, f_return("first")).result() == "first"
    assert not foreign.done()


def test_f_and_and_f_sequence_of_thread_pool_futures(pool: ThreadPoolExecutor) -> None:
    inputs = [pool.submit(str, n) for n in range(1, 4)]
    assert f_and(*inputs).result(TIMEOUT) in {"1", "2", "3"}
    assert f_sequence(inputs).result(TIMEOUT) == ["1", "2", "3"]


# -- f_apply ------------------------------------------------------------------------


def test_f_apply_calls_the_function_with_positional_and_keyword_results() -> None:
    def describe(name: str, count: int, *, unit: str) -> str:
        return f"{count} {unit} of {name}"

    applied = f_apply(
        f_return(describe), f_return("rice"), f_return(2), unit=f_return("kg")
    )
    assert applied.result() == "2 kg of rice"


def test_f_apply_waits_for_the_function_and_its_arguments() -> None:
    function: Future[Callable[[int], int]] = Future()
    argument: Future[int] = Future()
    applied = f_apply(function, argument)
    argument.set_result(-3)
    assert not applied.done()
    function.set_result(abs)
    assert applied.result(TIMEOUT) == 3


def test_f_apply_fails_when_the_function_raises() -> None:
    with pytest.raises(ZeroDivisionError):
        f_apply(f_return(operator.truediv), f_return(1), f_return(0)).result()


def test_f_apply_fails_when_an_argument_fails() -> None:
    error = ValueError("no argument")
    applied = f_apply(f_return(str), f_return_error(error))
    assert outcome(applied) == ("error", error)


def test_f_apply_cancel_cancels_the_pending_inputs() -> None:
    function: Future[Callable[[int], int]] = Future()
    argument: Future[int] = Future()
    assert f_apply(function, argument).cancel()
    assert function.cancelled()
    assert argument.cancelled()


# -- f_nocancel ---------------------------------------------------------------------


def test_f_nocancel_refuses_cancel_and_leaves_the_input_alone() -> None:
    pending: Future[int] = Future()
    protected = f_nocancel(pending)
    assert not protected.cancel()
    assert not pending.cancelled()
    pending.set_result(1)
    assert protected.result(TIMEOUT) == 1


def test_f_nocancel_is_cancelled_with_its_input_and_still_refuses_cancel() -> None:
    pending: Future[int] = Future()
    protected = f_nocancel(pending)
    pending.cancel()
    assert protected.cancelled()
    assert not protected.cancel()


def test_f_nocancel_passes_an_error_on() -> None:
    error = ValueError("boom")
    assert outcome(f_nocancel(f_return_error(error))) == ("error", error)


# -- f_proxy ------------------------------------------------------------------------


def test_f_proxy_is_a_future_with_the_same_outcome() -> None:
    proxy = f_proxy(f_return("value"))
    assert isinstance(proxy, ProxyFuture)
    assert proxy.result() == "value"


def test_f_proxy_forwards_attributes_and_method_calls() -> None:
    proxy: Any = f_proxy(f_return("fluent"))
    assert proxy.upper() == "FLUENT"
    assert proxy.startswith("fl")


def test_f_proxy_waits_for_the_result_on_first_use() -> None:
    pending: Future[str] = Future()
    proxy: Any = f_proxy(pending)
    resolver = threading.Thread(target=pending.set_result, args=("late",))
    resolver.start()
    assert proxy.upper() == "LATE"
    resolver.join(TIMEOUT)


def test_f_proxy_forwards_calls() -> None:
    proxy: Any = f_proxy(f_return(lambda x, *, y: x + y))
    assert proxy(1, y=2) == 3


def test_f_proxy_forwards_container_operations() -> None:
    proxy: Any = f_proxy(f_return({"a": 1}))
    proxy["b"] = 2
    del proxy["a"]
    assert (len(proxy), "b" in proxy, proxy["b"], list(proxy)) == (1, True, 2, ["b"])


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (lambda p: p + 1, 11),
        (lambda p: 1 + p, 11),
        (lambda p: p - 1, 9),
        (lambda p: 1 - p, -9),
        (lambda p: p * 2, 20),
        (lambda p: p / 4, 2.5),
        (lambda p: 25 // p, 2),
        (lambda p: p % 3, 1),
        (lambda p: divmod(p, 3), (3, 1)),
        (lambda p: p**2, 100),
        (lambda p: 2**p, 1024),
        (lambda p: p << 1, 20),
        (lambda p: p & 3, 2),
        (lambda p: 3 | p, 11),
        (lambda p: p ^ 1, 11),
        (lambda p: -p, -10),
        (lambda p: abs(-p), 10),
        (lambda p: ~p, -11),
        (lambda p: p < 11, True),
        (lambda p: operator.lt(11, p), False),  # reflected: p > 11
        (lambda p: p >= 10, True),
        (lambda p: int(p), 10),
        (lambda p: round(p / 4), 2),
        (lambda p: round(p / 3, 2), 3.33),
        (lambda p: math.trunc(p / 4), 2),
        (lambda p: math.floor(p / 4), 2),
        (lambda p: math.ceil(p / 4), 3),
        (lambda p: float(p), 10.0),
        (lambda p: ([0] * 10 + [1])[p], 1),
    ],
)
def test_f_proxy_forwards_operators(
    expression: Callable[[Any], Any], expected: Any
) -> None:
    assert expression(f_proxy(f_return(10))) == expected


@pytest.mark.parametrize("value", [0, "", [], None, 10])
def test_f_proxy_is_truthy_like_any_object_whatever_the_result(value: Any) -> None:
    assert f_proxy(f_return(value))


def test_f_proxy_truth_never_waits_for_a_pending_result() -> None:
    pending: Future[list[int]] = Future()
    proxy = f_proxy(pending)

    assert proxy  # would block forever if it waited for the result

    assert not proxy.done()


def test_f_proxy_keeps_the_identity_of_a_future() -> None:
    proxy = f_proxy(f_return(1))
    assert proxy != 1
    assert proxy == proxy
    assert {proxy: "key"}[proxy] == "key"
    assert repr(proxy).startswith("<")


def test_f_proxy_raises_the_error_of_the_input_on_use() -> None:
    proxy: Any = f_proxy(f_return_error(KeyError("gone")))
    with pytest.raises(KeyError, match="gone"):
        _ = proxy.anything


def test_f_proxy_timeout_bounds_the_wait() -> None:
    proxy: Any = f_proxy(Future(), timeout=0.01)
    with pytest.raises(TimeoutError):
        _ = proxy.anything


def test_f_proxy_does_not_forward_private_names_nor_block_on_them() -> None:
    proxy: Any = f_proxy(Future())
    with pytest.raises(AttributeError, match="_secret"):
        _ = proxy._secret


def test_f_proxy_cancel_cancels_the_input() -> None:
    pending: Future[int] = Future()
    assert f_proxy(pending).cancel()
    assert pending.cancelled()


# -- f_timeout ----------------------------------------------------------------------


def test_f_timeout_cancels_an_input_not_done_in_time() -> None:
    pending: Future[int] = Future()
    timed = f_timeout(pending, 0.01)
    assert wait([timed], timeout=TIMEOUT).done == {timed}
    assert timed.cancelled()
    assert pending.cancelled()


def test_f_timeout_resolves_like_an_input_done_in_time() -> None:
    pending: Future[int] = Future()
    timed = f_timeout(pending, TIMEOUT)
    pending.set_result(3)
    assert timed.result(TIMEOUT) == 3


def test_f_timeout_follows_an_input_that_refuses_the_cancel(
    running: Future[str],
) -> None:
    refused = threading.Event()
    # The single cancel attempt is made from the scheduler thread; f_map's cancel
    # asks the running input, which refuses. Wait until that has happened.
    original = running.cancel
    running.cancel = lambda: refused.set() or original()
    timed = f_timeout(f_map(running, str.upper), 0.01)
    assert refused.wait(TIMEOUT)
    assert not timed.done()


def test_f_timeout_of_infinity_never_cancels() -> None:
    pending: Future[int] = Future()
    timed = f_timeout(pending, math.inf)
    pending.set_result(1)
    assert timed.result(TIMEOUT) == 1


def test_f_timeout_cancel_cancels_the_input() -> None:
    pending: Future[int] = Future()
    assert f_timeout(pending, TIMEOUT).cancel()
    assert pending.cancelled()


# -- the algebra ----------------------------------------------------------------------

OUTCOMES = st.one_of(
    st.integers().map(f_return),
    st.sampled_from([ValueError("v"), KeyError("k")]).map(f_return_error),
    st.just(None).map(lambda _: f_return_cancelled()),
)


def _double(x: int) -> int:
    return x * 2


def _negate(x: int) -> int:
    return -x


def _fail(x: int) -> int:
    raise ArithmeticError(x)


FUNCTIONS = st.sampled_from([_double, _negate, _fail, str, abs])


def same_outcome(left: Future[Any], right: Future[Any]) -> bool:
    left_kind, left_value = outcome(left)
    right_kind, right_value = outcome(right)
    if left_kind == "error":  # exceptions compare by identity; compare by content
        return right_kind == "error" and repr(left_value) == repr(right_value)
    return (left_kind, left_value) == (right_kind, right_value)


@given(OUTCOMES)
def test_f_map_identity(future: Future[int]) -> None:
    assert same_outcome(f_map(future, lambda x: x), future)
    assert same_outcome(f_map(future), future)


@given(OUTCOMES, FUNCTIONS, FUNCTIONS)
def test_f_map_composition(
    future: Future[int], g: Callable[[Any], Any], h: Callable[[Any], Any]
) -> None:
    composed = f_map(future, lambda x: h(g(x)))
    assert same_outcome(f_map(f_map(future, g), h), composed)


@given(st.integers(), FUNCTIONS)
def test_f_flat_map_of_f_return_is_f_map(value: int, fn: Callable[[Any], Any]) -> None:
    flat = f_flat_map(f_return(value), lambda x: f_map(f_return(x), fn))
    assert same_outcome(flat, f_map(f_return(value), fn))


@given(st.permutations(range(12)))
def test_f_sequence_keeps_input_order_whatever_the_completion_order(
    completion_order: list[int],
) -> None:
    inputs: list[Future[int]] = [Future() for _ in completion_order]
    sequenced = f_sequence(inputs)
    for index in completion_order:
        inputs[index].set_result(index * 10)
    assert sequenced.result(TIMEOUT) == [index * 10 for index in range(12)]


@given(st.lists(st.tuples(st.integers(), st.booleans()), max_size=20))
def test_f_zip_of_n_futures(values: list[tuple[int, bool]]) -> None:
    inputs: list[Future[int]] = [
        f_return(v) if done else Future() for v, done in values
    ]
    zipped = f_zip(*inputs)
    for future, (value, done) in zip(inputs, values, strict=True):
        if not done:
            future.set_result(value)
    assert zipped.result(TIMEOUT) == tuple(value for value, _ in values)


@given(st.lists(st.sampled_from([0, 1, 2, "", "a", None, [], [0]]), min_size=1))
def test_f_or_and_f_and_of_done_inputs_agree_with_or_and_and(values: list[Any]) -> None:
    # Done inputs arrive in argument order, so the rules reduce to Python's.
    inputs = [f_return(v) for v in values]
    assert f_or(*inputs).result() == functools.reduce(lambda a, b: a or b, values)
    assert f_and(*inputs).result() == functools.reduce(lambda a, b: a and b, values)


# -- scale ----------------------------------------------------------------------------

# Ten times the recursion limit: enough to show that nothing recurses per input.
# How the cost grows with the count (10,000 against 100,000 inputs, where a
# quadratic cost shows) is measured by bench/combinators.py, not here.
MANY = 10_000


# Each combiner, and a result for its inputs that makes it wait for all of them.
COMBINERS: dict[str, tuple[Callable[[list[Future[int]]], Future[Any]], int]] = {
    "f_sequence": (f_sequence, 1),
    "f_zip": (lambda inputs: f_zip(*inputs), 1),
    "f_and": (lambda inputs: f_and(*inputs), 1),
    "f_or": (lambda inputs: f_or(*inputs), 0),
}


@pytest.mark.parametrize("name", COMBINERS)
def test_combining_10000_pending_futures_resolved_in_reverse(name: str) -> None:
    combine, value = COMBINERS[name]
    inputs: list[Future[int]] = [Future() for _ in range(MANY)]
    combined = combine(inputs)
    for future in reversed(inputs):
        future.set_result(value)
    assert outcome(combined)[0] == "value"


def test_combining_10000_done_futures_needs_no_recursion() -> None:
    done = [f_return(0) for _ in range(MANY)]  # f_and settles on the first one
    for combine, _ in COMBINERS.values():
        assert outcome(combine(done))[0] == "value"


def test_a_chain_of_10000_maps_resolves_within_set_result_without_recursion() -> None:
    root: Future[int] = Future()
    chained: Future[int] = root
    for _ in range(10_000):
        chained = f_map(chained, lambda x: x + 1)
    root.set_result(0)
    assert chained.done()
    assert chained.result() == 10_000


def test_a_loop_of_1000_flat_maps_on_pending_futures_resolves(
    pool: ThreadPoolExecutor,
) -> None:
    def attempt(number: int) -> Future[int]:
        return f_flat_map(
            pool.submit(int, number),
            lambda n: f_return(n) if n == 1_000 else attempt(n + 1),
        )

    assert attempt(0).result(TIMEOUT) == 1_000


@pytest.mark.parametrize("combine", [f_or, f_and])
def test_a_short_circuit_among_10000_pending_futures_cancels_them_all(
    combine: Callable[..., Future[Any]],
) -> None:
    inputs: list[Future[Any]] = [Future() for _ in range(MANY)]
    combined = combine(*inputs)
    inputs[MANY // 2].set_result(combine is f_or)  # truthy for or, falsy for and
    assert combined.result(TIMEOUT) is (combine is f_or)
    assert sum(f.cancelled() for f in inputs) == MANY - 1


# -- what a resolved combinator keeps -------------------------------------------------


class Value:
    """A result that a weak reference can watch."""


def collected(
    make_input: Callable[[], Future[Any]], combine: Callable[..., Any]
) -> bool:
    """Whether the inputs of a resolved ``combine`` output are collected while the
    output lives on (its result may hold their results: that is what it is)."""
    import gc
    import weakref

    inputs = [make_input() for _ in range(3)]
    refs = [weakref.ref(f) for f in inputs]
    output = combine(inputs)
    assert output.done()
    del inputs
    gc.collect()
    alive = [ref for ref in refs if ref() is not None]
    del output
    return alive == []


def done_with_value() -> Future[Any]:
    return f_return(Value())


@pytest.mark.parametrize(
    "combine",
    [
        lambda fs: f_zip(*fs),
        lambda fs: f_sequence(fs),
        lambda fs: f_traverse(lambda f: f, fs),
        lambda fs: f_or(*fs),
        lambda fs: f_and(*fs),
    ],
    ids=["f_zip", "f_sequence", "f_traverse", "f_or", "f_and"],
)
def test_a_resolved_combinator_holds_no_reference_to_its_inputs(
    combine: Callable[..., Any],
) -> None:
    assert collected(done_with_value, combine)


def test_a_failed_combinator_holds_no_reference_to_its_inputs() -> None:
    def failed() -> Future[Any]:
        return f_return_error(ValueError("no"))

    assert collected(failed, lambda fs: f_zip(*fs))


def test_a_resolved_flat_map_holds_no_reference_to_the_future_fn_returned() -> None:
    import gc
    import weakref

    returned = [f_return(Value())]
    inner_ref = weakref.ref(returned[0])
    value_ref = weakref.ref(returned[0].result())
    output = f_flat_map(f_return(1), lambda _: returned.pop())
    assert output.done()
    gc.collect()

    assert inner_ref() is None
    assert value_ref() is not None  # the output's result: kept, as it must be
    del output


@pytest.mark.parametrize("size", [0, 1, 2, 5, 19])
def test_f_zip_results_are_named_tuples_for_fewer_than_20_inputs(size: int) -> None:
    result = f_zip(*[f_return(n) for n in range(size)]).result()

    assert type(result).__name__ == f"ZipTuple{size}"
    assert result == tuple(range(size))
    assert result._fields == tuple(f"f{n}" for n in range(size))  # type: ignore[attr-defined]


def test_f_zip_results_are_plain_tuples_from_20_inputs() -> None:
    result = f_zip(*[f_return(n) for n in range(20)]).result()

    assert type(result) is tuple
    assert result == tuple(range(20))
