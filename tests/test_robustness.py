"""The promises of the guide at the edges (docs/guide.rst, "Threads and errors"):
interpreter exit, signals, a KeyboardInterrupt in a blocked submit, deep chains,
odd numbers, exiting done-callbacks, and threads that cannot be started."""

from __future__ import annotations

import contextlib
import logging
import math
import numbers
import signal
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import Future, wait
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _fluent_executors import scheduler as _scheduler
from _fluent_executors.wrapper import check_non_negative, seconds_returned
from fluent_executors import ExceptionRetryPolicy, Executors, ProxyFuture, f_map

TIMEOUT = 10.0  # seconds: a generous bound for anything that should happen "now"
SUBPROCESS_TIMEOUT = 120.0  # seconds: a fresh interpreter on a loaded machine


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with this library importable."""
    import os

    env = dict(os.environ)
    source = os.path.join(os.path.dirname(__file__), os.pardir, "src")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.abspath(source), env.get("PYTHONPATH", "")]
    )
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,  # "prompt": it raises if the program hangs
        env=env,
        check=False,
    )


# -- interpreter exit with retries pending ------------------------------------------


def test_exiting_without_shutdown_while_retries_are_pending_logs_one_line_at_most():
    done = run_python(
        """
        import logging, threading
        from fluent_executors import Executors
        logging.basicConfig(level=logging.WARNING)
        executor = Executors.thread_pool(max_workers=2).with_retry(
            max_attempts=1000, sleep=0.0005, max_sleep=0.001
        )
        def fail():
            raise ValueError("again")
        futures = [executor.submit(fail) for _ in range(200)]
        # at least one retry has been scheduled: work is pending at exit
        while executor.stats().pending == 0:
            threading.Event().wait(0.001)
        print("exiting")
        """
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "exiting"
    lines = done.stderr.splitlines()
    assert len(lines) <= 1, done.stderr
    assert all("interpreter is exiting" in line for line in lines)


# -- a KeyboardInterrupt in a submit blocked on a throttle --------------------------


class _InterruptedCondition(threading.Condition):
    """A Condition whose wait() raises KeyboardInterrupt, as Ctrl-C does in the
    main thread blocked in it."""

    def wait(self, timeout: float | None = None) -> bool:
        raise KeyboardInterrupt


def test_a_submit_interrupted_while_blocked_on_a_throttle_leaves_no_job_behind():
    release = threading.Event()
    ran: list[str] = []
    with Executors.thread_pool(max_workers=1).with_throttle(1, block=True) as executor:
        first = executor.submit(release.wait, TIMEOUT)
        executor._cond = _InterruptedCondition(executor._lock)

        with pytest.raises(KeyboardInterrupt):
            executor.submit(ran.append, "second")

        assert executor.stats().queued == 0
        release.set()
        assert first.result(TIMEOUT) is True
        after = executor.submit(ran.append, "third")  # (not blocked: room)
        after.result(TIMEOUT)
    assert ran == ["third"]


# -- a signal handler cancelling a future while its lock is held --------------------


def test_a_signal_handler_cancels_a_future_inside_wait_without_deadlock():
    # The handler runs in the main thread while it is inside wait(), holding the
    # future's lock (raised from where wait() adds its waiter): the lock must be
    # re-entrant, as the standard Future's is. Deadlocked, the child would time out.
    done = run_python(
        """
        import signal
        from concurrent.futures import wait
        from concurrent.futures import _base
        from fluent_executors import ProxyFuture

        future = ProxyFuture()
        signal.signal(signal.SIGALRM, lambda signum, frame: future.cancel())
        install = _base._create_and_install_waiters

        def install_then_signal(fs, return_when):
            waiter = install(fs, return_when)  # appended to the future's waiters
            assert future._lock._is_owned()  # held by wait()
            signal.raise_signal(signal.SIGALRM)  # the handler runs here
            return waiter

        _base._create_and_install_waiters = install_then_signal
        finished, _ = wait([future], timeout=30)
        print(future.cancelled(), future in finished)
        """
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_a_signal_handler_may_resolve_a_future_whose_lock_its_thread_holds():
    future: ProxyFuture[int] = ProxyFuture()
    previous = signal.signal(signal.SIGALRM, lambda *_: future.set_result(1))
    try:
        with future._condition:  # as wait() and as_completed() hold it
            signal.raise_signal(signal.SIGALRM)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert future.result(timeout=0) == 1


# -- cancelling deep chains ------------------------------------------------------------


@pytest.mark.parametrize("depth", [10_000, 100_000])
def test_cancelling_a_deep_chain_of_f_map_does_not_recurse(depth):
    source: Future[int] = Future()
    last: Future[int] = source
    for _ in range(depth):
        last = f_map(last, lambda x: x)

    assert last.cancel()
    assert source.cancelled()
    assert last.cancelled()


def test_cancelling_the_middle_of_a_deep_chain_cancels_up_and_down():
    source: ProxyFuture[int] = ProxyFuture()
    chain = [source]
    for _ in range(20_000):
        chain.append(f_map(chain[-1], lambda x: x))

    assert chain[10_000].cancel()
    assert all(future.cancelled() for future in chain)


def test_a_deep_chain_whose_source_is_running_refuses_the_cancel():
    source: ProxyFuture[int] = ProxyFuture()
    assert source.set_running_or_notify_cancel()
    last: Future[int] = source
    for _ in range(20_000):
        last = f_map(last, lambda x: x)

    assert not last.cancel()
    assert not last.done()
    source.set_result(2)
    assert last.result(timeout=TIMEOUT) == 2


# -- numbers ---------------------------------------------------------------------------

HUGE = 10**400

odd_numbers = st.one_of(
    st.integers(min_value=-(10**500), max_value=10**500),
    st.floats(allow_nan=True, allow_infinity=True),
    st.fractions(),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.sampled_from([HUGE, -HUGE, math.nan, math.inf, -math.inf, -0.0, True]),
    st.sampled_from([Decimal("sNaN"), Fraction(HUGE, 3), "1", None, object()]),
)


@given(odd_numbers)
def test_a_number_returned_for_seconds_is_clamped_or_refused(value):
    seconds = seconds_returned(value)

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        assert seconds is None  # (a Decimal is no Real number)
    elif value != value:  # NaN
        assert seconds is None
    elif value <= 0:
        assert seconds == 0.0
    elif value > sys.float_info.max:
        assert seconds == math.inf
    else:
        assert seconds == float(value)


@given(odd_numbers)
def test_a_number_passed_for_seconds_is_accepted_or_refused_naming_it(value):
    refused: Exception | None = None
    try:
        seconds = check_non_negative("timeout", value)
    except (TypeError, ValueError) as error:
        refused = error
    if refused is None:
        assert 0.0 <= seconds <= math.inf
    else:
        assert "timeout" in str(refused)
        assert len(str(refused)) < 200  # no 400-digit int in the message


@pytest.mark.parametrize(
    "make",
    [
        lambda: Executors.thread_pool().with_timeout(HUGE),
        lambda: Executors.thread_pool().with_retry(sleep=HUGE),
        lambda: Executors.thread_pool().with_retry(max_sleep=-HUGE),
        lambda: Executors.thread_pool().with_rate_limit(1, period=HUGE),
        lambda: Executors.thread_pool().with_poll(
            lambda ds: None, default_interval=HUGE
        ),
        lambda: ExceptionRetryPolicy(exponent=Fraction(HUGE, 3)),
    ],
)
def test_a_constructor_refuses_a_number_beyond_a_float_with_a_value_error(make):
    with pytest.raises(ValueError, match="must be"):
        make()


@pytest.mark.parametrize("returned", [HUGE, Fraction(HUGE, 7), math.inf])
def test_a_poll_function_returning_a_number_beyond_a_float_waits_for_a_notify(
    returned,
):
    polled = threading.Event()

    def poll(descriptors: list[Any]) -> object:
        for descriptor in descriptors:
            if descriptor.result == "go":
                descriptor.yield_result("done")
        polled.set()
        return returned

    with Executors.sync().with_poll(poll) as executor:
        future = executor.submit(lambda: "wait")
        assert polled.wait(TIMEOUT)  # the thread lives on after that number
        go = executor.submit(lambda: "go")
        executor.notify()
        assert go.result(TIMEOUT) == "done"
        assert not future.done()
        future.cancel()


@pytest.mark.parametrize("returned", [-HUGE, -1, math.nan, Decimal("sNaN"), "1"])
def test_a_poll_function_returning_an_odd_number_still_resolves_its_futures(
    returned,
):
    calls = []

    def poll(descriptors: list[Any]) -> object:
        calls.append(len(descriptors))
        if len(calls) > 1:
            for descriptor in descriptors:
                descriptor.yield_result("done")
        return returned

    with Executors.sync().with_poll(poll, default_interval=0.001) as executor:
        assert executor.submit(lambda: 1).result(TIMEOUT) == "done"


@pytest.mark.parametrize("delay", [HUGE, -1, math.nan, "1"])
def test_a_descriptor_deferred_by_an_odd_number_fails_its_futures_clearly(delay):
    def poll(descriptors: list[Any]) -> None:
        for descriptor in descriptors:
            descriptor.defer(delay)

    with Executors.sync().with_poll(poll) as executor:
        error = executor.submit(lambda: 1).exception(TIMEOUT)
    assert isinstance(error, (TypeError, ValueError))
    assert "delay" in str(error)


@pytest.mark.parametrize("returned", [HUGE, -1, math.nan, "1", object()])
def test_a_retry_policy_returning_an_odd_delay_ends_the_future_with_the_attempt(
    returned, caplog
):
    class Odd(ExceptionRetryPolicy):
        def next_delay(self, attempt: int, future: Future[Any], elapsed: float) -> Any:
            return returned

    def fail() -> None:
        raise KeyError("attempt")

    with Executors.sync().with_retry(Odd()) as executor:
        error = executor.submit(fail).exception(TIMEOUT)
    assert isinstance(error, KeyError)


@pytest.mark.parametrize("returned", [HUGE, -1, 1.5, math.nan, "1", True])
def test_a_throttle_count_callable_returning_odd_numbers_keeps_working(returned):
    with Executors.thread_pool(max_workers=2).with_throttle(lambda: returned) as ex:
        assert ex.submit(lambda: 3).result(TIMEOUT) == 3


# -- done-callbacks that exit -------------------------------------------------------


@pytest.mark.parametrize("raised", [SystemExit, KeyboardInterrupt])
def test_a_done_callback_raising_exit_leaves_the_pool_worker_alive(raised, caplog):
    with Executors.thread_pool(max_workers=1) as pool:
        gate = threading.Event()
        first = pool.submit(lambda: gate.wait(TIMEOUT) and threading.get_ident())
        called = threading.Event()

        def exit_(future: Future[Any]) -> None:
            called.set()
            raise raised

        first.add_done_callback(exit_)  # run by the worker, which resolves it
        gate.set()
        worker = first.result(TIMEOUT)
        assert called.wait(TIMEOUT)
        assert pool.submit(threading.get_ident).result(TIMEOUT) == worker
        assert len(pool._threads) == 1
    assert any(r.exc_info and r.exc_info[0] is raised for r in caplog.records)


@pytest.mark.parametrize("raised", [SystemExit, KeyboardInterrupt])
def test_a_done_callback_raising_exit_on_a_follower_is_contained_in_any_thread(
    raised,
):
    # A wrapper's future follows a standard future that another thread resolves.
    upstream: Future[int] = Future()
    follower = f_map(upstream, lambda x: x + 1)
    follower.add_done_callback(lambda f: (_ for _ in ()).throw(raised()))
    outcome: Future[str] = Future()

    def resolve() -> None:
        try:
            upstream.set_result(1)
        except BaseException as error:
            outcome.set_result(type(error).__name__)
        else:
            outcome.set_result("survived")

    threading.Thread(target=resolve).start()
    assert outcome.result(TIMEOUT) == "survived"
    assert follower.result(timeout=0) == 2


def test_a_done_callback_raising_exit_in_the_main_thread_still_propagates():
    future: ProxyFuture[int] = ProxyFuture()
    future.add_done_callback(lambda f: sys.exit(3))
    with pytest.raises(SystemExit):
        future.set_result(1)


# -- loggers that raise -------------------------------------------------------------


class _RaisingHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        raise KeyboardInterrupt


def test_a_logger_raising_when_a_retry_cannot_submit_still_fails_the_future():
    logger = logging.getLogger("test_robustness.raising")
    logger.addHandler(_RaisingHandler())
    logger.propagate = False
    try:
        pool = Executors.thread_pool(max_workers=1)
        executor = pool.with_retry(
            ExceptionRetryPolicy(sleep=0.001, max_attempts=3), logger=logger
        )
        gate = threading.Event()

        def fail() -> None:
            gate.wait(TIMEOUT)
            raise ValueError("attempt")

        future = executor.submit(fail)
        pool.shutdown(wait=False)  # the retry's submit raises
        gate.set()
        assert isinstance(future.exception(TIMEOUT), RuntimeError)
    finally:
        logger.handlers.clear()
        logger.propagate = True


class _ExplodingLogger:
    """A ``logger=`` object every method of which raises a ``BaseException``."""

    def _explode(self, *args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt("a logger of the user's")

    debug = info = warning = error = exception = log = _explode

    def isEnabledFor(self, level: int) -> bool:
        raise SystemExit("a logger of the user's")


def test_a_logger_object_that_raises_stops_no_thread_and_hangs_no_future():
    # Everything that logs: a poll function that fails once, a retry policy that
    # raises, a map function that raises, a cancel function that raises.
    logger: Any = _ExplodingLogger()
    polls = iter([ValueError("a transient poll error")])

    def poll(descriptors: list[Any]) -> float:
        error = next(polls, None)
        if error is not None:
            raise error
        for descriptor in descriptors:
            descriptor.yield_result()
        return 0.001

    class BrokenPolicy(ExceptionRetryPolicy):
        def should_retry(self, attempt: int, future: Future[Any]) -> bool:
            raise RuntimeError("policy")

    def halve(value: int) -> float:
        if value == 3:
            raise ZeroDivisionError("map")
        return value / 2

    retry_policy = ExceptionRetryPolicy(max_attempts=3, sleep=0.001)
    with (
        Executors.thread_pool(max_workers=2)
        .with_poll(
            poll,
            poll_retry_policy=retry_policy,
            default_interval=0.001,
            logger=logger,
        )
        .with_map(halve, logger=logger)
        .with_retry(BrokenPolicy(), logger=logger)
    ) as executor:
        futures = [executor.submit(abs, n) for n in range(5)]
        assert wait(futures, timeout=TIMEOUT).not_done == set()

    assert [f.result() for f in futures if f.exception() is None] == [0, 0.5, 1, 2]
    assert isinstance(futures[3].exception(), ZeroDivisionError)


def test_a_handler_raising_on_the_librarys_loggers_stops_no_thread(
    caplog: pytest.LogCaptureFixture,
):
    library = logging.getLogger("fluent_executors")
    handler = _RaisingHandler()
    library.addHandler(handler)
    try:
        ran = threading.Event()

        def explode() -> None:
            raise ValueError("a scheduled callback")

        _scheduler.call_later(0.0, explode)
        _scheduler.call_later(0.0, ran.set)
        assert ran.wait(TIMEOUT)  # the scheduler thread went on

        failing = iter([True, False])

        def poll(descriptors: list[Any]) -> None:
            if next(failing, False):
                raise ValueError("poll")
            for descriptor in descriptors:
                descriptor.yield_result()

        policy = ExceptionRetryPolicy(max_attempts=3, sleep=0.001)
        with Executors.sync().with_poll(
            poll, poll_retry_policy=policy, default_interval=0.001
        ) as executor:
            assert executor.submit(abs, -4).result(timeout=TIMEOUT) == 4
    finally:
        library.removeHandler(handler)


# -- threads that cannot be started -------------------------------------------------


class _NoThreads:
    """Patch ``threading.Thread.start`` to raise as an exhausted system does, for
    the threads whose name starts with ``prefix``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, prefix: str) -> None:
        self.refusing = True
        start = threading.Thread.start

        def refusing_start(thread: threading.Thread) -> None:
            if self.refusing and thread.name.startswith(prefix):
                raise RuntimeError("can't start new thread")
            start(thread)

        monkeypatch.setattr(threading.Thread, "start", refusing_start)


def test_a_poll_thread_that_cannot_start_fails_the_submit_and_the_next_retries(
    monkeypatch,
):
    no_threads = _NoThreads(monkeypatch, "fluent-executors-poll")

    def poll(descriptors: list[Any]) -> None:
        for descriptor in descriptors:
            descriptor.yield_result(descriptor.result)

    with Executors.sync().with_poll(poll) as executor:
        with pytest.raises(RuntimeError, match="can't start new thread"):
            executor.submit(lambda: 1)
        assert executor.stats().submitted == 0
        no_threads.refusing = False
        assert executor.submit(lambda: 2).result(TIMEOUT) == 2


def test_a_scheduler_thread_that_cannot_start_fails_the_future_and_is_retried(
    monkeypatch,
):
    no_threads = _NoThreads(monkeypatch, _scheduler.THREAD_NAME)
    source: Future[int] = Future()
    ran: list[int] = []
    with pytest.raises(RuntimeError, match="can't start new thread"):
        _scheduler.call_later(0.0, lambda: ran.append(1))
    assert _scheduler.counts()[0] == 0  # not pending

    with Executors.sync().with_retry(sleep=0.001, max_attempts=2) as executor:
        attempts: list[int] = []

        def fail() -> None:
            attempts.append(1)
            raise ValueError("attempt")

        error = executor.submit(fail).exception(TIMEOUT)
        assert isinstance(error, RuntimeError)
        assert attempts == [1]

        no_threads.refusing = False
        done = threading.Event()
        _scheduler.call_later(0.0, done.set)
        assert done.wait(TIMEOUT)
        assert ran == []  # the refused callback never runs
        attempts.clear()
        assert isinstance(executor.submit(fail).exception(TIMEOUT), ValueError)
        assert attempts == [1, 1]
    source.cancel()


@pytest.mark.parametrize("own_timeout", [False, True])
def test_a_timeout_whose_scheduler_cannot_start_fails_its_future(
    monkeypatch, own_timeout
):
    no_threads = _NoThreads(monkeypatch, _scheduler.THREAD_NAME)
    gate = threading.Event()
    with Executors.thread_pool(max_workers=1).with_timeout(5.0) as executor:
        running = executor.submit(gate.wait, TIMEOUT)
        if own_timeout:
            future = executor.submit_timeout(3.0, str, "queued")
        else:
            future = executor.submit(str, "queued")
        assert isinstance(future.exception(TIMEOUT), RuntimeError)
        no_threads.refusing = False
        gate.set()
        assert isinstance(running.exception(TIMEOUT), RuntimeError)
        assert executor.submit(str, "next").result(TIMEOUT) == "next"


def test_a_queue_whose_timer_cannot_start_fails_its_queued_futures(monkeypatch, caplog):
    # A throttle whose count reads 0 re-reads it on a timer; with no thread for
    # that timer, its queued future would wait for ever. It fails instead (what a
    # thread that cannot start would have run fails), and the next submit works.
    count = [1]
    gate = threading.Event()
    with Executors.thread_pool(max_workers=2).with_throttle(
        lambda: count[0]
    ) as executor:
        running = executor.submit(gate.wait, TIMEOUT)
        queued = executor.submit(str, "queued")
        for thread in threading.enumerate():  # no scheduler thread to reuse
            if thread.name.startswith(_scheduler.THREAD_NAME):
                thread.join(TIMEOUT)
        no_threads = _NoThreads(monkeypatch, _scheduler.THREAD_NAME)
        count[0] = 0
        gate.set()

        assert isinstance(queued.exception(TIMEOUT), RuntimeError)
        assert running.result(TIMEOUT) is True
        assert executor.stats().queued == 0
        assert "could not wait for room" in caplog.text
        no_threads.refusing = False
        count[0] = 1
        assert executor.submit(str, "next").result(TIMEOUT) == "next"


def test_scheduler_workers_that_cannot_start_leave_their_work_to_the_scheduler(
    monkeypatch,
):
    _NoThreads(monkeypatch, _scheduler.WORKER_THREAD_NAME)
    with Executors.sync().with_retry(sleep=0.001, max_attempts=2) as executor:
        attempts: list[int] = []

        def fail() -> None:
            attempts.append(1)
            raise ValueError("attempt")

        assert isinstance(executor.submit(fail).exception(TIMEOUT), ValueError)
    assert attempts == [1, 1]


def test_a_pool_worker_that_cannot_start_fails_the_submit_and_the_next_retries(
    monkeypatch,
):
    no_threads = _NoThreads(monkeypatch, "fluent-executors-default")
    ran: list[int] = []
    with Executors.thread_pool(max_workers=2) as pool:
        with pytest.raises(RuntimeError, match="can't start new thread"):
            pool.submit(ran.append, 1)
        assert pool.stats().submitted == 0
        no_threads.refusing = False
        assert pool.submit(ran.append, 2).result(TIMEOUT) is None
        no_threads.refusing = True  # one worker alive: it runs the next one
        assert pool.submit(ran.append, 3).result(TIMEOUT) is None
    assert ran == [2, 3]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([True, False]), min_size=1, max_size=6))
def test_a_throttle_whose_delegate_cannot_start_threads_loses_no_future(refusals):
    # Whatever the pool refuses, each future handed out resolves, and the throttle's
    # queue empties.
    answers = iter(refusals)
    start = threading.Thread.start

    def flaky_start(thread: threading.Thread) -> None:
        if thread.name.startswith("fluent-executors-flaky") and next(answers, False):
            raise RuntimeError("can't start new thread")
        start(thread)

    threading.Thread.start = flaky_start  # type: ignore[method-assign]
    try:
        pool = Executors.thread_pool(max_workers=2, name="flaky")
        with pool.with_throttle(1) as executor:
            futures = []
            for index in range(len(refusals)):
                with contextlib.suppress(RuntimeError):
                    futures.append(executor.submit(lambda i=index: i))
            _, pending = wait(futures, timeout=TIMEOUT)
            assert not pending
    finally:
        threading.Thread.start = start  # type: ignore[method-assign]
