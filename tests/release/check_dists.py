"""Check what the built sdist and wheel contain, before they are uploaded.

Run by ``nox -s release-check`` from the repository root, after ``python -m build``::

    python tests/release/check_dists.py dist/fluent_executors-X.tar.gz \
        dist/fluent_executors-X-py3-none-any.whl

Checks that both carry the version of ``src/fluent_executors/__init__.py`` (the single
source of the version); that the wheel holds every module of the two packages (the
public ``fluent_executors`` and the private ``_fluent_executors``) and their
``py.typed``, and nothing else but its metadata and licence; that the sdist holds the
sources, tests, docs, benchmarks, licence and changelog, and nothing ignored by git
(build output, caches); and that ``CHANGELOG.rst`` has an entry for the version.
Prints what is wrong and exits with status 1 if anything is.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tarfile
import zipfile
from email.parser import HeaderParser
from pathlib import Path, PurePosixPath

PACKAGE = "fluent_executors"
# The packages the wheel installs: the public one, and its private modules.
PACKAGES = (PACKAGE, f"_{PACKAGE}")
ROOT = Path(__file__).resolve().parents[2]

# What [tool.hatch.build.targets.sdist] includes, plus what hatch always adds.
SDIST_PATHS = {"src", "tests", "docs", "bench", "noxfile.py", "README.rst"}
SDIST_PATHS |= {"CHANGELOG.rst", "LICENSE", "pyproject.toml", "PKG-INFO", ".gitignore"}
SDIST_REQUIRED = [
    "pyproject.toml",
    "PKG-INFO",
    "README.rst",
    "CHANGELOG.rst",
    "LICENSE",
    "noxfile.py",
    f"src/{PACKAGE}/__init__.py",
    *(f"src/{package}/py.typed" for package in PACKAGES),
    "tests/conftest.py",
    "docs/conf.py",
    "docs/index.rst",
]
# Build output and caches: never in a distribution.
JUNK = re.compile(
    r"(^|/)(__pycache__|\.mypy_cache|\.ruff_cache|\.pytest_cache|\.hypothesis|\.nox"
    r"|\.venv|_build|dist|build|[^/]*\.egg-info)(/|$)|\.py[cod]$"
)


def main(sdist: Path, wheel: Path) -> int:
    problems: list[str] = []
    version = source_version()
    print(f"{PACKAGE} {version}: checking {sdist.name} and {wheel.name}")
    problems += check_wheel(wheel, version)
    problems += check_sdist(sdist, version)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if not problems:
        print("sdist and wheel contents: OK")
    return 1 if problems else 0


def source_version() -> str:
    """``__version__`` of ``src/fluent_executors/__init__.py``, read without import."""
    module = ast.parse((ROOT / "src" / PACKAGE / "__init__.py").read_text("utf-8"))
    for node in module.body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["__version__"]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise SystemExit(f"no __version__ = '...' in src/{PACKAGE}/__init__.py")


def package_files() -> list[str]:
    """The packages' files, relative to ``src/``: those git tracks, else all but
    caches."""
    tracked = git_files(*(f"src/{package}" for package in PACKAGES))
    if tracked is not None:
        return [path.removeprefix("src/") for path in tracked]
    return [
        path.relative_to(ROOT / "src").as_posix()
        for package in PACKAGES
        for path in (ROOT / "src" / package).rglob("*")
        if path.is_file() and not JUNK.search(path.as_posix())
    ]


def git_files(*paths: str) -> list[str] | None:
    """The files git tracks under ``paths``, or ``None`` outside a git checkout."""
    try:
        output = subprocess.run(
            ["git", "ls-files", "-z", "--", *paths],
            cwd=ROOT,
            capture_output=True,
            check=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [path for path in output.split("\0") if path]


def check_wheel(wheel: Path, version: str) -> list[str]:
    problems = []
    expected_name = f"{PACKAGE}-{version}-py3-none-any.whl"
    if wheel.name != expected_name:
        problems.append(f"wheel is named {wheel.name}, expected {expected_name}")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        dist_info = f"{PACKAGE}-{version}.dist-info"
        metadata_name = f"{dist_info}/METADATA"
        if metadata_name not in names:
            return [*problems, f"wheel has no {metadata_name}"]
        metadata = archive.read(metadata_name).decode("utf-8")
    problems += check_metadata("wheel METADATA", metadata, version)
    for path in package_files():
        if path not in names:
            problems.append(f"wheel lacks {path}")
    for name in sorted(names):
        top = PurePosixPath(name).parts[0]
        if top not in (*PACKAGES, dist_info):
            problems.append(f"wheel has {name}, outside {PACKAGES} and {dist_info}/")
        elif JUNK.search(name):
            problems.append(f"wheel has build output or cache {name}")
    if f"{dist_info}/licenses/LICENSE" not in names:
        problems.append(f"wheel lacks {dist_info}/licenses/LICENSE")
    return problems


def check_metadata(where: str, text: str, version: str) -> list[str]:
    headers = HeaderParser().parsestr(text)
    expected = {
        "Name": "fluent-executors",
        "Version": version,
        "Requires-Python": ">=3.10",
        "License-Expression": "MIT",
        "Description-Content-Type": "text/x-rst",
    }
    return [
        f"{where}: {field} is {headers.get(field)!r}, expected {value!r}"
        for field, value in expected.items()
        if headers.get(field) != value
    ]


def check_sdist(sdist: Path, version: str) -> list[str]:
    problems = []
    top = f"{PACKAGE}-{version}"
    if sdist.name != f"{top}.tar.gz":
        problems.append(f"sdist is named {sdist.name}, expected {top}.tar.gz")
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if m.isfile()]
        names = set()
        for member in members:
            path = PurePosixPath(member.name)
            if path.parts[0] != top:
                problems.append(f"sdist has {member.name}, outside {top}/")
                continue
            names.add(PurePosixPath(*path.parts[1:]).as_posix())
        changelog = extract_text(archive, f"{top}/CHANGELOG.rst")
        pkg_info = extract_text(archive, f"{top}/PKG-INFO")
    for name in SDIST_REQUIRED:
        if name not in names:
            problems.append(f"sdist lacks {name}")
    tracked = git_files(*sorted(SDIST_PATHS))
    for name in tracked or []:
        if name not in names and name not in SDIST_REQUIRED:
            problems.append(f"sdist lacks {name}, which git tracks")
    for name in sorted(names):
        if PurePosixPath(name).parts[0] not in SDIST_PATHS:
            problems.append(f"sdist has {name}, which is not in its include list")
        elif JUNK.search(name):
            problems.append(f"sdist has build output or cache {name}")
    if pkg_info is not None:
        problems += check_metadata("sdist PKG-INFO", pkg_info, version)
    if changelog is not None:
        problems += check_changelog(changelog, version)
    return problems


def extract_text(archive: tarfile.TarFile, name: str) -> str | None:
    try:
        member = archive.extractfile(name)
    except KeyError:
        return None
    return None if member is None else member.read().decode("utf-8")


def check_changelog(text: str, version: str) -> list[str]:
    """The changelog needs a section ``<version> - <date>`` (or ``- Unreleased``,
    with a warning: fine for a check, not for an upload)."""
    heading = re.compile(rf"^{re.escape(version)} - (.+)\n-{{3,}}$", re.MULTILINE)
    match = heading.search(text)
    if match is None:
        return [f"CHANGELOG.rst has no section '{version} - <date>'"]
    if match.group(1).strip() == "Unreleased":
        print(f"warning: CHANGELOG.rst still calls {version} 'Unreleased'")
    return []


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(f"usage: {sys.argv[0]} SDIST WHEEL")
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
