"""The package's modules import downward only (the sketch at the top of
``fluent_executors/__init__.py``): no import cycle, and nothing below the facade
reaches up to it."""

from __future__ import annotations

import ast
from pathlib import Path

import fluent_executors

PACKAGE = Path(fluent_executors.__file__).parent


def imports(path: Path, *, deferred: bool) -> set[str]:
    """The package's modules that ``path`` imports: at module level, or (with
    ``deferred``) anywhere, inside functions too. ``TYPE_CHECKING`` blocks, which
    never run, are left out. A module of a subpackage (``_poll``, ``aio``) is
    named ``_poll.core``; one of the package, ``poll``."""
    tree = ast.parse(path.read_text())
    inside = path.relative_to(PACKAGE).parts[:-1]  # (), ("_poll",) or ("aio",)
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.ImportFrom) and node.level >= 1:
                base = inside[: len(inside) - node.level + 1]
                names = [node.module] if node.module else [a.name for a in node.names]
                for name in names:
                    parts = [*base, *name.split(".")]
                    package = parts[0] in ("_poll", "aio")
                    found.add(".".join(parts[:2] if package else parts[:1]))
            if deferred or isinstance(node, (ast.If, ast.Try)):
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.stmt):
                        visit([child])
                for field in ("body", "orelse", "finalbody", "handlers"):
                    visit(
                        [n for n in getattr(node, field, []) if isinstance(n, ast.stmt)]
                    )

    visit(tree.body)
    return found


def graph(*, deferred: bool) -> dict[str, set[str]]:
    """The package's modules and what each imports; a subpackage (``_poll``,
    ``aio``) is one of them, importing what its modules import from outside it."""
    edges: dict[str, set[str]] = {}
    for path in [*PACKAGE.glob("*.py"), *PACKAGE.glob("*/*.py")]:
        module = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        targets = {name.split(".")[0] for name in imports(path, deferred=deferred)}
        edges.setdefault(module, set()).update(targets - {module})
    return edges


# The poll package's modules, each importing only from those after it.
POLL_LAYERS = [
    "thread",
    "driver",
    "reports",
    "descriptor",
    "settings",
    "core",
    "rounds",
]


def test_the_poll_package_imports_downward_and_never_its_public_module() -> None:
    assert {p.stem for p in PACKAGE.glob("_poll/*.py")} == {*POLL_LAYERS, "__init__"}
    for index, name in enumerate(POLL_LAYERS):
        found = imports(PACKAGE / "_poll" / f"{name}.py", deferred=True)
        inner = {m.removeprefix("_poll.") for m in found if m.startswith("_poll.")}
        assert inner <= set(POLL_LAYERS[index + 1 :]), (name, inner)
        assert "poll" not in found, name  # the drivers' public module is above


# The aio package's modules, each importing only from those after it.
AIO_LAYERS = ["__init__", "_facade", "_executor", "_layers", "_driver"]


def test_the_aio_package_imports_downward() -> None:
    assert {p.stem for p in PACKAGE.glob("aio/*.py")} == set(AIO_LAYERS)
    for index, name in enumerate(AIO_LAYERS):
        found = imports(PACKAGE / "aio" / f"{name}.py", deferred=True)
        inner = {m.removeprefix("aio.") for m in found if m.startswith("aio.")}
        assert inner <= set(AIO_LAYERS[index + 1 :]), (name, inner)


def test_the_poll_core_does_no_io_starts_no_thread_and_reads_no_clock() -> None:
    # It is told the time, and answers with actions: a thread or an event loop
    # drives it alike.
    banned = {"asyncio", "logging", "socket", "threading", "time", "anyio", "trio"}
    for name in ("core", "rounds"):
        path = PACKAGE / "_poll" / f"{name}.py"
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
        library = imports(path, deferred=True)
        assert not library & {"_clock", "_scheduler", "_logging", "_callbacks"}, name


def test_module_level_imports_have_no_cycle() -> None:
    edges = graph(deferred=False)
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


def sketched_layers() -> list[list[str]]:
    """The layers of the sketch atop ``__init__.py``, top first: each line that
    starts a layer names its modules, up to two spaces; lines that go on further
    in are descriptions."""
    import re

    source = (PACKAGE / "__init__.py").read_text()
    sketch = source[: source.index("# Deferred imports")].splitlines()
    layers = []
    for line in sketch[sketch.index("#") + 1 :]:
        text = line.removeprefix("#   ")
        if text != line and text[:1] not in ("", " "):
            layers.append(re.split(r"\s{2,}", text, maxsplit=1)[0].split())
    return layers


def test_the_sketch_lists_every_module_once() -> None:
    listed = [module for layer in sketched_layers() for module in layer]
    assert sorted(listed) == sorted(graph(deferred=False))


def test_every_module_imports_from_its_layer_and_those_below_only() -> None:
    level = {m: i for i, layer in enumerate(sketched_layers()) for m in layer}
    edges = graph(deferred=False)
    upward = [
        f"{module} -> {target}"
        for module, targets in edges.items()
        for target in targets
        if level[target] < level[module]
    ]
    assert upward == []


def test_nothing_imports_upward_even_deferred() -> None:
    # The chain methods reach their wrappers through the registry of executors
    # (_registry), which imports a module by its name: no import statement, even
    # in a function, reaches up the layers.
    level = {m: i for i, layer in enumerate(sketched_layers()) for m in layer}
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph(deferred=True).items()
        for target in targets
        if level[target] < level[module]
    )
    assert upward == []


def test_nothing_below_the_facade_imports_it_even_deferred() -> None:
    for module, targets in graph(deferred=True).items():
        if module != "__init__":
            assert "executors" not in targets, f"{module} reaches up to the facade"


def test_r_is_the_executors_result_type_everywhere() -> None:
    # One type variable R (FluentExecutor's result type), imported from one place;
    # other meanings have names of their own (Mapped, V, ...).
    import importlib
    from typing import TypeVar

    from fluent_executors import _fluent

    for path in [*PACKAGE.glob("*.py"), *PACKAGE.glob("*/*.py")]:
        relative = path.relative_to(PACKAGE).with_suffix("")
        module = importlib.import_module(
            ".".join(["fluent_executors", *relative.parts]).removesuffix(".__init__")
        )
        value = vars(module).get("R")
        if isinstance(value, TypeVar):
            assert value is _fluent.R, module.__name__
