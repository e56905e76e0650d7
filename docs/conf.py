"""Sphinx configuration of the documentation (``nox -s docs``). No intersphinx: the
build needs no network, so the standard library's names are text, not links."""

import sys
import typing
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.pycode import ModuleAnalyzer

import fluent_executors
import fluent_executors.aio
from _fluent_executors import public as _public

# Sphinx reads a class's attribute docstrings and a function's overloads from the
# module that __module__ names; the public names that private modules define name
# the package instead (_public.publish). Put their defining modules back for the
# build, and of their classes' functions (every public name is imported first: some
# are imported on first use); PollDescriptor keeps its public module, by which the
# pages name it (its methods' overloads are still read from its source).
for _name in fluent_executors.__all__:
    getattr(fluent_executors, _name)
for _path, _defined_in in _public.DEFINED_IN.items():
    _home, _, _name = _path.rpartition(".")
    _published = getattr(sys.modules[_home], _name)
    if _path != "fluent_executors.poll.PollDescriptor":
        _published.__module__ = _defined_in
    for _function in _public.functions_of(_published, _home):
        _function.__module__ = _defined_in


project = "fluent-executors"
copyright = "2026, The fluent-executors developers"
release = fluent_executors.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.doctest",
    "sphinx.ext.viewcode",
    "matplotlib.sphinxext.plot_directive",  # docs/figures/, drawn at build time
]
exclude_patterns = ["_build", "figures"]
default_role = "py:obj"
html_theme = "furo"
html_title = f"fluent-executors {release}"
plot_include_source = plot_html_show_source_link = plot_html_show_formats = False
plot_formats = [("svg", 100)]

# A reference that does not resolve fails the build, but for the standard library,
# the engines of the extras (not installed here), the type variables (one capital
# letter, or named here) and Delegate, the type of a wrapper's delegate for type
# checkers (any executor: the class docstrings say so).
nitpicky = True
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(asyncio|collections\.abc|concurrent\.futures|json|logging|os|sqlite3"
        r"|threading|time|types"
        r"|typing|typing_extensions|distributed|anyio)(\..*)?|Executor|Future"
        r"|TaskGroup|Self|P\.args|P\.kwargs",
    ),
    (
        r"py:.*",
        r"~?(_?fluent_executors\.[\w.]+\.)?([A-Z]|DelegateResult|Delegate)(\.\w+)?",
    ),
]

# Type aliases, named in signatures rather than spelt out, and where they are defined.
_ALIASES = {
    "PollFn": "fluent_executors.poll",
    "CancelFn": "fluent_executors.poll",
    "ThrottleCount": "fluent_executors.throttle",
    "AsyncPollFn": "_fluent_executors.aio.executor",
}
autodoc_type_aliases = {name: name for name in _ALIASES}
autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
    # The with_* methods are documented once, on FluentExecutor; the standard
    # library's methods not at all.
    "inherited-members": (
        "FluentExecutor,Executor,Future,ThreadPoolExecutor,ProcessPoolExecutor,object"
    ),
}
autodoc_member_order = "bysource"
autodoc_typehints = "description"  # a long Callable reads better in the list
autodoc_typehints_description_target = "documented_params"
autodoc_preserve_defaults = True
python_use_unqualified_type_names = True
napoleon_use_rtype = False
napoleon_custom_sections = ["Type parameters"]

doctest_global_setup = """
import logging, math, threading
from fluent_executors import Executors, PollDescriptor, PollExecutor
# Examples whose poll function fails on purpose: keep the library's warnings quiet.
logging.getLogger("fluent_executors").addHandler(logging.NullHandler())
"""

_PUBLIC = set(fluent_executors.__all__)


def _public_bases(base: Any) -> list[Any]:
    """A private base class (``WrapperExecutor[R]``) as its own public bases."""
    cls = typing.get_origin(base) or base
    library = cls.__module__.partition(".")[0] in (
        "fluent_executors",
        "_fluent_executors",
    )
    if not library or cls.__name__ in _PUBLIC:
        return [base]
    # A Generic's own; else those of its bases (a subclass of Future[T], which is
    # not a typing.Generic, has none of its own).
    params = getattr(cls, "__parameters__", None) or tuple(
        dict.fromkeys(
            param
            for parent in getattr(cls, "__orig_bases__", ())
            for param in getattr(parent, "__parameters__", ())
        )
    )
    values = dict(zip(params, typing.get_args(base) or params, strict=True))
    return [
        public
        for parent in getattr(cls, "__orig_bases__", cls.__bases__)
        if typing.get_origin(parent) is not typing.Generic
        for public in _public_bases(
            parent[tuple(values[v] for v in parent.__parameters__)]
            if typing.get_origin(parent) and parent.__parameters__
            else parent
        )
    ]


def _on_bases(app: Sphinx, name: str, obj: Any, options: Any, bases: list[Any]) -> None:
    bases[:] = [public for base in bases for public in _public_bases(base)]


def _on_docstring(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """Give a type alias the docstring under its definition, which autodoc misses."""
    short = name.rpartition(".")[2]
    if what == "data" and short in _ALIASES:
        docs = ModuleAnalyzer.for_module(_ALIASES[short]).find_attr_docs()
        lines[:] = docs["", short]


def _on_doctree(app: Sphinx, doctree: nodes.document) -> None:
    """Drop the ``~`` of ParamSpecs, which autodoc spells by ``repr()``: ``~P``."""
    for xref in doctree.findall(addnodes.pending_xref):
        for text in list(xref.findall(nodes.Text)):
            if text.startswith("~"):
                text.parent.replace(text, nodes.Text(text[1:]))


def setup(app: Sphinx) -> None:
    app.connect("autodoc-process-bases", _on_bases)
    app.connect("autodoc-process-docstring", _on_docstring)
    app.connect("doctree-read", _on_doctree)
