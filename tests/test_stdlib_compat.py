"""What the library reads of CPython beyond its API, and the portable mode that
reads none of it (docs/contributing.rst, "The portable mode")."""

from __future__ import annotations

import sys

import pytest
from test_init import run_python

from _fluent_executors import stdlib_compat as _stdlib_compat

FLAGS = (
    "from _fluent_executors import stdlib_compat as c; "
    "print(c.PORTABLE, c.LOCK_FREE, c.OWN_POOL_ITEMS)"
)


def test_the_switch_selects_the_portable_mode() -> None:
    assert run_python(FLAGS, FLUENT_EXECUTORS_PORTABLE="1") == "True False False"


def test_without_the_switch_a_known_cpython_with_a_gil_takes_the_fast_paths() -> None:
    known = (3, 10) <= sys.version_info[:2] <= (3, 15)
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    if not (known and gil and sys.implementation.name == "cpython"):
        pytest.skip("not a Python whose private fields the library knows")
    assert run_python(FLAGS, FLUENT_EXECUTORS_PORTABLE="0") == "False True True"


def test_in_the_portable_mode_the_thread_pool_follows_the_standard_future() -> None:
    code = (
        "import threading\n"
        "from fluent_executors import Executors\n"
        "gate = threading.Event()\n"
        "with Executors.thread_pool(max_workers=1) as pool:\n"
        "    pool.submit(gate.wait)\n"
        "    future = pool.submit(pow, 2, 5)  # queued behind the gate\n"
        "    followed = type(future._upstream).__name__\n"
        "    gate.set()\n"
        "    print(future.result(10), followed)\n"
    )
    assert run_python(code, FLUENT_EXECUTORS_PORTABLE="1") == "32 Future"


def test_every_private_name_of_concurrent_futures_is_read_here_only() -> None:
    # The rest of the package imports them from _stdlib_compat (tests/test_pools.py
    # and tests/test_future.py check the fields the fast paths read on objects).
    from pathlib import Path

    import fluent_executors

    src = Path(fluent_executors.__file__).parent.parent
    readers = sorted(
        str(path.relative_to(src))
        for path in src.glob("*fluent_executors/**/*.py")
        if "concurrent.futures._base" in path.read_text()
    )
    assert readers == ["_fluent_executors/stdlib_compat.py"]
    assert _stdlib_compat.FINISHED == "FINISHED"


def test_in_the_portable_mode_a_proxy_future_is_a_standard_one_underneath() -> None:
    # A standard Condition over the future's lock and a list of waiters in place
    # of the light fields; wait(), as_completed(), result() with a timeout and
    # cancel() work on them.
    code = (
        "import threading\n"
        "from concurrent.futures import TimeoutError, as_completed, wait\n"
        "from fluent_executors import Executors, ProxyFuture\n"
        "from _fluent_executors import stdlib_compat as _stdlib_compat\n"
        "future = ProxyFuture()\n"
        "print(_stdlib_compat.LIGHT_FUTURES, type(future._condition).__name__,\n"
        "      type(future._waiters).__name__, future._made_condition is not None)\n"
        "try:\n"
        "    future.result(timeout=0.01)\n"
        "except TimeoutError:\n"
        "    print('timed out')\n"
        "gate = threading.Event()\n"
        "with Executors.thread_pool(max_workers=1).with_map(str) as pool:\n"
        "    blocked = pool.submit(gate.wait, 30)\n"
        "    queued = [pool.submit(pow, 2, n) for n in range(3)]\n"
        "    print(queued[2].cancel(), queued[2].cancelled(), blocked.cancel())\n"
        "    done, pending = wait(queued, timeout=0.01)\n"
        "    print(sorted(f.cancelled() for f in done), len(pending))\n"
        "    threading.Timer(0.05, gate.set).start()\n"
        "    finished = [f for f in as_completed(queued, timeout=30)]\n"
        "    print(blocked.result(timeout=30), queued[1].result(timeout=30),\n"
        "          len(finished), type(queued[0]._condition).__name__)\n"
    )
    assert run_python(code, FLUENT_EXECUTORS_PORTABLE="1").splitlines() == [
        "False Condition list True",  # made when first asked for
        "timed out",
        "True True False",
        "[True] 2",
        "True 2 3 Condition",
    ]


def test_a_done_standard_future_reads_alike_in_either_mode() -> None:
    # Read without its lock where LIGHT_FUTURES, else through its methods: a
    # standard future and a subclass of it (always through its methods), each
    # succeeded, failed and cancelled, before and after the waiters were told.
    from concurrent.futures import Future

    class Subclass(Future[int]):
        pass

    error = ValueError("boom")
    for make in (Future, Subclass):
        succeeded, failed, cancelled, notified = make(), make(), make(), make()
        succeeded.set_result(1)
        failed.set_exception(error)
        assert cancelled.cancel()  # CANCELLED
        assert notified.cancel()
        assert not notified.set_running_or_notify_cancel()  # CANCELLED_AND_NOTIFIED
        assert _stdlib_compat.done_outcome(succeeded) == (False, None, 1)
        assert _stdlib_compat.done_outcome(failed) == (False, error, None)
        assert _stdlib_compat.done_outcome(cancelled) == (True, None, None)
        assert _stdlib_compat.done_outcome(notified) == (True, None, None)
        assert _stdlib_compat.done_failure(succeeded) == (False, None)
        assert _stdlib_compat.done_failure(failed) == (False, error)
        assert _stdlib_compat.done_failure(notified) == (True, None)


def test_nox_runs_the_portable_mode_on_the_newest_python_the_library_knows() -> None:
    # Where the portable mode is not the default: on a newer Python the tests
    # session runs in it already.
    import ast
    from pathlib import Path

    noxfile = Path(__file__).resolve().parents[1] / "noxfile.py"
    (value,) = [
        node.value
        for node in ast.parse(noxfile.read_text()).body
        if isinstance(node, ast.Assign)
        and ast.unparse(node.targets[0]) == "PORTABLE_PYTHON"
    ]
    newest = _stdlib_compat.KNOWN_VERSIONS[1]
    assert ast.literal_eval(value) == f"{newest[0]}.{newest[1]}"
