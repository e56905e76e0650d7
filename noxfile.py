"""Sessions: tests, lint, typecheck, docs, demo, bench. ``nox -l`` lists them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import nox

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]

nox.options.sessions = ["tests", "lint", "typecheck", "docs"]
# A Python that is not installed is skipped, also on CI.
nox.options.error_on_missing_interpreters = False
nox.options.reuse_existing_virtualenvs = True


def _expose_pyenv_pythons() -> None:
    """Put pyenv's installed Pythons on PATH, so sessions find every one of them.

    pyenv's shims answer only for the versions made global; nox looks interpreters
    up by name (``python3.12``), so it would skip the others.
    """
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"), "versions")
    if not versions.is_dir():
        return
    found = []
    for minor in PYTHONS:
        builds = [
            path
            for path in versions.glob(f"{minor}.*")
            if re.fullmatch(rf"{re.escape(minor)}\.\d+", path.name)
            and (path / "bin" / f"python{minor}").exists()
        ]
        if builds:
            newest = max(builds, key=lambda p: int(p.name.rsplit(".", 1)[1]))
            found.append(str(newest / "bin"))
    os.environ["PATH"] = os.pathsep.join([*found, os.environ.get("PATH", "")])


_expose_pyenv_pythons()


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Run the test suite (pytest and hypothesis)."""
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict and pyright on src/ and docs/examples/."""
    session.install("-e", ".[test]", "mypy", "pyright", "types-requests")
    session.run("mypy", "--strict", "src", "docs/examples")
    session.run("pyright", "src", "docs/examples")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the HTML documentation with Sphinx and run its doctests (-W: warnings
    are errors)."""
    session.install(".[docs]")
    session.run(
        "sphinx-build", "-W", "--keep-going", "-b", "html", "docs", "docs/_build/html"
    )
    session.run("sphinx-build", "-W", "-b", "doctest", "docs", "docs/_build/doctest")


@nox.session
def demo(session: nox.Session) -> None:
    """Run the remote-task demo, docs/examples/publish.py (nox -s demo -- --help)."""
    session.install(".[demo]")
    session.run("python", "docs/examples/publish.py", *session.posargs)
