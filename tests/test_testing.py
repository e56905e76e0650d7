"""fluent_executors.testing: the manual executor, the virtual clock and the pytest
plugin's fixtures (see docs/testing.rst)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from concurrent.futures import CancelledError, Future
from pathlib import Path
from typing import Any

import pytest

from _fluent_executors import clock as _clock
from fluent_executors import Executors, f_timeout
from fluent_executors.retry import ExceptionRetryPolicy
from fluent_executors.testing import ManualExecutor, VirtualClock, virtual_time


def test_sixty_seconds_of_backoff_run_in_under_a_second() -> None:
    policy = ExceptionRetryPolicy(
        max_attempts=10, sleep=20.0, exponent=1.0, max_sleep=100.0, jitter=False
    )
    attempts: list[float] = []

    def flaky() -> str:
        attempts.append(_clock.monotonic())
        if len(attempts) < 4:
            raise OSError("not yet")
        return "done"

    started = time.perf_counter()
    with virtual_time() as clock:
        start = clock.monotonic()
        future = Executors.sync().with_retry(policy).submit(flaky)
        clock.advance(59.9)
        assert not future.done()
        assert len(attempts) == 3
        clock.advance(0.1)
        assert future.result(timeout=0) == "done"
    elapsed = time.perf_counter() - started
    assert [t - start for t in attempts] == pytest.approx([0.0, 20.0, 40.0, 60.0])
    assert elapsed < 1.0


def test_a_poll_every_five_seconds_follows_the_virtual_clock() -> None:
    polls: list[float] = []

    def poll(descriptors: list[Any]) -> float:
        polls.append(_clock.monotonic())
        if len(polls) == 4:
            for descriptor in descriptors:
                descriptor.yield_result(descriptor.result * 2)
        return 5.0

    with virtual_time() as clock:
        start = clock.monotonic()
        with Executors.sync().with_poll(poll) as executor:
            future = executor.submit(lambda: 21)
            clock.advance(14.0)
            assert not future.done()
            clock.advance(1.0)
            assert future.result(timeout=0) == 42
    assert [t - start for t in polls] == pytest.approx([0.0, 5.0, 10.0, 15.0])


def test_timeouts_fire_at_their_virtual_deadline() -> None:
    with virtual_time() as clock:
        future = Executors.with_timeout(ManualExecutor(), 30.0).submit(lambda: 1)
        clock.advance(29.0)
        assert not future.done()
        clock.advance(1.0)
        assert future.cancelled()
        timed = f_timeout(Future(), 600.0)
        clock.advance(600.0)
        with pytest.raises(CancelledError):
            timed.result(timeout=0)


def test_a_rate_limit_passes_queued_calls_on_as_the_clock_moves() -> None:
    delegate = ManualExecutor(done_after=0)
    with virtual_time() as clock:
        start = clock.monotonic()
        executor = Executors.with_rate_limit(delegate, 2, period=10.0)
        futures = [executor.submit(lambda: None) for _ in range(5)]
        assert len(delegate.calls) == 2
        clock.advance(10.0)
        assert len(delegate.calls) == 4
        clock.advance(10.0)
        assert all(f.done() for f in futures)
    assert [t - start for t in delegate.submit_times] == pytest.approx(
        [0.0, 0.0, 10.0, 10.0, 20.0]
    )


def test_the_clock_never_goes_back_after_the_block() -> None:
    with virtual_time() as clock:
        clock.advance(1000.0)
        reached = clock.monotonic()
    assert _clock.monotonic() >= reached


def test_bad_arguments_and_nesting_are_refused() -> None:
    with virtual_time() as clock:
        with pytest.raises(ValueError, match="seconds"):
            clock.advance(-1.0)
        with pytest.raises(ValueError, match="seconds"):
            clock.advance(float("inf"))
        with pytest.raises(ValueError, match="seconds must be a number a float"):
            clock.advance(10**400)
        with pytest.raises(TypeError, match="seconds"):
            clock.advance("1")  # type: ignore[arg-type]
        with pytest.raises(RuntimeError, match="already installed"), virtual_time():
            pass
    with pytest.raises(ValueError, match="done_after"):
        ManualExecutor(done_after=-1)


def test_the_virtual_clock_fixture(virtual_clock: VirtualClock) -> None:
    future = f_timeout(Future(), 5.0)
    virtual_clock.advance(5.0)
    assert future.cancelled()


def test_the_manual_executor_runs_nothing_until_told() -> None:
    executor = ManualExecutor()
    future = executor.submit(lambda x: x + 1, 1)
    assert not future.done()
    assert executor.arguments == [(1,)]
    executor.finish(0)
    assert future.result(timeout=0) == 2
    executor.fail_submits = 1
    with pytest.raises(OSError, match="refuses"):
        executor.submit(lambda: None)
    executor.shutdown(wait=False)
    assert executor.shutdowns == [(False, False)]


def test_the_plugin_fails_a_test_that_leaks_a_poll_thread(tmp_path: Path) -> None:
    test_file = tmp_path / "test_leak.py"
    test_file.write_text(
        textwrap.dedent(
            """
            import pytest
            import fluent_executors.pytest_plugin
            from fluent_executors import Executors

            fluent_executors.pytest_plugin.JOIN_TIMEOUT = 0.2
            LEAKED = []

            @pytest.mark.usefixtures("no_leaked_threads")
            def test_leaks():
                executor = Executors.sync().with_poll(lambda ds: 0.01)
                executor.submit(lambda: 1)  # never resolved, never shut down
                LEAKED.append(executor)

            @pytest.mark.usefixtures("no_leaked_threads")
            def test_clean():
                with Executors.sync().with_poll(lambda ds: 0.01):
                    pass
            """
        )
    )
    src = Path(__file__).parent.parent / "src"
    # Installed, the package's entry point registers the plugin; from a source
    # tree it is not installed: register it as our own conftest.py does.
    (tmp_path / "conftest.py").write_text(
        (Path(__file__).parent / "conftest.py").read_text()
    )
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    result = subprocess.run(
        [*command, str(test_file)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(src), "PATH": ""},
        timeout=60,
        check=False,
    )
    # test_leaks passes, then its teardown errors; test_clean passes.
    assert "2 passed, 1 error" in result.stdout, result.stdout + result.stderr
    assert "ERROR test_leak.py::test_leaks" in result.stdout
    assert "library threads left behind" in result.stdout
