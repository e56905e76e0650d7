"""Executors for async programs, on asyncio and trio alike (through anyio): the
chain of the threaded side, ``await executor.run(fn, ...)`` its one primitive, and
batched polling on the caller's event loop. See the "Async programs" page.

Needs the ``aio`` extra (anyio); ``import fluent_executors`` never imports it.

.. versionadded:: 0.2.0
"""

# The package's modules, each importing only from those below it
# (tests/test_layers.py):
#   _facade    AsyncExecutors, the executors at the bottom of a chain
#   _executor  AsyncExecutor: run, the 'async with' block, stats, the chain methods
#   _layers    what each layer does with a run, one class per kind
#   _driver    the async driver of the poll core: a poll layer's loop

from __future__ import annotations

from .._errors import install_hint

try:
    import anyio  # noqa: F401
except ImportError as error:  # pragma: no cover - the extra is missing
    raise ImportError(
        f"fluent_executors.aio needs anyio: {install_hint('aio')}"
    ) from error

from ._executor import AsyncExecutor, AsyncPollFn
from ._facade import AsyncExecutors

__all__ = ["AsyncExecutor", "AsyncExecutors", "AsyncPollFn"]
