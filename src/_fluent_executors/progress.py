"""progress(): iterate over futures as they complete, with a progress bar."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

from .errors import install_hint
from .public import publish

__all__ = ["progress"]

T = TypeVar("T")


def progress(
    futures: Iterable[Future[T]], timeout: float | None = None, **tqdm_options: Any
) -> Iterator[Future[T]]:
    """Yield ``futures`` as they complete, like :func:`concurrent.futures.as_completed`,
    while a `tqdm <https://tqdm.github.io/>`_ progress bar counts them.

    The bar's ``total`` is the number of futures, its unit ``"future"``; any keyword
    of ``tqdm.tqdm`` overrides those (``desc``, ``unit``, ``total``, ``initial``,
    ``disable=None`` to show it on a terminal only, ...). The bar is closed when the
    iteration ends, is abandoned, or raises::

        for future in progress(futures, desc="publishing", unit="task"):
            handle(future.result())

    Needs the ``progress`` extra (``pip install '.[progress]'`` in a checkout).

    Args:
        futures: the futures to wait for, any :class:`concurrent.futures.Future`
            (``Future[T]``), the library's or not; duplicates are yielded once.
        timeout: the most seconds to wait, from this call, for all of them;
            ``None`` waits as long as needed.
        tqdm_options: keyword arguments of ``tqdm.tqdm``.

    Returns:
        An iterator of the futures (``Iterator[Future[T]]``), each yielded once it
        is done, in the order they complete.

    Raises:
        ImportError: tqdm is not installed (the message names the ``progress``
            extra); raised by the call itself, before any waiting.
        concurrent.futures.TimeoutError: not every future is done within
            ``timeout`` seconds (raised by the iteration).

    .. versionadded:: 0.2.0
    """
    try:
        from tqdm import tqdm
    except ImportError as error:
        raise ImportError(
            "fluent_executors.progress() draws its bar with tqdm: "
            + install_hint("progress")
        ) from error
    pending = list(dict.fromkeys(futures))
    options: dict[str, Any] = {"total": len(pending), "unit": "future"}
    options.update(tqdm_options)
    bar = tqdm(**options)
    return _counted(concurrent.futures.as_completed(pending, timeout), bar)


def _counted(done: Iterator[Future[T]], bar: Any) -> Iterator[Future[T]]:
    with bar:
        for future in done:
            bar.update()
            yield future


publish("fluent_executors", progress)
