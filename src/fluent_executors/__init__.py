"""Composable :mod:`concurrent.futures` executors: poll remote tasks through one poll
function, and wrap any executor in more behaviour, one ``with_*`` call at a time.

Everything public is importable from here::

    from fluent_executors import Executors, PollDescriptor
"""

from ._errors import TimeoutCancelledError
from ._fluent import FluentExecutor, SameResult
from ._proxy import ProxyFuture
from .asyncio import AsyncioExecutor
from .bind import BoundCallable
from .cancel_on_shutdown import CancelOnShutdownExecutor
from .dask import DaskExecutor
from .executors import Executors
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
from .pools import ProcessPoolExecutor, ThreadPoolExecutor
from .rate_limit import RateLimitExecutor
from .ray import RayExecutor
from .retry import ExceptionRetryPolicy, RetryExecutor, RetryPolicy
from .sync import SyncExecutor
from .throttle import ThrottleCount, ThrottleExecutor
from .timeout import TimeoutExecutor

__version__ = "0.1.0"

__all__ = [
    "AsyncioExecutor",
    "BoundCallable",
    "CancelFn",
    "CancelOnShutdownExecutor",
    "DaskExecutor",
    "ExceptionRetryPolicy",
    "Executors",
    "FlatMapExecutor",
    "FluentExecutor",
    "MapExecutor",
    "PollDescriptor",
    "PollExecutor",
    "PollFn",
    "ProcessPoolExecutor",
    "ProxyFuture",
    "RateLimitExecutor",
    "RayExecutor",
    "RetryExecutor",
    "RetryPolicy",
    "SameResult",
    "SyncExecutor",
    "ThreadPoolExecutor",
    "ThrottleCount",
    "ThrottleExecutor",
    "TimeoutCancelledError",
    "TimeoutExecutor",
    "__version__",
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
]
