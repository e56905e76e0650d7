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
    never run, are left out."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    found.add(node.module.split(".")[0])
                else:
                    found.update(alias.name for alias in node.names)
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
    return {
        path.stem: imports(path, deferred=deferred) for path in PACKAGE.glob("*.py")
    }


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
