"""Sphinx configuration of the fluent-executors documentation.

Build with ``nox -s docs``, or::

    sphinx-build -W --keep-going -b html docs docs/_build/html
    sphinx-build -W -b doctest docs docs/_build/doctest

The build needs no network: there is no intersphinx, so references to the standard
library are rendered as text rather than links (see ``nitpick_ignore_regex``).
"""

from __future__ import annotations

import re
import sys
import typing
from typing import Any

import typing_extensions
from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.errors import PycodeError
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging

import fluent_executors

logger = logging.getLogger(__name__)

# -- Project ---------------------------------------------------------------------------

project = "fluent-executors"
author = "The fluent-executors developers"
copyright = "2026, The fluent-executors developers"
release = fluent_executors.__version__
version = ".".join(release.split(".")[:2])

# -- General ---------------------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.doctest",
    "sphinx.ext.viewcode",
    # Figures drawn at build time from the scripts in docs/figures/ (no network).
    "matplotlib.sphinxext.plot_directive",
]
plot_include_source = False
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("svg", 100)]
exclude_patterns = ["_build", "figures"]
default_role = "py:obj"

# Report every reference that does not resolve, so that a misspelt or unexported
# name fails the build; only what cannot resolve without intersphinx is ignored.
nitpicky = True


def _type_parameters() -> str:
    """A regex of the names of the package's type variables and ParamSpecs.

    Annotations such as ``Callable[P, T]`` refer to them; they have no entry to link.
    """
    kinds = (
        typing.TypeVar,
        typing.ParamSpec,
        typing_extensions.TypeVar,
        typing_extensions.ParamSpec,
    )
    names = {
        name
        for modname, module in list(sys.modules.items())
        if modname.startswith("fluent_executors") and module is not None
        for name, value in vars(module).items()
        if isinstance(value, kinds)
    }
    return "|".join(sorted(map(re.escape, names))) or "(?!)"


nitpick_ignore_regex = [
    # The standard library and typing_extensions, under their module names.
    (
        r"py:.*",
        r"(builtins|collections\.abc|concurrent\.futures|logging|types|typing"
        r"|typing_extensions|weakref|asyncio|_asyncio|threading)(\..*)?",
    ),
    # The optional engines (the dask and ray extras), not installed for the docs.
    (r"py:.*", r"(distributed|dask|ray)(\..*)?"),
    # Builtins, named without a module.
    (
        r"py:(class|exc|obj|data|func)",
        r"None|True|False|bool|int|float|str|bytes|object|list|dict|tuple|set"
        r"|Exception|BaseException|TypeError|ValueError|RuntimeError|KeyboardInterrupt"
        r"|SystemExit|NotImplemented|Ellipsis",
    ),
    # Standard library classes that annotations name without their module.
    (
        r"py:(class|obj)",
        r"Executor|Future|Logger|TracebackType|Callable|Any|ParamSpec|TypeVar|Generic",
    ),
    # Type variables and ParamSpecs however autodoc spells them: ``T``, ``~T``,
    # ``fluent_executors.poll.T``, ``P.args``.
    (
        r"py:(class|obj|data)",
        rf"~?(fluent_executors(\.\w+)*\.)?({_type_parameters()})(\.args|\.kwargs)?",
    ),
]

# -- autodoc and napoleon --------------------------------------------------------------

autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
    # Document what a class adds to its public base classes (inherited members of
    # private bases included); the with_* methods are documented once, on
    # FluentExecutor, and the standard library's methods not at all.
    "inherited-members": (
        "FluentExecutor,Executor,Future,ThreadPoolExecutor,ProcessPoolExecutor,object"
    ),
}
autodoc_member_order = "bysource"
# Types go into the parameter lists, where the long ones (a poll function's
# Callable, the ParamSpec'd submit methods) read better than in the signature line.
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
python_use_unqualified_type_names = True

napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_attr_annotations = True
# The generic classes list their type variables under this heading.
napoleon_custom_sections = ["Type parameters"]

# -- doctest ---------------------------------------------------------------------------

doctest_global_setup = """
import logging
import math
import threading

from fluent_executors import Executors, PollDescriptor, PollExecutor

# Some examples make a poll function fail on purpose; keep the warnings that the
# library logs about it out of the build's output.
logging.getLogger("fluent_executors").addHandler(logging.NullHandler())
"""

# -- HTML ------------------------------------------------------------------------------

html_theme = "furo"
html_title = f"fluent-executors {release}"


# -- Base classes ----------------------------------------------------------------------


def _public_bases(bases: list[Any]) -> list[Any]:
    """Replace the base classes that a reader cannot look up by ones they can.

    A private class of this package (``fluent_executors._wrapper.WrapperExecutor``)
    gives way to its own bases, with its type arguments carried into them and
    without ``typing.Generic`` (the class's docstring lists its type parameters); a
    generic class of this package named without type arguments is shown with their
    defaults (``FluentExecutor[SameResult]``); a standard library class defined in
    a private module (``concurrent.futures._base.Executor``) is named by its public
    module; ``object`` is left out unless it is the only base.
    """
    public = set(fluent_executors.__all__)
    result: list[Any] = []
    for base in bases:
        origin = getattr(base, "__origin__", base)
        module = getattr(origin, "__module__", "")
        name = getattr(origin, "__qualname__", "")
        if module.startswith("fluent_executors.") and name not in public:
            result.extend(_public_bases(_own_bases(base)))
        elif origin is object and len(bases) > 1:
            continue
        elif module.startswith("concurrent.futures."):
            result.append(f":py:class:`concurrent.futures.{name}`")
        elif module.startswith("fluent_executors."):
            result.append(_with_defaults(base))
        else:
            result.append(base)
    return list(dict.fromkeys(result))


def _own_bases(base: Any) -> list[Any]:
    """The bases of ``base`` (a class, or a generic alias of one) but ``Generic``,
    with the alias's type arguments put in: ``WrapperExecutor[U]`` has
    ``FluentExecutor[U]``."""
    origin = getattr(base, "__origin__", base)
    parameters = getattr(origin, "__parameters__", ())
    arguments = dict(
        zip(parameters, getattr(base, "__args__", parameters), strict=True)
    )
    own = []
    for parent in getattr(origin, "__orig_bases__", origin.__bases__):
        if getattr(parent, "__origin__", parent) is typing.Generic:
            continue
        names = getattr(parent, "__parameters__", ())
        if names and hasattr(parent, "__origin__"):
            parent = parent[tuple(arguments.get(name, name) for name in names)]
        own.append(parent)
    return own


def _with_defaults(base: Any) -> Any:
    """A generic class named without type arguments, subscripted with their
    defaults, if they all have one; anything else unchanged."""
    parameters = getattr(base, "__parameters__", ())
    if not isinstance(base, type) or not parameters:
        return base
    defaults = [
        getattr(parameter, "__default__", typing_extensions.NoDefault)
        for parameter in parameters
    ]
    if any(default is typing_extensions.NoDefault for default in defaults):
        return base
    return base[tuple(defaults)]


def _on_process_bases(
    app: Sphinx, name: str, obj: object, options: object, bases: list[Any]
) -> None:
    bases[:] = _public_bases(bases)


# -- Docstrings of re-exported type aliases --------------------------------------------


def _on_process_docstring(
    app: Sphinx, what: str, name: str, obj: object, options: object, lines: list[str]
) -> None:
    """Give a type alias the docstring written under its definition.

    ``PollFn`` is documented as ``fluent_executors.PollFn``, but its docstring (the
    string literal after the assignment) is in ``fluent_executors/poll.py``, where
    autodoc does not look: it would show nothing, or the docstring of the alias's
    type (``types.UnionType`` for ``int | Callable[...]``).
    """
    if what != "data" or not name.startswith("fluent_executors."):
        return
    short = name.rpartition(".")[2]
    for modname, module in sorted(sys.modules.items()):
        if not modname.startswith("fluent_executors.") or module is None:
            continue
        if getattr(module, short, None) is not obj:
            continue
        try:
            attr_docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except PycodeError:
            continue
        if ("", short) in attr_docs:
            lines[:] = attr_docs["", short]
            return


# -- Classes that users never construct ------------------------------------------------

# Created by the library and handed to user code: their constructor is not shown.
_NO_SIGNATURE = {"fluent_executors.PollDescriptor"}


def _on_process_signature(
    app: Sphinx,
    what: str,
    name: str,
    obj: object,
    options: object,
    signature: str | None,
    return_annotation: str | None,
) -> tuple[str, None] | None:
    if what == "class" and name in _NO_SIGNATURE:
        return "", None
    return None


# -- ParamSpecs in parameter types -----------------------------------------------------


def _on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    """Drop the ``~`` left in front of ParamSpecs: ``Callable[[~P], T]``, ``~P``.

    autodoc spells a ParamSpec by its ``repr()``, ``~P``, and the Python domain then
    keeps the ``~`` in the text instead of treating it as its shortening prefix.
    """
    for xref in doctree.findall(addnodes.pending_xref):
        if xref.get("refdomain") != "py" or not xref.astext().startswith("~"):
            continue
        xref["reftarget"] = xref.get("reftarget", "").lstrip("~")
        # One text per pending_xref_condition (qualified and unqualified name).
        for text in list(xref.findall(nodes.Text)):
            if text.astext().startswith("~"):
                text.parent.replace(text, nodes.Text(text.astext()[1:]))


# -- Type aliases in annotations -------------------------------------------------------


def _on_missing_reference(
    app: Sphinx, env: BuildEnvironment, node: addnodes.pending_xref, contnode: Any
) -> nodes.reference | None:
    """Resolve a class reference to a documented type alias (``PollFn``).

    Annotations refer to every type as a class; Sphinx before 7.3 finds only
    classes for them, not the aliases documented with ``autodata``.
    """
    if node.get("refdomain") != "py" or node.get("reftype") != "class":
        return None
    domain = env.get_domain("py")
    return domain.resolve_xref(
        env, node["refdoc"], app.builder, "data", node["reftarget"], node, contnode
    )


# -- Every public name documented ------------------------------------------------------


def _check_public_names(app: Sphinx, env: BuildEnvironment) -> None:
    """Warn (an error under ``-W``) about each name of ``__all__`` left undocumented.

    A new public name needs an ``auto*`` directive in ``docs/api.rst``.
    """
    documented = set(env.get_domain("py").objects)
    for name in fluent_executors.__all__:
        if f"fluent_executors.{name}" not in documented:
            logger.warning(
                "fluent_executors.%s is in __all__ but not documented; add it to "
                "docs/api.rst",
                name,
                type="fluent_executors",
                subtype="undocumented",
            )


def setup(app: Sphinx) -> None:
    app.connect("autodoc-process-bases", _on_process_bases)
    app.connect("autodoc-process-docstring", _on_process_docstring)
    app.connect("autodoc-process-signature", _on_process_signature)
    app.connect("doctree-read", _on_doctree_read)
    app.connect("missing-reference", _on_missing_reference)
    app.connect("env-check-consistency", _check_public_names)
