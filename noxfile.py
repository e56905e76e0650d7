"""Sessions: tests, lint, typecheck, docs, demo, bench. ``nox -l`` lists them."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import nox

PYTHONS = ["3.10", "3.11", "3.12", "3.13", "3.14", "3.15"]

nox.options.sessions = ["tests", "lint", "typecheck", "docs"]
# A Python that is not installed is skipped, also on CI.
nox.options.error_on_missing_interpreters = False
nox.options.reuse_existing_virtualenvs = True
# uv makes and fills a virtual environment in seconds, where venv and pip take about
# twenty (.ci/run installs it); without uv, nox uses virtualenv.
nox.options.default_venv_backend = "uv|virtualenv"


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
    """Run the test suite (pytest and hypothesis), in one process per core, at
    most 4 (pytest-xdist); arguments after ``--`` go to pytest, and ``-- -n 0``
    runs it in one process. Each Python runs ten SIGKILL trials of durable
    polling of its own (tests/test_durable_crash.py; pytest alone runs 50)."""
    session.install("-e", ".[test]")
    session.env["FLUENT_EXECUTORS_CRASH_TRIALS"] = _crash_trials(
        PYTHONS.index(str(session.python))
    )
    session.run("pytest", "--numprocesses=auto", "--maxprocesses=4", *session.posargs)


CRASH_TRIALS_PER_SESSION = 10


def _crash_trials(index: int) -> str:
    """The seeds of the SIGKILL trials of the ``index``-th test session, as
    ``first:stop``: ten of their own, so that one run of every session makes more
    than the 50 that pytest alone makes, and none twice."""
    first = index * CRASH_TRIALS_PER_SESSION
    return f"{first}:{first + CRASH_TRIALS_PER_SESSION}"


# The newest Python whose private fields the library reads (the last of
# KNOWN_VERSIONS in src/_fluent_executors/stdlib_compat.py; tests/test_stdlib_compat.py
# compares them): there the portable mode is not the default, so tests-portable
# tests what the tests session does not. On a newer Python the tests session runs
# in the portable mode already.
PORTABLE_PYTHON = "3.15"


@nox.session(name="tests-portable", python=PORTABLE_PYTHON)
def tests_portable(session: nox.Session) -> None:
    """Run the test suite in the portable mode (FLUENT_EXECUTORS_PORTABLE=1), on
    the newest Python whose private fields the library knows: no
    fast path that reads CPython's private fields, and a lock in every step that
    relies on the GIL, as on a Python the library does not know or a free-threaded
    build (docs/contributing.rst)."""
    session.install("-e", ".[test]")
    session.env["FLUENT_EXECUTORS_PORTABLE"] = "1"
    session.env["FLUENT_EXECUTORS_CRASH_TRIALS"] = _crash_trials(len(PYTHONS))
    session.run("pytest", "--numprocesses=auto", "--maxprocesses=4", *session.posargs)


FLAKE_HUNT_RUNS = 10
FLAKE_HUNT_LOADERS = 2  # CPU-bound processes: a CI machine with two busy cores


@nox.session(name="flake-hunt")
def flake_hunt(session: nox.Session) -> None:
    """Run the suite 10 times in a row, each in a random order with its seed
    printed, while two CPU-bound processes load the machine; stop at the first
    failure (docs/contributing.rst says when to run it). ``nox -s flake-hunt --
    RUNS`` sets the number of runs; arguments after it go to pytest."""
    import random
    import subprocess
    import sys

    session.install("-e", ".[test]")
    runs, options = FLAKE_HUNT_RUNS, list(session.posargs)
    if options and options[0].isdigit():
        runs = int(options.pop(0))
    spin = "while True: pass"
    loaders = [
        subprocess.Popen([sys.executable, "-c", spin])
        for _ in range(FLAKE_HUNT_LOADERS)
    ]
    try:
        for run in range(1, runs + 1):
            seed = random.randrange(2**32)
            session.log(f"run {run} of {runs}: --randomly-seed={seed}")
            session.run(
                "pytest",
                "--numprocesses=auto",
                "--maxprocesses=4",
                f"--randomly-seed={seed}",
                "-q",
                *options,
            )
    finally:
        for loader in loaders:
            loader.kill()
            loader.wait()


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict and pyright on src/, docs/examples/, the typing checks in
    tests/typing/ (see its README.rst); mypy --strict on bench/ too (a
    folder of scripts, checked on its own)."""
    session.install("-e", ".[test]", "mypy", "pyright", "types-requests")
    session.run("mypy", "--strict", "src", "docs/examples", "tests/typing")
    session.run("mypy", "--strict", "bench")
    session.run("pyright", "src", "docs/examples", "tests/typing")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the HTML documentation with Sphinx and run its doctests (-W: warnings
    are errors)."""
    session.install(".[docs]")
    session.run(
        "sphinx-build", "-W", "--keep-going", "-b", "html", "docs", "docs/_build/html"
    )
    missing = _figures_missing(Path("docs"), Path("docs/_build/html"))
    if missing:
        session.error(f"figures missing from the built HTML: {', '.join(missing)}")
    long = _long_pages(Path("docs/_build/html/api"), API_PAGE_WORDS)
    if long:
        session.error(f"API pages over {API_PAGE_WORDS:,} words: {', '.join(long)}")
    session.run("sphinx-build", "-W", "-b", "doctest", "docs", "docs/_build/doctest")


API_PAGE_WORDS = 3_300  # "about 3,000": a page of the API reference a reader takes in


def _long_pages(html: Path, limit: int) -> list[str]:
    """The pages of ``html`` whose main text has more than ``limit`` words."""
    from html.parser import HTMLParser

    class MainText(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.words = 0
            self.depth = 0  # inside <article role="main">, and not in a script

        def handle_starttag(
            self, tag: str, attrs: list[tuple[str, str | None]]
        ) -> None:
            if self.depth or ("role", "main") in attrs:
                self.depth += 1

        def handle_endtag(self, tag: str) -> None:
            self.depth = max(self.depth - 1, 0)

        def handle_data(self, data: str) -> None:
            if self.depth:
                self.words += len(data.split())

    long = []
    for page in sorted(html.glob("*.html")):
        parser = MainText()
        parser.feed(page.read_text())
        if parser.words > limit:
            long.append(f"{page.name} ({parser.words:,})")
    return long


def _figures_missing(source: Path, html: Path) -> list[str]:
    """The figures of ``.. plot:: figures/<name>.py`` directives in ``source`` that
    no page of ``html`` shows as ``_images/<name>.svg``."""
    wanted = {
        name
        for page in source.glob("**/*.rst")
        for name in re.findall(
            r"^\s*\.\. plot:: figures/(\w+)\.py", page.read_text(), re.M
        )
    }
    shown = "".join(page.read_text() for page in html.glob("**/*.html"))
    return sorted(
        name
        for name in wanted
        if f"_images/{name}.svg" not in shown
        or not (html / "_images" / f"{name}.svg").is_file()
    )


@nox.session
def demo(session: nox.Session) -> None:
    """Run the remote-task demo, docs/examples/publish.py (nox -s demo -- --help):
    with the given options, or twice, polling with searches and then with an async
    request per task; then, without options, its async twin on trio
    (docs/examples/aio_publish.py: one httpx.AsyncClient, 500 tasks), and the
    crash-and-resume run (docs/examples/publish_resume.py: the publishing process
    killed part-way, its tasks resumed from an SQLite store in a new one)."""
    session.install(".[demo,aio]", "trio")
    runs = [session.posargs] if session.posargs else [[], ["--poll", "status"]]
    for options in runs:
        session.run("python", "docs/examples/publish.py", *options)
    if not session.posargs:
        session.run("python", "docs/examples/aio_publish.py", "--tasks", "500")
        session.run("python", "docs/examples/publish_resume.py", "--tasks", "500")


@nox.session(name="release-check")
def release_check(session: nox.Session) -> None:
    """Build the sdist and the wheel, check them (twine check --strict, and their
    contents), install the wheel into a fresh virtual environment and import every
    public name from it. Builds in .nox/release-check/tmp, not in dist/."""
    session.install("build", "twine")
    tmp = Path(session.create_tmp()).resolve()
    dist, venv = tmp / "dist", tmp / "wheel-venv"
    for path in (dist, venv):
        shutil.rmtree(path, ignore_errors=True)
    session.run("python", "-m", "build", "--outdir", str(dist), ".")
    sdists, wheels = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        session.error(f"expected one sdist and one wheel in {dist}")
    sdist, wheel = str(sdists[0]), str(wheels[0])
    session.run("twine", "check", "--strict", sdist, wheel)
    session.run("python", "tests/release/check_dists.py", sdist, wheel)
    session.run("python", "-m", "venv", str(venv))
    python = str(venv / ("Scripts" if os.name == "nt" else "bin") / "python")
    session.run(python, "-m", "pip", "install", "--quiet", wheel, external=True)
    check_wheel = str(Path("tests/release/check_wheel.py").resolve())
    session.run(python, "-W", "error", check_wheel, wheel, external=True)


BENCHMARKS = [
    "bench/layers.py",
    "bench/poll_scale.py",
    "bench/poll_batched.py",
    "bench/timeouts.py",
    "bench/combinators.py",
    "bench/import_time.py",
    "bench/memory.py",
    "bench/retry_flaky.py",
    "bench/remote_tasks.py",
    "bench/aio_poll.py",
    "bench/adaptive_rate.py",
    "bench/metrics_overhead.py",
    "bench/store_cost.py",
]
BENCH_OUT = Path("docs/bench")  # the tables and plots docs/performance.rst shows
BENCH_PACKAGES = [
    # The metrics backends, whose cost bench/metrics_overhead.py measures; the
    # other scripts block them, as for a user without them.
    ".[prometheus,otel]",
    "opentelemetry-sdk",
    # What the library succeeds, compared with it (GPL: run, never copied).
    "more-executors==2.11.4",
    # The retry libraries that bench/retry_flaky.py runs in a thread pool.
    "tenacity>=8.2",
    "stamina>=24.2",
    # The plots of bench/report.py.
    "matplotlib>=3.8",
    # bench/aio_poll.py: fluent_executors.aio on asyncio and trio.
    ".[aio]",
    # bench/store_cost.py: PostgresStore (psycopg).
    ".[postgres]",
    "trio>=0.25",
]


@nox.session
def bench(session: nox.Session) -> None:
    """Run every benchmark of bench/ (see docs/performance.rst), beside a bare thread
    pool, more-executors 2.11.4, tenacity and stamina, which are installed here only;
    write their tables, targets and plots into docs/bench/ (bench/report.py). Each
    script checks its targets; the session fails if one is missed.

    ``nox -s bench -- bench/layers.py`` runs only the scripts named (docs/bench/
    keeps the others' files); ``nox -s bench -- --quick`` runs every script with
    small sizes, in seconds, and writes into .nox/bench/tmp/bench instead."""
    session.install(*BENCH_PACKAGES)
    scripts = [arg for arg in session.posargs if arg.endswith(".py")]
    options = [arg for arg in session.posargs if not arg.endswith(".py")]
    out = BENCH_OUT
    if "--quick" in options:
        out = Path(session.create_tmp()) / "bench"
    if not scripts:  # a full run: no file of an earlier run survives
        shutil.rmtree(out, ignore_errors=True)
    missed = []
    for script in scripts or BENCHMARKS:
        try:
            session.run("python", script, "--out", str(out), *options)
        except nox.command.CommandFailed:
            missed.append(script)
    if not scripts and "--quick" not in options:  # a full run: every Python too
        for python in PYTHONS:
            session.notify(f"bench-python-{python}")
    session.run("python", "bench/report.py", str(out))
    if missed:
        session.error(f"targets missed by {', '.join(missed)}")


# The scripts whose targets hold on every Python (the pool, each layer, the chain,
# polling at scale, import time), and their options there: the largest sizes
# only, without the million and more-executors, which the bench session's own
# Python runs.
BENCH_PER_PYTHON = {
    "bench/layers.py": ["--sizes", "100000", "--skip-more-executors"],
    "bench/poll_scale.py": [
        "--sizes",
        "4000,8000,64000",
        "--million",
        "0",
        "--skip-more-executors",
    ],
    "bench/import_time.py": [],
}


@nox.session(name="bench-python", python=PYTHONS)
def bench_python(session: nox.Session) -> None:
    """Check the targets that hold on every Python (BENCH_PER_PYTHON) on this one,
    into docs/bench/python<version>/, which bench/report.py merges into
    docs/bench/targets-by-python.csv; a full ``nox -s bench`` runs it on every
    installed Python. Fails if a target is missed."""
    session.install(".")
    out = BENCH_OUT / f"python{session.python}"
    shutil.rmtree(out, ignore_errors=True)
    missed = []
    for script, options in BENCH_PER_PYTHON.items():
        try:
            session.run("python", script, "--out", str(out), *options)
        except nox.command.CommandFailed:
            missed.append(script)
    session.run("python", "bench/report.py", "--by-python", str(BENCH_OUT))
    if missed:
        session.error(f"targets missed on {session.python} by {', '.join(missed)}")


@nox.session
def compare(session: nox.Session) -> None:
    """Run the same scenarios on more-executors 2.11.4 and on this library, side by
    side, and print where they differ (tests/compare/more_executors_table.py; not
    part of CI). Each difference left is explained in docs/migration.rst."""
    session.install(".", "more-executors==2.11.4")
    session.run("python", "tests/compare/more_executors_table.py")


@nox.session(python=PYTHONS)
def ray(session: nox.Session) -> None:
    """Test RayExecutor against a local Ray instance (tests/test_ray.py).

    Ray's wheel is large, so only this session installs it. Where no wheel of Ray
    fits this Python or platform, the session is skipped and says so.
    """
    session.install("-e", ".[test]")
    try:
        session.install("--only-binary", "ray", "ray>=2.9")
    except nox.command.CommandFailed:
        session.skip(
            f"Ray cannot be installed for Python {session.python} on this platform: "
            "RayExecutor is not tested here"
        )
    # Installed, Ray must import: the tests fail instead of skipping if it does not.
    session.env["FLUENT_EXECUTORS_REQUIRE_RAY"] = "1"
    # In file order: the tests share one local Ray instance, which one of them
    # stops (a module fixture); in a random order the tests after it fail.
    session.run("pytest", "-p", "no:randomly", "tests/test_ray.py", *session.posargs)
