"""NoopExecutor: passes every callable on to its delegate (a throwaway example)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, TypeVar, overload

from ._fluent import FluentExecutor, R, SameResult
from ._proxy import ProxyFuture
from ._wrapper import WrapperExecutor

__all__ = ["NoopExecutor"]

T = TypeVar("T")


class NoopExecutor(WrapperExecutor[R]):
    """An executor that passes every callable on to its delegate.

    Args:
        delegate: the executor that runs the submitted callables.
        logger: accepted for a uniform signature; this executor logs nothing.
        name: the executor's name.

    Raises:
        TypeError: ``delegate`` has no ``submit`` method; ``name`` is not a ``str``.
    """

    @overload
    def __init__(
        self,
        delegate: FluentExecutor[R],
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None: ...

    @overload
    def __init__(
        self: NoopExecutor[SameResult],
        delegate: Executor,
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None: ...

    def __init__(
        self,
        delegate: Executor,
        logger: logging.Logger | None = None,
        name: str = "default",
    ) -> None:
        super().__init__(delegate, logger=logger, name=name)
        self._open_metrics("noop")

    def _submit(
        self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ProxyFuture[T]:
        self._check_open()
        future: ProxyFuture[T] = ProxyFuture()
        upstream = self._submit_to_delegate(fn, args, kwargs)
        self._counts.adopt(future)
        future._follow(upstream)
        return future
