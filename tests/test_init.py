"""The package's namespace: ``import fluent_executors`` imports the facade only, and
every public name is there on first use, from its module (PEP 562)."""

from __future__ import annotations

import ast
import compileall
import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fluent_executors

INIT = Path(fluent_executors.__file__)


def type_checking_imports() -> dict[str, str]:
    """The names that ``__init__``'s ``TYPE_CHECKING`` block imports, and from
    which module, each as ``X as X`` (how a typed package re-exports it)."""
    tree = ast.parse(INIT.read_text())
    (block,) = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    found: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom)
        for alias in node.names:
            assert alias.asname == alias.name
            found[alias.name] = "." * node.level + str(node.module)
    return found


def test_all_is_every_name_type_checkers_see_once() -> None:
    names = type_checking_imports()
    assert fluent_executors.__all__ == sorted([*names, "Executors", "__version__"])


@pytest.mark.parametrize("name", sorted(fluent_executors.__all__))
def test_every_public_name_is_there_and_from_its_module(name: str) -> None:
    value = getattr(fluent_executors, name)
    module = type_checking_imports().get(name)
    if module is not None:
        defined = importlib.import_module(module, "fluent_executors")
        assert value is getattr(defined, name)
    assert name in dir(fluent_executors)


def test_an_unknown_name_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'PolExecutor'"):
        fluent_executors.PolExecutor  # noqa: B018
    with pytest.raises(ImportError):
        from fluent_executors import PolExecutor  # type: ignore[attr-defined]  # noqa: F401


def run_python(code: str, **environment: str) -> str:
    """What ``code`` prints, run by a new interpreter with ``environment`` added to
    this one's."""
    completed = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, **environment},
    )
    return completed.stdout.strip()


# Modules that take long to import, which the library imports only where used:
# each is named by the import-time promises below, relative to what ``import
# concurrent.futures`` imports on the Python at hand (3.14's, through logging,
# imports dataclasses and inspect itself).
HEAVY_MODULES = ("asyncio", "multiprocessing", "dataclasses", "inspect")


def test_every_public_name_is_found_without_the_source(tmp_path: Path) -> None:
    # An install of compiled files only (a PyInstaller bundle, a wheel of .pyc
    # files): __getattr__ reads the TYPE_CHECKING imports from the compiled code.
    for package in ("fluent_executors", "_fluent_executors"):
        source = Path(importlib.import_module(package).__file__ or "").parent
        shutil.copytree(source, tmp_path / package)
    compileall.compile_dir(tmp_path, legacy=True, quiet=1)  # x.pyc beside x.py
    for path in (tmp_path / "fluent_executors").rglob("*.py"):
        path.unlink()
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r}); "
        "from fluent_executors import PollExecutor, retry_after, FluentExecutor; "
        "import fluent_executors as fe; "
        "print(fe.__file__.endswith('.pyc'), "
        "fe.__spec__.loader.get_source(fe.__name__), PollExecutor.__name__, "
        "sorted(fe._public_modules().items()))"
    )
    expected = f"True None PollExecutor {sorted(type_checking_imports().items())}"
    assert run_python(code) == expected


def test_importing_the_package_imports_the_facade_only() -> None:
    code = (
        "import sys, concurrent.futures; before = set(sys.modules); "
        "import fluent_executors; "
        "print(sorted(m for m in set(sys.modules) - before if 'fluent_executors' "
        f"in m or m in {HEAVY_MODULES!r}))"
    )
    assert run_python(code) == (
        "['_fluent_executors', '_fluent_executors.fluent', "
        "'_fluent_executors.public', 'fluent_executors', "
        "'fluent_executors.executors']"
    )


def test_the_stats_snapshots_import_dataclasses_when_first_asked_for() -> None:
    code = (
        "import sys, concurrent.futures; standard = set(sys.modules); "
        "import fluent_executors as fe; "
        "before = {'dataclasses', 'inspect'} & set(sys.modules) - standard; "
        "stats = fe.Executors.sync().stats(); "
        "print(sorted(before), type(stats) is fe.ExecutorStats, "
        "'dataclasses' in sys.modules)"
    )
    assert run_python(code) == "[] True True"


def test_a_facade_method_imports_the_module_of_the_executor_it_builds() -> None:
    code = (
        "import sys; from fluent_executors import Executors; "
        "pool = Executors.sync(); "
        "wrapped = Executors.with_retry(pool); "
        "print(type(pool).__name__, type(wrapped).__name__, "
        "'fluent_executors.retry' in sys.modules, "
        "'fluent_executors.poll' in sys.modules, 'asyncio' in sys.modules)"
    )
    assert run_python(code) == "SyncExecutor RetryExecutor True False False"


def test_star_import_gives_every_public_name() -> None:
    code = (
        "from fluent_executors import *; import fluent_executors as fe; "
        "print(all(globals()[n] is getattr(fe, n) for n in fe.__all__))"
    )
    assert run_python(code) == "True"


def test_a_submodule_is_an_attribute_of_the_package_once_looked_up() -> None:
    code = (
        "import fluent_executors as fe; "
        "print(fe.futures.f_map.__name__, fe.poll.PollExecutor.__name__, "
        "fe.retry.RetryPolicy.__name__, hasattr(fe, 'no_such_module'), "
        "hasattr(fe, '_proxy'))"
    )
    assert run_python(code) == "f_map PollExecutor RetryPolicy False False"


def test_the_version_is_the_changelogs_top_section_and_newest_versionadded() -> None:
    """``__version__`` is the next release: the top section of CHANGELOG.rst; no
    ``versionadded`` marker names a later one or 0.1.0, the first release; and the
    install instructions name its wheel."""
    root = Path(__file__).resolve().parents[1]
    changelog = (root / "CHANGELOG.rst").read_text()
    top = re.search(r"^(\S+) - .+\n-{3,}$", changelog, re.MULTILINE)
    assert top is not None
    assert top.group(1) == fluent_executors.__version__

    def release(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split("."))

    pages = [*root.glob("src/**/*.py"), *root.glob("docs/**/*.rst")]
    markers = {
        marker
        for page in pages
        for marker in re.findall(r"versionadded:: (\S+)", page.read_text())
    }
    assert markers
    wheel = f"fluent_executors-{fluent_executors.__version__}-py3-none-any.whl"
    for page in ("README.rst", "docs/index.rst"):  # how to install a built wheel
        assert wheel in (root / page).read_text(), page
    assert all(
        release("0.1.0") < release(marker) <= release(fluent_executors.__version__)
        for marker in markers
    ), markers
