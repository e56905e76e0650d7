# The layers, top to bottom: a module imports, at module level, only from its own
# line and the lines below it (tests/test_layers.py reads this sketch and checks it;
# every module of the package is on it). Modules first, then what they are.
#
#   __init__                        the public namespace
#   executors                       the Executors facade: short calls to the classes
#   bind pytest_plugin              BoundCallable; the pytest fixtures
#   aio                             the async executors
#   poll retry timeout map flat_map throttle rate_limit cancel_on_shutdown asyncio
#                                   one module per wrapper
#   sync pools dask ray futures testing
#                                   the base executors; the combinators; the manual
#                                   executor and the virtual clock
#   _fluent_executors               the private package, below every public module:
#                                   what they are made of, by layers of its own (its
#                                   __init__ has their sketch); its one reach up:
#                                   FluentExecutor's chain methods import the
#                                   wrapper (or bind) module they build, when called
#
# Only public modules are in this package, so that help(fluent_executors) lists
# them alone: the private ones are in _fluent_executors, beside it (as _pytest is
# beside pytest), and import no public module but by that reach
# (tests/test_layers.py).
#
# Deferred imports, on first use: __init__ imports the facade only, and every other
# public name when it is first looked up (__getattr__, below). No module imports
# upward, but for one reach, in functions: the chain methods of FluentExecutor
# (_fluent_executors/fluent.py) import the wrapper module they build, and
# FluentExecutor.bind the bind module, when called.

"""Composable :mod:`concurrent.futures` executors: poll remote tasks through one poll
function, and wrap any executor in more behaviour, one ``with_*`` call at a time.

Everything public is importable from here::

    from fluent_executors import Executors, PollDescriptor
"""

from types import CodeType
from typing import TYPE_CHECKING, Any

from .executors import Executors as Executors

# Every public name but Executors and __version__, imported from the module that
# defines it: type checkers read these imports, and at run time __getattr__ below
# imports each name from the module its line names, when it is first looked up
# (PEP 562), so that a program imports the modules of the executors it uses only.
# A name is written here once ("X as X" is how a typed package re-exports it).
if TYPE_CHECKING:
    from _fluent_executors.errors import TimeoutCancelledError as TimeoutCancelledError
    from _fluent_executors.fluent import (
        FluentExecutor as FluentExecutor,
    )
    from _fluent_executors.fluent import (
        SameResult as SameResult,
    )
    from _fluent_executors.interpreter_pool import (
        InterpreterPoolExecutor as InterpreterPoolExecutor,
    )
    from _fluent_executors.logging import TRACE as TRACE
    from _fluent_executors.process_pool import (
        ProcessPoolExecutor as ProcessPoolExecutor,
    )
    from _fluent_executors.progress import progress as progress
    from _fluent_executors.proxy import ProxyFuture as ProxyFuture
    from _fluent_executors.stats import (
        ExecutorStats as ExecutorStats,
    )
    from _fluent_executors.stats import (
        PollStats as PollStats,
    )
    from _fluent_executors.stats import (
        QueueStats as QueueStats,
    )
    from _fluent_executors.stats import (
        RateLimitStats as RateLimitStats,
    )
    from _fluent_executors.stats import (
        RetryStats as RetryStats,
    )
    from _fluent_executors.stats import (
        SchedulerStats as SchedulerStats,
    )
    from _fluent_executors.stats import (
        TimeoutStats as TimeoutStats,
    )
    from _fluent_executors.stats import (
        scheduler_stats as scheduler_stats,
    )
    from _fluent_executors.waiting import (
        as_completed as as_completed,
    )
    from _fluent_executors.waiting import (
        wait as wait,
    )

    from .asyncio import AsyncioExecutor as AsyncioExecutor
    from .bind import BoundCallable as BoundCallable
    from .cancel_on_shutdown import CancelOnShutdownExecutor as CancelOnShutdownExecutor
    from .dask import DaskExecutor as DaskExecutor
    from .futures import (
        f_and as f_and,
    )
    from .futures import (
        f_apply as f_apply,
    )
    from .futures import (
        f_flat_map as f_flat_map,
    )
    from .futures import (
        f_map as f_map,
    )
    from .futures import (
        f_nocancel as f_nocancel,
    )
    from .futures import (
        f_or as f_or,
    )
    from .futures import (
        f_proxy as f_proxy,
    )
    from .futures import (
        f_return as f_return,
    )
    from .futures import (
        f_return_cancelled as f_return_cancelled,
    )
    from .futures import (
        f_return_error as f_return_error,
    )
    from .futures import (
        f_sequence as f_sequence,
    )
    from .futures import (
        f_timeout as f_timeout,
    )
    from .futures import (
        f_traverse as f_traverse,
    )
    from .futures import (
        f_zip as f_zip,
    )
    from .map import (
        FlatMapExecutor as FlatMapExecutor,
    )
    from .map import (
        MapExecutor as MapExecutor,
    )
    from .poll import (
        CancelFn as CancelFn,
    )
    from .poll import (
        PollDescriptor as PollDescriptor,
    )
    from .poll import (
        PollExecutor as PollExecutor,
    )
    from .poll import (
        PollFn as PollFn,
    )
    from .pools import ThreadPoolExecutor as ThreadPoolExecutor
    from .rate_limit import RateLimitExecutor as RateLimitExecutor
    from .ray import RayExecutor as RayExecutor
    from .retry import (
        ExceptionRetryPolicy as ExceptionRetryPolicy,
    )
    from .retry import (
        RetryExecutor as RetryExecutor,
    )
    from .retry import (
        RetryPolicy as RetryPolicy,
    )
    from .retry import (
        retry_after as retry_after,
    )
    from .sync import SyncExecutor as SyncExecutor
    from .throttle import (
        ThrottleCount as ThrottleCount,
    )
    from .throttle import (
        ThrottleExecutor as ThrottleExecutor,
    )
    from .timeout import TimeoutExecutor as TimeoutExecutor

__version__ = "0.2.0"  # the next release: the top of CHANGELOG.rst

_module_of: dict[str, str] = {}  # each name of the imports above: its module


def _public_modules() -> dict[str, str]:
    """Each public name but ``Executors`` and ``__version__``, and the module that
    defines it: what the ``TYPE_CHECKING`` imports above say, read once from this
    module's source, or from its compiled code in an install without the source
    (``.pyc`` files only, as in a PyInstaller bundle)."""
    if not _module_of:
        loader: Any = __spec__.loader  # mostly an importlib.abc.InspectLoader
        if hasattr(loader, "get_source"):
            source = loader.get_source(__name__)  # None without the source
        else:  # pytest's, which rewrites the assertions of a plugin's .py file
            with open(__file__, encoding="utf-8") as file:
                source = file.read()
        if source is not None:
            _module_of.update(_imports_in_source(source))
        else:
            _module_of.update(_imports_in_code(loader.get_code(__name__)))
    return _module_of


def _imports_in_source(source: str) -> dict[str, str]:
    """The names the ``if`` block of ``source`` imports, and their modules."""
    import ast

    (block,) = [node for node in ast.parse(source).body if isinstance(node, ast.If)]
    found: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom)
        module = "." * node.level + str(node.module)
        found.update(dict.fromkeys((alias.name for alias in node.names), module))
    return found


def _imports_in_code(code: CodeType) -> dict[str, str]:
    """The names the ``if TYPE_CHECKING`` block of the module ``code`` imports, and
    their modules, read from its instructions: on every Python, ``from .m import
    a as a, b as b`` is ``level, ("a", "b"), IMPORT_NAME m``, then one IMPORT_FROM a
    name; the block is what the jump after ``TYPE_CHECKING`` skips."""
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


def __getattr__(name: str) -> object:
    """A public name other than ``Executors``, imported from its module on first use;
    ``__all__``, every public name; or a submodule, imported then
    (``fluent_executors.futures.f_map`` after ``import fluent_executors``, as when
    every submodule was imported with the package) (PEP 562).

    Raises:
        AttributeError: the package has no such name or submodule.
    """
    import importlib

    module = _public_modules().get(name)
    if module is not None:
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value  # the next lookup finds it without this function
        return value
    if name == "__all__":  # what "from fluent_executors import *" imports
        return sorted(["Executors", "__version__", *_public_modules()])
    if not name.startswith("__"):
        import importlib.util

        if importlib.util.find_spec(f".{name}", __name__) is not None:
            return importlib.import_module(f".{name}", __name__)  # an attribute now
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_public_modules()})
