"""Composable :mod:`concurrent.futures` executors: poll remote tasks through one poll
function, and wrap any executor in more behaviour, one ``with_*`` call at a time.

Everything public is importable from here::

    from fluent_executors import Executors, PollDescriptor
"""

from ._chain import FluentExecutor
from ._future import ProxyFuture
from .executors import Executors
from .poll import CancelFn, PollDescriptor, PollExecutor, PollFn
from .pools import ProcessPoolExecutor, ThreadPoolExecutor
from .sync import SyncExecutor

__version__ = "0.1.0"

__all__ = [
    "CancelFn",
    "Executors",
    "FluentExecutor",
    "PollDescriptor",
    "PollExecutor",
    "PollFn",
    "ProcessPoolExecutor",
    "ProxyFuture",
    "SyncExecutor",
    "ThreadPoolExecutor",
    "__version__",
]
