"""The registry of executors (``_fluent_executors.registry``, docs/contributing.rst,
Adding a wrapper): it has every executor class of the package, and what is made
from it (the facade, the chain methods, ``BoundCallable``'s, the public names, the
tests' tables) has each of them, with the class's signature."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
from pathlib import Path
from typing import Any

import contract_chains
import pytest
import test_submit_errors
from wrapper_doubles import EXAMPLES

import _fluent_executors
import fluent_executors
from _fluent_executors.registry import EXECUTORS, WRAPPERS, Row, load
from fluent_executors import BoundCallable, Executors, FluentExecutor

PACKAGE = Path(fluent_executors.__file__).parent
PRIVATE = Path(_fluent_executors.__file__).parent


def executor_classes() -> set[type[Any]]:
    """The classes of the package that derive from ``FluentExecutor`` and have no
    subclass in it: the executors one builds (not their bases)."""
    for package in (fluent_executors, _fluent_executors):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            importlib.import_module(module.name)
    found: set[type[Any]] = set()
    todo = [FluentExecutor]
    while todo:
        for cls in todo.pop().__subclasses__():
            if (
                cls.__module__.partition(".")[0]
                in ("fluent_executors", "_fluent_executors")
                and cls not in found
            ):
                found.add(cls)
                todo.append(cls)
    return {c for c in found if not any(o is not c and issubclass(o, c) for o in found)}


def test_the_registry_has_every_executor_class_once() -> None:
    registered = [load(row) for row in EXECUTORS]
    assert len(registered) == len(set(registered))
    assert set(registered) == executor_classes()
    assert len({row.method for row in EXECUTORS}) == len(EXECUTORS)
    assert len({row.kind for row in EXECUTORS}) == len(EXECUTORS)


@pytest.mark.parametrize("row", EXECUTORS, ids=lambda row: row.method)
def test_each_executor_is_public_and_on_the_facade(row: Row) -> None:
    cls = load(row)
    assert getattr(fluent_executors, row.cls) is cls
    assert row.cls in fluent_executors.__all__
    assert getattr(fluent_executors, row.stats) in (
        fluent_executors.ExecutorStats,
        *fluent_executors.ExecutorStats.__subclasses__(),
        *fluent_executors.QueueStats.__subclasses__(),
    )
    assert callable(getattr(Executors, row.method))
    assert f"``{row.kind}``" in (fluent_executors.ExecutorStats.__doc__ or "")


@pytest.mark.parametrize("row", WRAPPERS, ids=lambda row: row.method)
def test_each_wrapper_has_its_methods_kind_and_stats(row: Row) -> None:
    cls = load(row)
    assert callable(getattr(Executors.sync(), row.method))
    assert hasattr(BoundCallable, row.method) == row.bound
    with EXAMPLES[row.kind](Executors.sync(name="base")) as executor:
        assert type(executor) is cls
        assert executor.name == "base"
        stats = executor.stats()
        assert (stats.kind, type(stats).__name__) == (row.kind, row.stats)


def test_the_tests_tables_have_every_wrapper() -> None:
    # The tables of the tests that run every wrapper: a new wrapper fails here
    # until they have it.
    concurrent = {row.kind for row in WRAPPERS if row.bound}
    assert set(EXAMPLES) == {row.kind for row in WRAPPERS}
    assert concurrent <= set(test_submit_errors.WRAPPERS)
    layers = {layer.name for layer in contract_chains.SINGLE_LAYERS}
    assert {row.method for row in WRAPPERS if row.bound} <= layers
    # ... and the chains of every wrapper at once
    every = {layer.name for layer in contract_chains.EVERY_WRAPPER}
    assert {row.method for row in WRAPPERS if row.bound} <= every
    with test_submit_errors.WRAPPERS["every_wrapper"](Executors.sync()) as chain:
        kinds = {layer.stats().kind for layer in chain._layers()}
    assert concurrent <= kinds
    # ... and the type checkers' checks (tests/typing), for the chain methods, the
    # result types they pass on, and BoundCallable's methods
    typing_checks = Path(__file__).parent / "typing"
    for check, rows in [
        ("check_executors.py", WRAPPERS),
        ("check_result_types.py", WRAPPERS),
        ("check_bind.py", [row for row in WRAPPERS if row.bound]),
    ]:
        text = (typing_checks / check).read_text()
        assert [row.method for row in rows if f".{row.method}(" not in text] == []


@pytest.mark.parametrize("row", WRAPPERS, ids=lambda row: row.method)
def test_the_made_methods_have_the_classs_signature(row: Row) -> None:
    cls = load(row)
    after_delegate = list(inspect.signature(cls).parameters.values())[1:]

    for method, first in (
        (getattr(Executors, row.method), "delegate"),
        (getattr(FluentExecutor, row.method), "self"),
    ):
        signature = inspect.signature(method)
        parameters = list(signature.parameters.values())
        assert parameters[0].name == first
        assert signature.return_annotation is cls
        for made, own in zip(parameters[1:], after_delegate, strict=True):
            if own.name == "name":  # the delegate's name unless given
                assert (made.default, made.annotation) == (None, "str | None")
            else:
                assert made == own
        # What it wraps is a class, as a constructor's is: Sphinx's autodoc, which
        # unwraps it, then documents a method, not an attribute.
        assert inspect.isclass(inspect.unwrap(method))
    bound = inspect.signature(getattr(Executors.sync(), row.method))
    assert list(bound.parameters) == [p.name for p in after_delegate]
    if row.bound and row.keeps_result:  # a bound callable's method: the same
        rewrapping = inspect.signature(getattr(Executors.sync().bind(len), row.method))
        assert list(rewrapping.parameters) == [p.name for p in after_delegate]
        assert rewrapping.return_annotation == "BoundCallable[P, T]"


def type_checking_names(path: Path, cls: str) -> dict[str, ast.AST]:
    """What the ``if TYPE_CHECKING:`` blocks of the class ``cls`` in ``path``
    define for type checkers: each name and its definition."""
    tree = ast.parse(path.read_text())
    body = next(
        n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls
    ).body
    found: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                if isinstance(inner, ast.FunctionDef):
                    found[inner.name] = inner
                elif isinstance(inner, ast.Assign):
                    for target in inner.targets:
                        found[ast.unparse(target)] = inner
    return found


def test_type_checkers_see_every_method_made_at_run_time() -> None:
    facade = type_checking_names(PACKAGE / "executors.py", "Executors")
    assert {row.method for row in EXECUTORS} <= set(facade) | set(vars(Executors))
    for row in WRAPPERS:
        assert ast.unparse(facade[row.method]) == f"{row.method} = {row.cls}"
    chain = type_checking_names(PRIVATE / "fluent.py", "FluentExecutor")
    assert {name for name in chain if name.startswith("with_")} == {
        row.method for row in WRAPPERS
    }
    bound = type_checking_names(PACKAGE / "bind.py", "BoundCallable")
    assert set(bound) == {row.method for row in WRAPPERS if row.bound} - {
        row.method for row in WRAPPERS if not row.keeps_result
    }


def test_the_chain_methods_for_type_checkers_are_written_from_the_classes() -> None:
    # Type checkers cannot derive a chain method from its class; tools/chain_stubs.py
    # writes each from the class's constructor, and _fluent_executors/fluent.py
    # holds what it wrote.
    spec = importlib.util.spec_from_file_location(
        "chain_stubs", Path(__file__).resolve().parents[1] / "tools" / "chain_stubs.py"
    )
    assert spec is not None
    assert spec.loader is not None
    chain_stubs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chain_stubs)
    source = chain_stubs.FLUENT.read_text()

    assert chain_stubs.rewrite(source) == source, "run python tools/chain_stubs.py"
    stubs = type_checking_names(chain_stubs.FLUENT, "FluentExecutor")
    assert {name for name in stubs if name.startswith("with_")} == {
        row.method for row in WRAPPERS
    }
