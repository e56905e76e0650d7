"""DaskExecutor: run callables on a Dask cluster, embedded or remote."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from _fluent_executors.errors import install_hint
from _fluent_executors.remote import RemoteExecutor

if TYPE_CHECKING:
    import distributed

__all__ = ["DaskExecutor"]

CLUSTER_START_ATTEMPTS = 3
"""How many times an embedded LocalCluster is started before giving up."""

CLUSTER_START_TIMEOUT = 60.0
"""Seconds an embedded LocalCluster's workers have to come up, at each attempt."""

T = TypeVar("T")
P = ParamSpec("P")

# The options of distributed.Client.submit that an executor may pass on to every
# task. ``key`` and ``pure`` are the executor's own: each submit is a new task.
SUBMIT_OPTIONS = frozenset(
    {
        "workers",
        "resources",
        "retries",
        "priority",
        "allow_other_workers",
        "fifo_timeout",
    }
)


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as error:
        raise ImportError(
            f"DaskExecutor needs Dask's distributed scheduler: {install_hint('dask')}"
        ) from error
    return distributed


class DaskExecutor(RemoteExecutor["distributed.Future[Any]"]):
    """An executor that runs callables on a Dask cluster.

    It is what ``distributed.Client.get_executor()`` should be:

    - every :meth:`submit` is a new task, so a callable submitted twice runs twice
      (Dask's default, ``pure=True``, would return the first outcome again, so that a
      retry would only see the cached error);
    - keyword arguments reach the callable whatever their names (``key``,
      ``workers``, ``priority``, ... are not taken by Dask); the options of Dask's
      ``Client.submit`` are given once, to the executor, as ``submit_options``;
    - :meth:`shutdown` takes ``cancel_futures``, like every executor;
    - the futures are standard :class:`concurrent.futures.Future` objects whose
      done callbacks run in the executor's own threads, never in Dask's event loop
      or callback thread: a callback may block (for example on another future of
      this executor) without stalling the client.

    Where the cluster comes from:

    - neither ``address`` nor ``client``: the executor starts an embedded
      ``distributed.LocalCluster`` (worker processes, no dashboard), configured by
      ``cluster_options``, waits for its workers, and closes it in
      :meth:`shutdown`; a start that fails (a port taken, a worker that dies) is
      tried again, three times in all, before the constructor raises;
    - ``address``: it connects to the scheduler there, and closes that connection
      (not the cluster) in :meth:`shutdown`;
    - ``client``: it uses that ``distributed.Client`` and never closes it.

    The executor's client does not become Dask's default client. Callables and
    their arguments are pickled (with cloudpickle) to reach the workers: if that
    fails, :meth:`submit` raises the error. Worker processes of the embedded cluster
    are started with the ``spawn`` method (Dask's default): a script that creates
    the executor must guard its entry point with ``if __name__ == "__main__":``.

    Futures and threads:

    - Results are fetched, and futures resolved, by up to four threads named
      ``fluent-executors-dask-<name>_<n>``; done callbacks run there.
    - ``cancel()`` asks Dask to cancel the task and returns ``True`` unless the
      future is done: a task that is running is not interrupted (Dask cannot), but
      its result is dropped and its future is cancelled at once.
    - A task whose worker dies is recomputed by Dask on another worker; after
      ``distributed.scheduler.allowed-failures`` deaths (default 3) its future
      fails with ``distributed.scheduler.KilledWorker``, which
      :meth:`~fluent_executors.FluentExecutor.with_retry` retries. A task that Dask
      cancels on its own (the client lost its scheduler) fails with
      ``distributed.client.FutureCancelledError``, an :class:`Exception` too.
    - :meth:`~concurrent.futures.Future.running` is always ``False``: Dask does not
      tell the client when a task starts.

    A ``FluentExecutor[SameResult]`` (see :ref:`guide-result-types`).

    Args:
        address: the address of a running Dask scheduler, for example
            ``"tcp://scheduler:8786"``; ``None`` for the embedded cluster or
            ``client``.
        client: a ``distributed.Client`` to use, left open by :meth:`shutdown`.
        logger: where to log (a cancel that fails); default
            ``logging.getLogger("fluent_executors.dask")``.
        name: the executor's name, used in thread names and passed down chains.
        cluster_options: keyword arguments of the embedded ``LocalCluster``
            (``n_workers``, ``threads_per_worker``, ``processes``,
            ``memory_limit``, ...), overriding ``processes=True`` and
            ``dashboard_address=None`` (no dashboard; the scheduler's health page
            on a free port). Only without ``address`` and ``client``.
        submit_options: options of ``distributed.Client.submit`` applied to every
            task: ``workers``, ``resources``, ``retries``, ``priority``,
            ``allow_other_workers``, ``fifo_timeout``.

    Raises:
        ImportError: Dask's ``distributed`` package is not installed (install the
            ``dask`` extra).
        TypeError: ``address`` is not a ``str``; ``client`` is not a
            ``distributed.Client``; both are given; ``cluster_options`` is given
            with one of them, or is not a mapping; a ``submit_options`` name is not
            one of those above (``key`` and ``pure`` are the executor's own);
            ``name`` is not a ``str``.
        ValueError: ``address`` is empty; ``client`` is asynchronous or closed.
        OSError: the scheduler at ``address`` cannot be reached.
        RuntimeError: the embedded ``LocalCluster`` could not be started, or its
            workers did not come up within 60 s, three times in a row (the message
            names the last cause; each failure is logged at ``WARNING``); or its
            worker processes would start clusters of their own: the embedded
            cluster is started from the top level of the main module, outside an
            ``if __name__ == "__main__":`` guard (each spawned worker runs that
            module again), which is checked before anything is started.
    """

    def __init__(
        self,
        address: str | None = None,
        logger: logging.Logger | None = None,
        name: str = "default",
        *,
        client: distributed.Client | None = None,
        cluster_options: Mapping[str, Any] | None = None,
        **submit_options: Any,
    ) -> None:
        _check_arguments(address, client, cluster_options, submit_options)
        dist = _import_distributed()
        if client is not None:
            _check_client(dist, client)
        super().__init__(name, "dask", logger)
        self._submit_options = dict(submit_options)
        self._cluster: Any = None  # an embedded LocalCluster, closed on shutdown
        self._owns_client = client is None
        self._client: distributed.Client = (
            client
            if client is not None
            else self._connect(dist, address, cluster_options)
        )
        self._open_metrics()

    def _connect(
        self, dist: Any, address: str | None, cluster_options: Mapping[str, Any] | None
    ) -> distributed.Client:
        """Return a new client of the scheduler at ``address``, or of an embedded
        cluster started here."""
        if address is not None:
            client: distributed.Client = dist.Client(address, set_as_default=False)
            return client
        options: dict[str, Any] = {"processes": True, "dashboard_address": None}
        options.update(cluster_options or {})
        if options["dashboard_address"] is None:
            # Without a dashboard the scheduler still serves its health and metrics
            # pages, by default on the dashboard's port: another cluster's port.
            options["scheduler_kwargs"] = {
                "dashboard_address": ":0",
                **options.get("scheduler_kwargs", {}),
            }
        if options["processes"]:
            _check_main_guard()
        for attempt in range(1, CLUSTER_START_ATTEMPTS + 1):
            try:
                return self._start_cluster(dist, options)
            except (TypeError, ValueError):  # bad cluster_options: no use retrying
                raise
            except Exception as error:  # a port taken, a worker that died starting
                if attempt == CLUSTER_START_ATTEMPTS:
                    raise RuntimeError(
                        f"could not start an embedded Dask LocalCluster after "
                        f"{attempt} attempts: {type(error).__name__}: {error}"
                    ) from error
                self._logger.warning(
                    "DaskExecutor %r: starting the embedded LocalCluster failed "
                    "(attempt %d of %d); trying again",
                    self._name,
                    attempt,
                    CLUSTER_START_ATTEMPTS,
                    exc_info=True,
                )
        raise AssertionError("unreachable")  # pragma: no cover

    def _start_cluster(
        self, dist: Any, options: Mapping[str, Any]
    ) -> distributed.Client:
        """Start a LocalCluster and a client of it, and wait for its workers; on
        failure, close whatever was started and raise."""
        self._cluster = dist.LocalCluster(**options)
        try:
            client: distributed.Client = dist.Client(
                self._cluster, set_as_default=False
            )
            try:
                workers = len(self._cluster.workers)
                if workers:
                    client.wait_for_workers(workers, timeout=CLUSTER_START_TIMEOUT)
            except BaseException:
                client.close()
                raise
        except BaseException:
            self._close_cluster()
            raise
        return client

    @property
    def client(self) -> distributed.Client:
        """The ``distributed.Client`` that the executor submits to (for its
        dashboard link, ``scheduler_info()``, ...); do not close it."""
        return self._client

    @property
    def submit_options(self) -> Mapping[str, Any]:
        """The options of ``Client.submit`` given to every task (a read-only
        mapping)."""
        return dict(self._submit_options)

    @property
    def owns_cluster(self) -> bool:
        """Whether :meth:`shutdown` closes a cluster the executor started
        (``bool``)."""
        return self._cluster is not None

    def submit(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> Future[T]:
        """Run ``fn(*args, **kwargs)`` as a new task on the cluster.

        Returns:
            A ``Future[T]`` resolved with what ``fn`` returns or raises on a
            worker.

        Raises:
            TypeError: ``fn`` is not callable; ``fn`` or an argument cannot be
                pickled (Dask's error).
            RuntimeError: the executor has been shut down, or its client closed.
        """
        return super().submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting work; then close the client and the cluster, if owned.

        A ``client`` given to the constructor is left open; a cluster reached by
        ``address`` is left running (only the executor's connection is closed).

        Args:
            wait: if ``True``, return once every future is done and what the
                executor owns is closed; if ``False``, return at once, and close
                it once the last future is done.
            cancel_futures: if ``True``, first cancel every future not done (its
                task is cancelled on the cluster).

        Calling it more than once is harmless. New submits raise ``RuntimeError``.
        """
        super().shutdown(wait, cancel_futures=cancel_futures)

    # -- the hooks of RemoteExecutor ----------------------------------------------

    def _submit_remote(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> distributed.Future[Any]:
        import uuid  # here, as Dask: import fluent_executors stays cheap

        from dask.utils import funcname

        # The arguments travel inside a partial, never as submit()'s own keyword
        # arguments, where Dask would take those named like its options.
        return self._client.submit(
            partial(fn, *args, **kwargs),
            key=f"{funcname(fn)}-{uuid.uuid4().hex}",
            pure=False,
            **self._submit_options,
        )

    def _add_done_callback(
        self, handle: distributed.Future[Any], callback: Callable[[], None]
    ) -> None:
        handle.add_done_callback(lambda _: callback())

    def _fetch(self, handle: distributed.Future[Any]) -> Any:
        return handle.result()

    def _cancel_remote(self, handle: distributed.Future[Any]) -> bool:
        handle.cancel()
        return True

    def _close_resources(self) -> None:
        if self._owns_client:
            self._client.close()
        self._close_cluster()

    def _close_cluster(self) -> None:
        if self._cluster is not None:
            self._cluster.close()

    def _repr_fields(self) -> dict[str, object]:
        return {"client": self._client}


def _check_main_guard() -> None:
    """Refuse to start an embedded cluster of worker processes from the top level
    of the main module outside an ``if __name__ == "__main__":`` guard.

    The workers are started with ``spawn``, and each imports the main module again:
    unguarded, the call would run in every worker, each starting a cluster of its
    own, and fail in thousands of lines of tracebacks. Checked here instead: in the
    parent, the main module's top-level line that led to this call is read from its
    source (no source: no check); in a spawned process that is still importing the
    main module (``multiprocessing``'s bootstrap phase), the start is refused too.

    Raises:
        RuntimeError: naming the guard, and the line of the main module.
    """
    import multiprocessing

    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise RuntimeError(_GUARD_MISSING.format(where="the main module"))
    where = _unguarded_main_line()
    if where is not None:
        raise RuntimeError(_GUARD_MISSING.format(where=where))


_GUARD_MISSING = (
    "an embedded Dask LocalCluster starts its worker processes with 'spawn', and "
    "each of them runs the main module again: this one starts the cluster at its "
    "top level ({where}), outside an 'if __name__ == \"__main__\":' guard, so every "
    "worker would start a cluster of its own. Put the code that creates the "
    "executor under 'if __name__ == \"__main__\":' (see docs/scaling.rst), or pass "
    "cluster_options={{'processes': False}} for worker threads."
)


def _unguarded_main_line() -> str | None:
    """``"<file>, line <n>"``: the line at the top level of the ``__main__`` module
    that led to this call, if it is outside every ``if __name__ == "__main__":``
    block; ``None`` if it is inside one, or there is no such line or no source."""
    import ast
    import sys

    main = sys.modules.get("__main__")
    frame = sys._getframe(1)
    while frame is not None and not (
        main is not None
        and frame.f_globals is vars(main)
        and frame.f_code.co_name == "<module>"
    ):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return None
    filename, line = frame.f_code.co_filename, frame.f_lineno
    try:
        with open(filename, "rb") as source:
            tree = ast.parse(source.read(), filename)
    except (OSError, SyntaxError, ValueError):
        return None  # no source to read (python -c, an interactive session)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.If)
            and "__name__" in ast.unparse(node.test)
            and "__main__" in ast.unparse(node.test)
            and node.body[0].lineno <= line <= (node.body[-1].end_lineno or line)
        ):
            return None
    return f"{filename}, line {line}"


def _check_arguments(
    address: object,
    client: object,
    cluster_options: object,
    submit_options: Mapping[str, Any],
) -> None:
    if address is not None:
        if not isinstance(address, str):
            raise TypeError(f"address must be a str, got {type(address).__name__}")
        if not address:
            raise ValueError("address must not be empty")
        if client is not None:
            raise TypeError("give address or client, not both")
    if cluster_options is not None:
        if not isinstance(cluster_options, Mapping):
            raise TypeError(
                "cluster_options must be a mapping, "
                f"got {type(cluster_options).__name__}"
            )
        if address is not None or client is not None:
            raise TypeError(
                "cluster_options configure the embedded cluster: they cannot be "
                "given with address or client"
            )
    unknown = sorted(set(submit_options) - SUBMIT_OPTIONS)
    if unknown:
        raise TypeError(
            f"unexpected submit options: {', '.join(unknown)}; the accepted ones "
            f"are {', '.join(sorted(SUBMIT_OPTIONS))} (every task is impure and "
            "gets a key of its own; the cluster's options go in cluster_options)"
        )


def _check_client(dist: Any, client: Any) -> None:
    if not isinstance(client, dist.Client):
        raise TypeError(
            f"client must be a distributed.Client, got {type(client).__name__}"
        )
    if client.asynchronous:
        raise ValueError("client must be synchronous, got an asynchronous client")
    if client.status in ("closing", "closed"):
        raise ValueError(f"client must be open, got a client {client.status}")
