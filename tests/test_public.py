"""Public names look public: every class and function a user imports reports a
public module, one that exports it by its name (docs/api/index.rst); ``repr()``,
pickle and ``help()`` name no private module for them."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pydoc
import re
import typing

import pytest

import fluent_executors
from _fluent_executors import public as _public
from fluent_executors import Executors

PACKAGES = [
    "fluent_executors",
    "fluent_executors.futures",
    "fluent_executors.aio",
    "fluent_executors.stores",
]


def _public_objects() -> list[tuple[str, object]]:
    found = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            # (a type alias such as PollFn is no class, though 3.10 says so)
            is_alias = typing.get_origin(obj) is not None
            if (inspect.isclass(obj) and not is_alias) or inspect.isfunction(obj):
                found.append((f"{package}.{name}", obj))
    return found


@pytest.mark.parametrize(
    ("path", "obj"), _public_objects(), ids=[path for path, _ in _public_objects()]
)
def test_a_public_name_reports_a_public_module_that_exports_it(
    path: str, obj: typing.Any
) -> None:
    home = obj.__module__

    assert not any(part.startswith("_") for part in home.split(".")), path
    assert getattr(importlib.import_module(home), obj.__qualname__) is obj, path


def test_every_published_name_is_found_where_it_says() -> None:
    for name in fluent_executors.__all__:  # the deferred ones are published on import
        getattr(fluent_executors, name)

    assert _public.DEFINED_IN
    for path, defined_in in _public.DEFINED_IN.items():
        home, _, name = path.rpartition(".")
        obj = getattr(importlib.import_module(home), name)
        assert obj.__module__ == home
        assert getattr(importlib.import_module(defined_in), name) is obj


def test_publishing_twice_is_refused() -> None:
    def f() -> None:
        pass

    _public.publish("tests.somewhere", f)
    try:
        with pytest.raises(ValueError, match=r"already in tests\.somewhere"):
            _public.publish("tests.somewhere", f)
    finally:
        del _public.DEFINED_IN["tests.somewhere." + f.__qualname__]


def test_repr_of_a_stats_snapshot_type_names_the_package() -> None:
    with Executors.thread_pool(max_workers=1).with_timeout(60) as executor:
        stats = executor.stats()

    assert repr(type(stats)) == "<class 'fluent_executors.TimeoutStats'>"


def test_public_exceptions_and_snapshots_pickle_by_their_public_path() -> None:
    error = fluent_executors.TimeoutCancelledError(60.0, "f_timeout")
    with Executors.thread_pool(max_workers=1) as executor:
        stats = executor.stats()

    assert b"fluent_executors._" not in pickle.dumps(error)
    assert type(pickle.loads(pickle.dumps(error))) is type(error)
    assert pickle.loads(pickle.dumps(stats)) == stats


@pytest.mark.parametrize(
    "name",
    [
        name
        for name in fluent_executors.__all__
        if name.endswith(("Stats", "Policy")) or name == "SameResult"
    ],
)
def test_type_hints_of_a_dataclass_or_policy_still_resolve(name: str) -> None:
    # get_type_hints() reads a class's string annotations in the module that
    # __module__ names, the package now: what dataclass tools read of a snapshot.
    cls = getattr(fluent_executors, name)

    assert cls.__module__ == "fluent_executors"
    typing.get_type_hints(cls)


def test_help_of_the_package_names_no_private_path_for_a_public_name() -> None:
    text = pydoc.render_doc(fluent_executors, renderer=pydoc.plaintext)
    public = set(fluent_executors.__all__)

    private_paths = {
        match.group(0)
        for match in re.finditer(r"\b_fluent_executors(?:\.\w+)+", text)
        if match.group(0).rpartition(".")[2] in public
    }
    assert not private_paths


@pytest.mark.parametrize(
    "package",
    [fluent_executors, fluent_executors.aio, fluent_executors.futures],
    ids=lambda module: module.__name__,
)
def test_help_of_a_public_module_lists_public_modules_only(package: object) -> None:
    # pydoc lists every module of a package's directory: the private ones are in
    # _fluent_executors, beside it.
    text = pydoc.render_doc(package, renderer=pydoc.plaintext)
    if package is fluent_executors:
        contents = text.split("PACKAGE CONTENTS\n", 1)[1].split("\n\n", 1)[0].split()
        assert "retry" in contents
        assert [name for name in contents if name.startswith("_")] == []
    else:  # a module: no contents at all
        assert "PACKAGE CONTENTS" not in text
