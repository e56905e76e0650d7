"""What the library reads of CPython beyond its API, and the portable mode that
reads none of it (docs/contributing.rst, "The portable mode")."""

from __future__ import annotations

import sys

import pytest
from test_init import run_python

from fluent_executors import _stdlib_compat

FLAGS = (
    "from fluent_executors import _stdlib_compat as c; "
    "print(c.PORTABLE, c.LOCK_FREE, c.OWN_POOL_ITEMS)"
)


def test_the_switch_selects_the_portable_mode() -> None:
    assert run_python(FLAGS, FLUENT_EXECUTORS_PORTABLE="1") == "True False False"


def test_without_the_switch_a_known_cpython_with_a_gil_takes_the_fast_paths() -> None:
    known = (3, 10) <= sys.version_info[:2] <= (3, 13)
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
    import fluent_executors

    package = fluent_executors.__file__.rsplit("/", 1)[0]
    from pathlib import Path

    readers = sorted(
        str(path.relative_to(package))
        for path in Path(package).rglob("*.py")
        if "concurrent.futures._base" in path.read_text()
    )
    assert readers == ["_stdlib_compat.py"]
    assert _stdlib_compat.FINISHED == "FINISHED"
