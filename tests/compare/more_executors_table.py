"""Run the same scenarios on more-executors 2.11.4 and on fluent-executors, side by
side, and print a table of what each does and where they differ.

Run by ``nox -s compare`` (not part of CI), which installs both libraries; or
directly, in an environment that has both::

    python tests/compare/more_executors_table.py

Each scenario is a function of a library namespace (``Executors`` and the ``f_*``
functions of that library) that returns a short description of what happened; a
scenario that does not finish within five seconds reads "hung". Every difference
that remains is a difference on purpose, listed with its reason on the migration
page (docs/migration.rst). Exits with status 0 whatever the differences: the table
is for reading.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import importlib
import math
import threading
import time
import weakref
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any
from unittest import mock

WAIT = 5.0  # seconds a scenario may take


def library(name: str) -> SimpleNamespace:
    """The names a scenario uses, from more-executors or from fluent-executors."""
    if name == "more-executors":
        package = importlib.import_module("more_executors")
        futures = importlib.import_module("more_executors.futures")
        retry = importlib.import_module("more_executors.retry")
        module_prefix = "more_executors"
    else:
        package = futures = retry = importlib.import_module("fluent_executors")
        module_prefix = "fluent_executors"
    return SimpleNamespace(
        Executors=package.Executors,
        ExceptionRetryPolicy=retry.ExceptionRetryPolicy,
        RetryPolicy=retry.RetryPolicy,
        **{name: getattr(futures, name) for name in F_FUNCTIONS},
        prefix=module_prefix,
    )


F_FUNCTIONS = [
    "f_and",
    "f_apply",
    "f_flat_map",
    "f_map",
    "f_nocancel",
    "f_or",
    "f_proxy",
    "f_return",
    "f_sequence",
    "f_timeout",
    "f_traverse",
    "f_zip",
]


# -- the scenarios ---------------------------------------------------------------------


def polled_cancel_without_cancel_fn(lib: SimpleNamespace) -> str:
    polled = threading.Event()

    def poll(descriptors: list[Any]) -> float:
        polled.set()
        return 0.01

    executor = lib.Executors.thread_pool(max_workers=1).with_poll(poll)
    future = executor.submit(lambda: 1)
    polled.wait(WAIT)
    running = future.running()
    cancelled = future.cancel()
    executor.shutdown(wait=False)
    return f"running()={running} cancel()={cancelled}"


def timeout_around_poll_without_cancel_fn(lib: SimpleNamespace) -> str:
    executor = (
        lib.Executors.thread_pool(max_workers=1)
        .with_poll(lambda descriptors: 0.01)
        .with_timeout(0.1)
    )
    future = executor.submit(lambda: 1)
    concurrent.futures.wait([future], timeout=WAIT)
    executor.shutdown(wait=False)
    return f"cancelled at the timeout={future.cancelled()}"


def retry_cancel_while_an_attempt_runs(lib: SimpleNamespace) -> str:
    started, release = threading.Event(), threading.Event()
    calls = []

    def attempt() -> None:
        calls.append(1)
        started.set()
        release.wait(WAIT)
        raise ValueError("attempt")

    policy = lib.ExceptionRetryPolicy(max_attempts=3, sleep=0.01)
    executor = lib.Executors.thread_pool(max_workers=1).with_retry(policy)
    future = executor.submit(attempt)
    started.wait(WAIT)
    answer = future.cancel()
    release.set()
    concurrent.futures.wait([future], timeout=WAIT)
    executor.shutdown(wait=False)
    outcome = "cancelled" if future.cancelled() else repr(future.exception())
    return f"cancel()={answer} outcome={outcome} attempts={len(calls)}"


def retry_cancel_from_inside_the_second_attempt(lib: SimpleNamespace) -> str:
    holder: list[Any] = []
    answers: list[bool] = []

    def attempt() -> None:
        if len(answers) == 0 and len(holder) == 2:
            answers.append(holder[0].cancel())
        holder.append(None)
        raise ValueError(f"attempt {len(holder) - 1}")

    policy = lib.ExceptionRetryPolicy(max_attempts=3, sleep=0.01)
    executor = lib.Executors.thread_pool(max_workers=1).with_retry(policy)
    future = executor.submit(attempt)
    holder.insert(0, future)
    concurrent.futures.wait([future], timeout=WAIT)
    executor.shutdown(wait=False)
    outcome = "cancelled" if future.cancelled() else repr(future.exception())
    return f"cancel()={answers} outcome={outcome}"


def retry_cancel_while_the_policy_decides(lib: SimpleNamespace) -> str:
    return _cancel_while_deciding(lib, lib.Executors.thread_pool(max_workers=1))


def retry_cancel_while_the_policy_decides_on_a_sync_delegate(
    lib: SimpleNamespace,
) -> str:
    return _cancel_while_deciding(lib, lib.Executors.sync())


def _cancel_while_deciding(lib: SimpleNamespace, delegate: Any) -> str:
    """A policy that blocks until the test has called ``cancel()``, on a first
    attempt that fails once ``submit`` has returned (on a pool) or inside it
    (synchronous)."""
    deciding, release, finish = threading.Event(), threading.Event(), threading.Event()
    attempts: list[int] = []

    class Gated(lib.RetryPolicy):  # type: ignore[misc,name-defined]
        def should_retry(self, attempt: int, future: Any) -> bool:
            deciding.set()
            release.wait(WAIT)
            return True

        def sleep_time(self, attempt: int, future: Any) -> float:
            return 0.01

    def attempt() -> None:
        attempts.append(1)
        finish.wait(WAIT)  # on a pool: done once submit() has returned
        raise ValueError(f"attempt {len(attempts)}")

    executor = delegate.with_retry(Gated())
    if "Sync" in type(delegate).__name__:
        finish.set()  # the attempt runs inside submit()
    future = executor.submit(attempt)
    finish.set()
    deciding.wait(WAIT)
    cancelled = future.cancel()
    release.set()
    error = future.exception(WAIT)
    time.sleep(0.1)  # a further attempt would start at once
    executor.shutdown(wait=False)
    return f"cancel()={cancelled} ends with {error!r}, attempts={len(attempts)}"


def retry_policy_that_raises(lib: SimpleNamespace) -> str:
    class Broken(lib.ExceptionRetryPolicy):  # type: ignore[name-defined,misc]
        def should_retry(self, attempt: int, future: Any) -> bool:
            raise RuntimeError("policy bug")

    executor = lib.Executors.thread_pool(max_workers=1).with_retry(Broken())

    def fails() -> None:
        raise ValueError("attempt error")

    future = executor.submit(fails)
    concurrent.futures.wait([future], timeout=WAIT)
    executor.shutdown(wait=False)
    return f"fails with {future.exception()!r}"


def throttle_count_0(lib: SimpleNamespace) -> str:
    ran = threading.Event()
    executor = lib.Executors.thread_pool(max_workers=1).with_throttle(0)
    future = executor.submit(ran.set)
    time.sleep(0.2)
    paused = not ran.is_set()
    future.cancel()
    executor.shutdown(wait=False)
    return f"paused={paused}"


def throttle_count_callable_raising_at_construction(lib: SimpleNamespace) -> str:
    def count() -> int:
        raise RuntimeError("no count")

    try:
        executor = lib.Executors.thread_pool(max_workers=1).with_throttle(count)
    except RuntimeError:
        return "constructor raises"
    executor.shutdown(wait=False)
    return "accepted"


def asyncio_submit_with_a_loop_set(lib: SimpleNamespace) -> str:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        executor = lib.Executors.thread_pool(max_workers=1).with_asyncio()
        future = executor.submit(lambda: 4)
        same = future.get_loop() is loop
        result = loop.run_until_complete(asyncio.wait_for(future, WAIT))
        executor.shutdown(wait=False)
        return f"bound to the set loop={same} result={result}"
    except RuntimeError as error:
        return f"RuntimeError: {error}"
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def f_proxy_truth_and_rounding(lib: SimpleNamespace) -> str:
    pending = lib.f_proxy(concurrent.futures.Future())
    number = lib.f_proxy(lib.f_return(2.567))
    return (
        f"bool(pending)={bool(pending)} round={round(number)} "
        f"trunc={math.trunc(number)} floor={math.floor(number)}"
    )


def combinators_let_go_of_their_inputs(lib: SimpleNamespace) -> str:
    inputs = [lib.f_return(n) for n in range(3)]
    refs = [weakref.ref(f) for f in inputs]
    output = lib.f_zip(*inputs)
    output.result(WAIT)
    del inputs
    gc.collect()
    alive = sum(ref() is not None for ref in refs)
    del output
    return f"inputs alive after resolution={alive}"


def _state(future: concurrent.futures.Future[Any]) -> str:
    if future.cancelled():
        return "cancelled"
    if not future.done():
        return "pending"
    return "failed" if future.exception() else "done"


def _fan_in(lib: SimpleNamespace) -> dict[str, Callable[[list[Any]], Any]]:
    return {
        "f_zip": lambda fs: lib.f_zip(*fs),
        "f_sequence": lib.f_sequence,
        "f_traverse": lambda fs: lib.f_traverse(lambda f: f, fs),
        "f_or": lambda fs: lib.f_or(*fs),
        "f_and": lambda fs: lib.f_and(*fs),
        "f_apply": lambda fs: lib.f_apply(*fs),
    }


def _fan_in_table(
    lib: SimpleNamespace, act: Callable[[list[Any], Any], object], running: bool
) -> str:
    """For each combinator of many inputs (three fresh futures): ``act`` on the
    inputs and the output, then the output's state and the inputs'."""
    rows = []
    for name, combine in _fan_in(lib).items():
        inputs: list[Any] = [concurrent.futures.Future() for _ in range(3)]
        for future in inputs if running else []:
            future.set_running_or_notify_cancel()
        output = combine(inputs)
        answer = act(inputs, output)
        shown = "" if answer is None else f"{answer} "
        rows.append(
            f"{name}: {shown}out {_state(output)}, "
            f"in {'/'.join(_state(f) for f in inputs)}"
        )
    return "; ".join(rows)


def combinators_when_an_input_fails(lib: SimpleNamespace) -> str:
    return _fan_in_table(
        lib, lambda fs, out: fs[0].set_exception(ValueError()), running=False
    )


def combinators_when_an_input_is_cancelled(lib: SimpleNamespace) -> str:
    return _fan_in_table(lib, lambda fs, out: fs[0].cancel() and None, running=False)


def combinators_cancelled_with_inputs_pending(lib: SimpleNamespace) -> str:
    return _fan_in_table(lib, lambda fs, out: f"cancel()={out.cancel()}", False)


def combinators_cancelled_with_inputs_running(lib: SimpleNamespace) -> str:
    return _fan_in_table(lib, lambda fs, out: f"cancel()={out.cancel()}", True)


def one_input_combinators_when_the_input_is_cancelled(lib: SimpleNamespace) -> str:
    rows = []
    for name in ("f_map", "f_flat_map", "f_nocancel", "f_proxy", "f_timeout"):
        future: concurrent.futures.Future[int] = concurrent.futures.Future()
        function = getattr(lib, name)
        if name in ("f_map", "f_flat_map"):
            output = function(future, lib.f_return)
        elif name == "f_timeout":
            output = function(future, 3600)
        else:
            output = function(future)
        future.cancel()
        rows.append(f"{name}: out {_state(output)}")
    return "; ".join(rows)


def f_traverse_when_fn_raises(lib: SimpleNamespace) -> str:
    returned: concurrent.futures.Future[int] = concurrent.futures.Future()

    def fn(item: int) -> concurrent.futures.Future[int]:
        if item:
            raise KeyError(item)
        return returned

    output = lib.f_traverse(fn, [0, 1])
    return f"out {_state(output)}, the future fn returned {_state(returned)}"


def f_zip_result_type(lib: SimpleNamespace) -> str:
    small = lib.f_zip(lib.f_return(1), lib.f_return(2)).result(WAIT)
    large = lib.f_zip(*[lib.f_return(n) for n in range(20)]).result(WAIT)
    return f"{type(small).__name__}, {type(large).__name__} for 20"


def positional_arguments_of_with_throttle(lib: SimpleNamespace) -> str:
    pool = lib.Executors.thread_pool(max_workers=2)
    executor = lib.Executors.with_throttle(pool, 1, None, "named", True)
    release = threading.Event()
    executor.submit(release.wait, WAIT)
    second = threading.Thread(target=executor.submit, args=(int,), daemon=True)
    second.start()
    second.join(0.2)
    blocked = second.is_alive()  # block=True, given by position, holds submit
    release.set()
    second.join(WAIT)
    name = getattr(executor, "name", getattr(executor, "_name", "?"))
    executor.shutdown(wait=False)
    return f"name={name} second submit blocked={blocked}"


def magicmock_delegate(lib: SimpleNamespace) -> str:
    done: concurrent.futures.Future[int] = concurrent.futures.Future()
    done.set_result(8)
    delegate = mock.MagicMock(spec=concurrent.futures.Executor)
    delegate.submit.return_value = done
    executor = lib.Executors.with_retry(delegate)
    result = executor.submit(pow, 2, 3).result(WAIT)
    return f"result={result} submit calls={delegate.submit.call_count}"


def thread_pool_arguments_as_given(lib: SimpleNamespace) -> str:
    seen: list[Any] = []
    original = concurrent.futures.ThreadPoolExecutor.__init__

    def spy(self: Any, *args: Any, **kwargs: Any) -> None:
        seen.append((args, sorted(kwargs)))
        original(self, *args, **kwargs)

    with mock.patch.object(concurrent.futures.ThreadPoolExecutor, "__init__", spy):
        lib.Executors.thread_pool(max_workers=3).shutdown()
    return f"standard __init__ got {seen}"


def module_names(lib: SimpleNamespace) -> str:
    names = ["asyncio", "cancel_on_shutdown", "flat_map", "futures", "map", "poll"]
    names += ["retry", "sync", "throttle", "timeout"]
    missing = []
    for name in names:
        try:
            importlib.import_module(f"{lib.prefix}.{name}")
        except ImportError:
            missing.append(name)
    return f"missing modules={missing}"


def idle_polls(lib: SimpleNamespace) -> str:
    calls: list[int] = []

    def poll(descriptors: list[Any]) -> float:
        calls.append(len(descriptors))
        return 0.01

    executor = lib.Executors.sync().with_poll(poll, default_interval=0.01)
    time.sleep(0.1)
    executor.shutdown(wait=False)
    return f"poll calls with nothing submitted={len(calls)}"


SCENARIOS: list[Callable[[SimpleNamespace], str]] = [
    polled_cancel_without_cancel_fn,
    timeout_around_poll_without_cancel_fn,
    retry_cancel_while_an_attempt_runs,
    retry_cancel_from_inside_the_second_attempt,
    retry_cancel_while_the_policy_decides,
    retry_cancel_while_the_policy_decides_on_a_sync_delegate,
    retry_policy_that_raises,
    throttle_count_0,
    throttle_count_callable_raising_at_construction,
    asyncio_submit_with_a_loop_set,
    f_proxy_truth_and_rounding,
    combinators_let_go_of_their_inputs,
    combinators_when_an_input_fails,
    combinators_when_an_input_is_cancelled,
    combinators_cancelled_with_inputs_pending,
    combinators_cancelled_with_inputs_running,
    one_input_combinators_when_the_input_is_cancelled,
    f_traverse_when_fn_raises,
    f_zip_result_type,
    positional_arguments_of_with_throttle,
    magicmock_delegate,
    thread_pool_arguments_as_given,
    module_names,
    idle_polls,
]


def run(scenario: Callable[[SimpleNamespace], str], lib: SimpleNamespace) -> str:
    """What ``scenario`` returns for ``lib``, its error, or "hung"."""
    outcome: list[str] = []

    def target() -> None:
        try:
            outcome.append(scenario(lib))
        except BaseException as error:  # a scenario's error is what it shows
            outcome.append(f"raised {type(error).__name__}: {error}")

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(WAIT * 2)
    return outcome[0] if outcome else "hung"


def main() -> int:
    libraries = {name: library(name) for name in ("more-executors", "fluent-executors")}
    differences = 0
    for scenario in SCENARIOS:
        results = {name: run(scenario, lib) for name, lib in libraries.items()}
        same = len(set(results.values())) == 1
        differences += not same
        print(f"{'same' if same else 'DIFF'}  {scenario.__name__}")
        for name, result in results.items():
            print(f"      {name:17} {result}")
    print(f"\n{len(SCENARIOS)} scenarios, {differences} differ")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
