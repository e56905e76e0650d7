"""Check the installed wheel: run by ``nox -s release-check`` in a fresh virtual
environment where only the wheel (and its dependencies) is installed::

    python -W error tests/release/check_wheel.py fluent_executors-X-py3-none-any.whl

Imports the package from the environment (not from the source tree), every name of
its ``__all__`` and every public module; checks that each public module's names are
importable from the package itself (but for ``testing``, ``pytest_plugin`` and
``aio``, namespaces of their own; a module that needs an extra not installed must
fail to import with an error naming the extra), that ``__version__`` is the wheel's
version and the installed distribution's, and that ``py.typed`` is installed in the
package and in the private one beside it (``_fluent_executors``: without it, type
checkers would see the public names it defines as untyped). Exits
with status 1 and says what is wrong if anything is.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.resources
import importlib.util
import pkgutil
import sys
from pathlib import Path

PACKAGE = "fluent_executors"

# Public modules whose names are imported from the module, not from the package:
# the helpers for users' tests, the pytest plugin, the async executors, and the
# store protocol of durable polling (its two stores are in the package too).
OWN_NAMESPACES = {"testing", "pytest_plugin", "aio", "stores"}

# Public modules that need an extra (module: the package it needs, the extra):
# without it, importing one fails with an ImportError that names the extra.
NEEDS_EXTRA = {"aio": ("anyio", "aio")}


def _installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def main(wheel: Path) -> int:
    problems: list[str] = []
    package = importlib.import_module(PACKAGE)
    location = Path(package.__file__ or "").resolve()
    if not location.is_relative_to(Path(sys.prefix).resolve()):
        problems.append(f"{PACKAGE} imported from {location}, not from {sys.prefix}")

    public = list(getattr(package, "__all__", []))
    if not public:
        problems.append(f"{PACKAGE} has no __all__")
    if len(set(public)) != len(public):
        problems.append(f"{PACKAGE}.__all__ has duplicates")
    for name in public:
        namespace: dict[str, object] = {}
        try:
            exec(f"from {PACKAGE} import {name}", namespace)
        except ImportError as error:
            problems.append(f"from {PACKAGE} import {name}: {error}")

    for module_info in pkgutil.iter_modules(package.__path__):
        module_name = f"{PACKAGE}.{module_info.name}"
        if module_info.name == "pytest_plugin" and not _installed("pytest"):
            continue  # loaded by pytest only, which the wheel does not require
        needs = NEEDS_EXTRA.get(module_info.name)
        if needs is not None and not _installed(needs[0]):
            try:
                importlib.import_module(module_name)
            except ImportError as error:
                if f"'{needs[1]}' extra" not in str(error):
                    problems.append(f"import {module_name}: {error} (names no extra)")
            else:
                problems.append(f"import {module_name} worked without {needs[0]}")
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            problems.append(f"import {module_name}: {error}")
            continue
        if module_info.name in OWN_NAMESPACES:
            continue
        for name in getattr(module, "__all__", []):
            if name not in public:
                problems.append(
                    f"{module_name}.{name} is public but not in {PACKAGE}.__all__"
                )

    version = getattr(package, "__version__", None)
    wheel_version = wheel.name.split("-")[1]
    installed_version = importlib.metadata.version("fluent-executors")
    if not version == wheel_version == installed_version:
        problems.append(
            f"versions differ: __version__ {version!r}, wheel {wheel_version!r}, "
            f"installed distribution {installed_version!r}"
        )

    for typed in (PACKAGE, f"_{PACKAGE}"):
        if not importlib.resources.files(typed).joinpath("py.typed").is_file():
            problems.append(f"{typed}/py.typed is not installed")

    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if not problems:
        print(
            f"{PACKAGE} {version} from the wheel: {len(public)} public names and "
            "py.typed: OK"
        )
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: {sys.argv[0]} WHEEL")
    sys.exit(main(Path(sys.argv[1])))
