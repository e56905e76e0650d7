"""The public home of the public names that private modules define.

A class or function that a user imports from ``fluent_executors`` (or from
``fluent_executors.futures`` or ``fluent_executors.aio``) but that a private module
defines reports the module the user imports it from: ``repr()``, ``help()``,
pickle and error messages name ``fluent_executors.TimeoutStats``, never
``_fluent_executors.stats.TimeoutStats``. Each defining module calls
:func:`publish` once, at its end, on the public names it defines.
"""

from __future__ import annotations

from types import FunctionType
from typing import TYPE_CHECKING

__all__ = ["DEFINED_IN", "functions_of", "publish"]

DEFINED_IN: dict[str, str] = {}
"""Where each published name is defined, by its public path:
``"fluent_executors.TimeoutStats"`` to ``"_fluent_executors.stats"``. The docs'
configuration puts these back while Sphinx reads the package, since Sphinx reads a
class's attribute comments and source from the module it names."""


if TYPE_CHECKING:  # a Protocol costs import time
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
