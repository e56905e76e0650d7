"""Per-future log records: the ``TRACE`` level, below ``DEBUG``, and the
``MORE_EXECUTORS_DEBUG`` environment variable of more-executors.

What happens to each future (a retry scheduled, a map function that raised, a
timeout that fired) is logged at ``TRACE``, so that logging configured at ``DEBUG``
for everything shows none of it; a logger set to ``TRACE`` (or lower) opts in.
With ``MORE_EXECUTORS_DEBUG=1`` in the environment these records are logged at
``DEBUG`` instead, as more-executors logs its own per-future records.
"""

from __future__ import annotations

import logging
import os
from typing import Any

__all__ = ["TRACE", "trace"]

# The level of the per-future records, public as fluent_executors.TRACE (documented
# in docs/api/index.rst).
TRACE = 5

# The name shown for the level ("%(levelname)s"), unless the program named it.
if logging.getLevelName(TRACE) == f"Level {TRACE}":
    logging.addLevelName(TRACE, "TRACE")


def trace(logger: Any, message: str, *args: object, exc_info: bool = False) -> None:
    """Log a per-future record to ``logger``: at ``DEBUG`` if the environment has
    ``MORE_EXECUTORS_DEBUG=1`` (read at each record, so a test may set it at any
    time), else at :data:`TRACE` if ``logger`` is enabled for it. A logger without
    ``isEnabledFor`` and ``log`` (a structlog logger) gets the ``DEBUG`` records
    only."""
    if os.environ.get("MORE_EXECUTORS_DEBUG") == "1":
        logger.debug(message, *args, exc_info=exc_info)
        return
    enabled = getattr(logger, "isEnabledFor", None)
    if enabled is not None and enabled(TRACE):
        # stacklevel: the record names the library's line that logs, not this one
        logger.log(TRACE, message, *args, exc_info=exc_info, stacklevel=2)
