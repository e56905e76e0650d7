# The layers, top to bottom: a module imports, at module level, only from its own
# line and the lines below it (tests/test_layers.py reads this sketch and checks it;
# every module of the package is on it). Modules first, then what they are.
#
#   __init__                        the public namespace
#   executors                       the Executors facade: one-line calls to the classes
#   bind pytest_plugin              BoundCallable; the pytest fixtures
#   aio                             the async executors
#   poll retry timeout map flat_map throttle rate_limit cancel_on_shutdown asyncio
#                                   one module per wrapper
#   sync pools dask ray futures testing
#                                   the base executors; the combinators; the manual
#                                   executor and the virtual clock
#   _fluent_executors               the private package, below every public module:
#                                   what they are made of, by layers of its own (its
#                                   __init__ has their sketch)
#
# Only public modules are in this package, so that help(fluent_executors) lists
# them alone: the private ones are in _fluent_executors, beside it (as _pytest is
# beside pytest), and never import a public module (tests/test_layers.py).
#
# Deferred imports, on first use: __init__ imports the facade only, and every other
# public name when it is first looked up (_DEFERRED, below). No module imports
# upward, even in a function: the methods made from the registry (the facade's,
# the chain methods of FluentExecutor, BoundCallable's) import the module of the
# executor they build by its name (registry.load) on their first call, and
# FluentExecutor.bind reaches BoundCallable so (registry.public).

"""Composable :mod:`concurrent.futures` executors: poll remote tasks through one poll
function, and wrap any executor in more behaviour, one ``with_*`` call at a time.

Everything public is importable from here::

    from fluent_executors import Executors, PollDescriptor
"""

from typing import TYPE_CHECKING

from _fluent_executors import registry as _registry

from .executors import Executors

if TYPE_CHECKING:  # what type checkers see; at run time, _DEFERRED below
    from _fluent_executors.errors import TimeoutCancelledError
    from _fluent_executors.fluent import FluentExecutor, SameResult
    from _fluent_executors.interpreter_pool import InterpreterPoolExecutor
    from _fluent_executors.logging import TRACE
    from _fluent_executors.process_pool import ProcessPoolExecutor
    from _fluent_executors.progress import progress
    from _fluent_executors.proxy import ProxyFuture
    from _fluent_executors.stats import (
        ExecutorStats,
        PollStats,
        QueueStats,
        RateLimitStats,
        RetryStats,
        SchedulerStats,
        TimeoutStats,
        scheduler_stats,
    )
    from _fluent_executors.waiting import as_completed, wait

    from .asyncio import AsyncioExecutor
    from .bind import BoundCallable
    from .cancel_on_shutdown import CancelOnShutdownExecutor
    from .dask import DaskExecutor
    from .futures import (
        f_and,
        f_apply,
        f_flat_map,
        f_map,
        f_nocancel,
        f_or,
        f_proxy,
        f_return,
        f_return_cancelled,
        f_return_error,
        f_sequence,
        f_timeout,
        f_traverse,
        f_zip,
    )
    from .map import FlatMapExecutor, MapExecutor
    from .poll import CancelFn, PollDescriptor, PollExecutor, PollFn
    from .pools import ThreadPoolExecutor
    from .rate_limit import RateLimitExecutor
    from .ray import RayExecutor
    from .retry import ExceptionRetryPolicy, RetryExecutor, RetryPolicy, retry_after
    from .sync import SyncExecutor
    from .throttle import ThrottleCount, ThrottleExecutor
    from .timeout import TimeoutExecutor

__version__ = "0.2.0"  # the next release: the top of CHANGELOG.rst

__all__ = [
    "TRACE",
    "AsyncioExecutor",
    "BoundCallable",
    "CancelFn",
    "CancelOnShutdownExecutor",
    "DaskExecutor",
    "ExceptionRetryPolicy",
    "ExecutorStats",
    "Executors",
    "FlatMapExecutor",
    "FluentExecutor",
    "InterpreterPoolExecutor",
    "MapExecutor",
    "PollDescriptor",
    "PollExecutor",
    "PollFn",
    "PollStats",
    "ProcessPoolExecutor",
    "ProxyFuture",
    "QueueStats",
    "RateLimitExecutor",
    "RateLimitStats",
    "RayExecutor",
    "RetryExecutor",
    "RetryPolicy",
    "RetryStats",
    "SameResult",
    "SchedulerStats",
    "SyncExecutor",
    "ThreadPoolExecutor",
    "ThrottleCount",
    "ThrottleExecutor",
    "TimeoutCancelledError",
    "TimeoutExecutor",
    "TimeoutStats",
    "__version__",
    "as_completed",
    "f_and",
    "f_apply",
    "f_flat_map",
    "f_map",
    "f_nocancel",
    "f_or",
    "f_proxy",
    "f_return",
    "f_return_cancelled",
    "f_return_error",
    "f_sequence",
    "f_timeout",
    "f_traverse",
    "f_zip",
    "progress",
    "retry_after",
    "scheduler_stats",
    "wait",
]


# Every public name but Executors, by the module that defines it, imported on first
# use (PEP 562): "import fluent_executors" imports the facade only, and a program
# imports the modules of the executors it uses. The executor classes come from the
# registry of executors (_fluent_executors.registry); tests/test_init.py checks
# that this table, the imports above and __all__ name the same things.
_DEFERRED: dict[str, tuple[str, ...]] = {
    "_fluent_executors.errors": ("TimeoutCancelledError",),
    "_fluent_executors.fluent": ("FluentExecutor", "SameResult"),
    "_fluent_executors.logging": ("TRACE",),
    "_fluent_executors.progress": ("progress",),
    "_fluent_executors.proxy": ("ProxyFuture",),
    "_fluent_executors.stats": (
        "ExecutorStats",
        "PollStats",
        "QueueStats",
        "RateLimitStats",
        "RetryStats",
        "SchedulerStats",
        "TimeoutStats",
        "scheduler_stats",
    ),
    "_fluent_executors.waiting": ("as_completed", "wait"),
    ".bind": ("BoundCallable",),
    ".futures": (
        "f_and",
        "f_apply",
        "f_flat_map",
        "f_map",
        "f_nocancel",
        "f_or",
        "f_proxy",
        "f_return",
        "f_return_cancelled",
        "f_return_error",
        "f_sequence",
        "f_timeout",
        "f_traverse",
        "f_zip",
    ),
    ".poll": ("CancelFn", "PollDescriptor", "PollFn"),
    ".retry": ("ExceptionRetryPolicy", "RetryPolicy", "retry_after"),
    ".throttle": ("ThrottleCount",),
}
_DEFERRED = _registry.with_classes(_DEFERRED)  # and every executor class
_MODULE_OF = {name: module for module, names in _DEFERRED.items() for name in names}


def __getattr__(name: str) -> object:
    """A public name other than ``Executors``, imported from its module on first use;
    or a submodule, imported then (``fluent_executors.futures.f_map`` after ``import
    fluent_executors``, as when every submodule was imported with the package)
    (PEP 562).

    Raises:
        AttributeError: the package has no such name or submodule.
    """
    import importlib

    module = _MODULE_OF.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value  # the next lookup finds it without this function
        return value
    if not name.startswith("__"):
        import importlib.util

        if importlib.util.find_spec(f".{name}", __name__) is not None:
            return importlib.import_module(f".{name}", __name__)  # an attribute now
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
