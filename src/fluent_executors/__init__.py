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
#   stores                          the stores of durable polling (SQLite, PostgreSQL)
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

from typing import TYPE_CHECKING

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
    from .stores import (
        PostgresStore as PostgresStore,
    )
    from .stores import (
        SQLiteStore as SQLiteStore,
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
    module's source, or from its compiled code where there is no source."""
    if not _module_of:
        from _fluent_executors.public import type_checking_imports

        _module_of.update(type_checking_imports(__spec__))
    return _module_of


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
