"""InterpreterPoolExecutor: Python 3.14's pool of subinterpreters, with a name, the
chain and stats(); refused with a clear error before 3.14. Callables run in other
interpreters, so they are builtins (shareable by reference)."""

from __future__ import annotations

import operator
import sys

import pytest

from fluent_executors import Executors, ExecutorStats, InterpreterPoolExecutor

TIMEOUT = 60.0  # seconds: an interpreter starts in milliseconds, slower when loaded

needs_314 = pytest.mark.skipif(
    sys.version_info < (3, 14), reason="InterpreterPoolExecutor is 3.14's"
)


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="before 3.14 only")
def test_before_314_it_is_refused_naming_the_version() -> None:
    with pytest.raises(NotImplementedError, match=r"needs Python 3\.14 or later"):
        Executors.interpreter_pool()
    with pytest.raises(NotImplementedError, match=r"this is Python 3\.1[0-3]"):
        InterpreterPoolExecutor(2, name="early")


@needs_314
def test_results_and_exceptions_arrive_from_the_interpreters() -> None:
    with Executors.interpreter_pool(2, name="interp") as pool:
        result = pool.submit(pow, 2, 10)
        failure = pool.submit(int, "not a number")

        assert result.result(timeout=TIMEOUT) == 1024
        error = failure.exception(timeout=TIMEOUT)
    assert isinstance(error, ValueError)
    assert "not a number" in str(error)


@needs_314
def test_an_argument_no_interpreter_can_share_fails_the_future() -> None:
    import threading

    with Executors.interpreter_pool(1, name="interp") as pool:
        future = pool.submit(id, threading.Lock())  # neither shareable nor picklable

        error = future.exception(timeout=TIMEOUT)
    assert isinstance(error, TypeError)
    assert type(error).__name__ == "NotShareableError"


@needs_314
def test_it_is_a_named_standard_pool_with_the_chain() -> None:
    import concurrent.futures

    with Executors.interpreter_pool(2, name="interp") as pool:
        assert isinstance(pool, concurrent.futures.InterpreterPoolExecutor)
        chain = pool.with_retry().with_map(str)
        assert chain.name == "interp"
        assert chain.submit(abs, -3).result(timeout=TIMEOUT) == "3"
        assert list(pool.map(operator.neg, range(4), buffersize=2)) == [0, -1, -2, -3]


@needs_314
def test_its_threads_carry_its_name_unless_a_prefix_is_given() -> None:
    import threading

    with Executors.interpreter_pool(1, name="interp") as pool:
        pool.submit(abs, 1).result(timeout=TIMEOUT)
        named = {t.name for t in threading.enumerate()}
    with Executors.interpreter_pool(1, "mine", name="interp") as pool:
        pool.submit(abs, 1).result(timeout=TIMEOUT)
        prefixed = {t.name for t in threading.enumerate()}
    assert any(name.startswith("fluent-executors-interp") for name in named)
    assert any(name.startswith("mine") for name in prefixed)


@needs_314
def test_stats_count_its_futures() -> None:
    with Executors.interpreter_pool(1, name="interp") as pool:
        futures = [pool.submit(abs, -n) for n in range(3)]
        failed = pool.submit(int, "x")
        for future in [*futures, failed]:
            future.exception(timeout=TIMEOUT)

        stats = pool.stats()
    assert stats == ExecutorStats(
        kind="interpreterpool",
        name="interp",
        submitted=4,
        pending=0,
        running=0,
        done=4,
        failed=1,
        cancelled=0,
    )


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"max_workers": 0}, ValueError, "max_workers"),
        ({"max_workers": "2"}, TypeError, "max_workers"),
        ({"name": 3}, TypeError, "name"),
    ],
)
@needs_314
def test_bad_arguments_are_refused_naming_them(
    arguments: dict[str, object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        Executors.interpreter_pool(**arguments)  # type: ignore[arg-type]
