"""The public home of the public names that private modules define.

A class or function that a user imports from ``fluent_executors`` (or from
``fluent_executors.futures`` or ``fluent_executors.aio``) but that a private module
defines reports the module the user imports it from: ``repr()``, ``help()``,
pickle and error messages name ``fluent_executors.TimeoutStats``, never
``_fluent_executors.stats.TimeoutStats``. Each defining module calls
:func:`publish` once, at its end, on the public names it defines. And the public
package's lazy names, which :func:`type_checking_imports` reads.
"""

from __future__ import annotations

from types import FunctionType
from typing import TYPE_CHECKING, Any

__all__ = ["DEFINED_IN", "functions_of", "publish", "type_checking_imports"]

DEFINED_IN: dict[str, str] = {}
"""Where each published name is defined, by its public path:
``"fluent_executors.TimeoutStats"`` to ``"_fluent_executors.stats"``. The docs'
configuration puts these back while Sphinx reads the package, since Sphinx reads a
class's attribute comments and source from the module it names."""


if TYPE_CHECKING:  # a Protocol costs import time
    from importlib.machinery import ModuleSpec
    from types import CodeType
    from typing import Protocol

    class _Named(Protocol):
        """A class or a function: named, and in a module."""

        __module__: str
        __qualname__: str


def publish(module: str, *objects: _Named) -> None:
    """Set the ``__module__`` of each class or function in ``objects``, and of the
    functions of a class's body, to ``module`` (a public module that exports it),
    and record where it is defined in :data:`DEFINED_IN`.

    That ``module`` exports each of them by its name is checked by
    tests/test_public.py, not here (the module may import it lazily).

    Raises:
        ValueError: an object already names ``module`` (published twice).
    """
    for obj in objects:
        defined_in = obj.__module__
        if defined_in == module:
            raise ValueError(f"{obj!r} is already in {module}")
        DEFINED_IN[f"{module}.{obj.__qualname__}"] = defined_in
        obj.__module__ = module
        # and the functions of a class's body, which help() shows as "from
        # <their module>.<their class>" when it lists an inherited one
        for function in functions_of(obj, defined_in):
            function.__module__ = module


def functions_of(obj: object, module: str) -> list[FunctionType]:
    """The functions of ``obj``'s body (methods, static and class methods) that
    report ``module``; none if ``obj`` is not a class."""
    members = vars(obj).values() if isinstance(obj, type) else ()
    functions = [getattr(member, "__func__", member) for member in members]
    return [
        function
        for function in functions
        if isinstance(function, FunctionType) and function.__module__ == module
    ]


def type_checking_imports(spec: ModuleSpec) -> dict[str, str]:
    """The names that the ``if TYPE_CHECKING:`` block of the module ``spec`` imports
    (a package's lazy names, PEP 562), each with its module (``".poll"``,
    ``"_fluent_executors.stats"``), read from the module's source, or from its
    compiled code in an install without the source (``.pyc`` files only, as in a
    PyInstaller bundle)."""
    loader: Any = spec.loader  # an importlib.abc.InspectLoader, but for pytest's
    if hasattr(loader, "get_source"):
        source = loader.get_source(spec.name)  # None without the source
    else:  # pytest's loader, which rewrites the assertions of a plugin's .py file
        with open(str(spec.origin), encoding="utf-8") as file:
            source = file.read()
    if source is None:
        return _imports_in_code(loader.get_code(spec.name))
    return _imports_in_source(source)


def _imports_in_source(source: str) -> dict[str, str]:
    import ast

    (block,) = [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    found: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom)
        module = "." * node.level + str(node.module)
        found.update(dict.fromkeys((alias.name for alias in node.names), module))
    return found


def _imports_in_code(code: CodeType) -> dict[str, str]:
    """What :func:`_imports_in_source` reads, from the module's instructions: on
    every Python, ``from .m import a as a, b as b`` is ``1, ("a", "b"), IMPORT_NAME
    m`` (the level, the names, the module), and the block is what the conditional
    jump after ``LOAD_NAME TYPE_CHECKING`` skips."""
    import dis

    steps = [i for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]
    test = next(
        n
        for n, step in enumerate(steps)
        if step.opname == "LOAD_NAME" and step.argval == "TYPE_CHECKING"
    )
    jump = next(s for s in steps[test:] if s.opcode in {*dis.hasjrel, *dis.hasjabs})
    found: dict[str, str] = {}
    for n, step in enumerate(steps):
        if step.opname == "IMPORT_NAME" and jump.offset < step.offset < jump.argval:
            level, names = steps[n - 2].argval, steps[n - 1].argval
            found.update(dict.fromkeys(names, "." * level + step.argval))
    return found
