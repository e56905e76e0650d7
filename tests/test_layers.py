"""The library's modules import downward only (the sketches at the top of
``fluent_executors/__init__.py`` and ``_fluent_executors/__init__.py``): no import
cycle, nothing below the facade reaches up to it, and the private package never
imports a public module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import fluent_executors

SRC = Path(fluent_executors.__file__).parent.parent
PUBLIC = SRC / "fluent_executors"
PRIVATE = SRC / "_fluent_executors"
LIBRARY = ("fluent_executors", "_fluent_executors")


def module_name(path: Path) -> str:
    """``_fluent_executors.poll.core`` for ``_fluent_executors/poll/core.py``; a
    package's ``__init__.py`` is the package."""
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, *, deferred: bool) -> set[str]:
    """The library's modules that ``path`` imports, by their full names: at module
    level (class bodies and every branch of an ``if``, ``try`` or ``with`` too),
    or (with ``deferred``) anywhere, inside functions too. The body of ``if
    TYPE_CHECKING:``, which never runs, is left out (its ``else`` is not)."""
    tree = ast.parse(path.read_text())
    name = module_name(path).split(".")
    package = name if path.name == "__init__.py" else name[:-1]
    found: set[str] = set()

    def add(module: str, names: list[str]) -> None:
        if module.split(".")[0] not in LIBRARY:
            return
        for alias in names or [""]:
            target = SRC.joinpath(*module.split("."), alias)
            if alias and (target.with_suffix(".py").exists() or target.is_dir()):
                found.add(f"{module}.{alias}")  # from _fluent_executors import clock
            else:
                found.add(module)

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and ast.unparse(node.test) in (
                "TYPE_CHECKING",
                "typing.TYPE_CHECKING",
            ):
                visit(node.orelse)
                continue
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                add(module, [alias.name for alias in node.names])
            if isinstance(node, ast.Import):
                for alias in node.names:
                    add(alias.name, [])
            if not deferred and isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef)
            ):
                continue  # runs when called
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    visit([child])
                elif isinstance(child, (ast.excepthandler, ast.match_case)):
                    visit(child.body)

    visit(tree.body)
    return found


def unit(package: Path, module: str) -> str:
    """The node of ``package``'s graph that ``module`` belongs to: its module or
    subpackage (``poll`` for ``_fluent_executors.poll.core``), ``__init__`` for the
    package itself; another package is one node, its name."""
    parts = module.split(".")
    if parts[0] != package.name:
        return parts[0]
    return parts[1] if len(parts) > 1 else "__init__"


def graph(package: Path, *, deferred: bool) -> dict[str, set[str]]:
    """``package``'s modules and what each imports; a subpackage (``poll``, ``aio``,
    ``futures``) is one of them, importing what its modules import from outside
    it."""
    edges: dict[str, set[str]] = {}
    for path in [*package.glob("*.py"), *package.glob("*/*.py")]:
        module = unit(package, module_name(path))
        targets = {unit(package, name) for name in imports(path, deferred=deferred)}
        edges.setdefault(module, set()).update(targets - {module})
    return edges


def test_the_private_package_never_imports_a_public_module_but_one_reach() -> None:
    # At module level never; in a function, only FluentExecutor's chain methods
    # and bind (the one reach upward, named in the sketch of the public package),
    # which import the wrapper modules they build, and the bind module; and the
    # async poll driver, which opens the SQLite store of a store= path.
    level = levels(PUBLIC)
    wrappers = [m for m, at in level.items() if at >= level["retry"]]  # and below
    reach = {f"fluent_executors.{module}" for module in [*wrappers, "bind"]}
    for path in PRIVATE.rglob("*.py"):
        public = {m for m in imports(path, deferred=True) if m.startswith("fluent_")}
        if path == PRIVATE / "fluent.py":
            assert public <= reach, public - reach
            assert not imports(path, deferred=False) & reach
        elif path == PRIVATE / "aio" / "driver.py":  # a store= path: SQLiteStore
            assert public <= {"fluent_executors.stores"}, public
            assert not imports(path, deferred=False) & public
        else:
            assert not public, path


def test_the_public_package_holds_public_modules_only() -> None:
    # What help(fluent_executors) lists as its contents: no private module, and no
    # subpackage (whose private modules help() would list in turn).
    found = sorted(p.name for p in PUBLIC.iterdir() if p.name != "__pycache__")
    assert [name for name in found if name.startswith("_")] == ["__init__.py"]
    assert [name for name in found if not name.endswith((".py", ".typed"))] == []


# The poll package's modules, each importing only from those after it.
POLL_LAYERS = [
    "thread",
    "keeper",
    "driver",
    "reports",
    "descriptor",
    "settings",
    "core",
    "rounds",
]


def test_the_poll_package_imports_downward() -> None:
    poll = PRIVATE / "poll"
    assert {p.stem for p in poll.glob("*.py")} == {*POLL_LAYERS, "__init__"}
    for index, name in enumerate(POLL_LAYERS):
        found = imports(poll / f"{name}.py", deferred=True)
        inner = {
            m.removeprefix("_fluent_executors.poll.")
            for m in found
            if m.startswith("_fluent_executors.poll.")
        }
        assert inner <= set(POLL_LAYERS[index + 1 :]), (name, inner)


# The aio package's modules, each importing only from those after it.
AIO_LAYERS = ["__init__", "facade", "executor", "mapping", "layers", "driver"]


def test_the_aio_package_imports_downward() -> None:
    aio = PRIVATE / "aio"
    assert {p.stem for p in aio.glob("*.py")} == set(AIO_LAYERS)
    for index, name in enumerate(AIO_LAYERS):
        found = imports(aio / f"{name}.py", deferred=True)
        inner = {
            m.removeprefix("_fluent_executors.aio.")
            for m in found
            if m.startswith("_fluent_executors.aio.")
        }
        assert inner <= set(AIO_LAYERS[index + 1 :]), (name, inner)


def test_the_poll_core_does_no_io_starts_no_thread_and_reads_no_clock() -> None:
    # It is told the time, and answers with actions: a thread or an event loop
    # drives it alike.
    banned = {"asyncio", "logging", "socket", "threading", "time", "anyio", "trio"}
    for name in ("core", "rounds"):
        path = PRIVATE / "poll" / f"{name}.py"
        tree = ast.parse(path.read_text())
        stdlib = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {
            node.module.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
        }
        assert not stdlib & banned, (name, stdlib & banned)
        library = {unit(PRIVATE, m) for m in imports(path, deferred=True)}
        assert not library & {"clock", "scheduler", "logging", "callbacks"}, name


@pytest.mark.parametrize("package", [PUBLIC, PRIVATE], ids=lambda p: p.name)
def test_module_level_imports_have_no_cycle(package: Path) -> None:
    edges = graph(package, deferred=False)
    state: dict[str, str] = {}

    def walk(module: str, path: list[str]) -> None:
        if state.get(module) == "done":
            return
        assert state.get(module) != "open", f"import cycle: {' -> '.join(path)}"
        state[module] = "open"
        for target in sorted(edges.get(module, ())):
            walk(target, [*path, target])
        state[module] = "done"

    for module in sorted(edges):
        walk(module, [module])


def sketched_layers(package: Path) -> list[list[str]]:
    """The layers of the sketch atop ``package``'s ``__init__.py``, top first: each
    line that starts a layer names its modules, up to two spaces; lines that go on
    further in are descriptions."""
    import re

    layers = []
    for line in (package / "__init__.py").read_text().splitlines():
        if not line.startswith("#"):
            break  # the sketch is the comment that opens the file
        text = line.removeprefix("#   ")
        if text != line and text[:1] not in ("", " "):
            layers.append(re.split(r"\s{2,}", text, maxsplit=1)[0].split())
    return layers


def levels(package: Path) -> dict[str, int]:
    """Each module of ``package``'s sketch, and the index of its layer (0 at the
    top). The private package is a layer of the public one's sketch, its last; the
    public package is above every layer of the private one."""
    layers = sketched_layers(package)
    level = {m: i for i, layer in enumerate(layers) for m in layer}
    return {"fluent_executors": -1, **level} if package == PRIVATE else level


@pytest.mark.parametrize("package", [PUBLIC, PRIVATE], ids=lambda p: p.name)
def test_the_sketch_lists_every_module_once(package: Path) -> None:
    listed = [module for layer in sketched_layers(package) for module in layer]
    modules = set(graph(package, deferred=False))
    if package == PUBLIC:
        modules.add("_fluent_executors")  # one layer, at the bottom
    else:
        modules.remove("__init__")  # a docstring and the sketch: no layer
    assert sorted(listed) == sorted(modules)


@pytest.mark.parametrize("package", [PUBLIC, PRIVATE], ids=lambda p: p.name)
@pytest.mark.parametrize("deferred", [False, True], ids=["module level", "deferred"])
def test_every_module_imports_from_its_layer_and_those_below_only(
    package: Path, deferred: bool
) -> None:
    # Deferred too: no import statement, even in a function, reaches up the
    # layers of one package (the chain methods' reach is from the private one).
    level = levels(package)
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph(package, deferred=deferred).items()
        for target in targets
        if level[target] < level[module]
    )
    if package == PRIVATE and deferred:  # the reaches, checked above
        upward.remove("fluent -> fluent_executors")
        upward.remove("aio -> fluent_executors")
    assert upward == []


def test_nothing_below_the_facade_imports_it_even_deferred() -> None:
    for module, targets in graph(PUBLIC, deferred=True).items():
        if module != "__init__":
            assert "executors" not in targets, f"{module} reaches up to the facade"


def test_r_is_the_executors_result_type_everywhere() -> None:
    # One type variable R (FluentExecutor's result type), imported from one place;
    # other meanings have names of their own (Mapped, V, ...).
    import importlib
    from typing import TypeVar

    from _fluent_executors import fluent

    for package in (PUBLIC, PRIVATE):
        for path in [*package.glob("*.py"), *package.glob("*/*.py")]:
            module = importlib.import_module(module_name(path))
            value = vars(module).get("R")
            if isinstance(value, TypeVar):
                assert value is fluent.R, module.__name__
