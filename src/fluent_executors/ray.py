"""RayExecutor: run callables as Ray tasks, behind the standard executor API."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, NamedTuple, ParamSpec, TypeVar

from _fluent_executors.errors import install_hint
from _fluent_executors.remote import RemoteExecutor
from _fluent_executors.wrapper import check_logger, check_name

__all__ = ["RayExecutor"]

T = TypeVar("T")
P = ParamSpec("P")


def _import_ray() -> Any:
    # Ray is optional, and large: imported only here, and typed as Any so that the
    # type checkers need not have it installed.
    try:
        return importlib.import_module("ray")
    except ImportError as error:
        raise ImportError(f"RayExecutor needs Ray: {install_hint('ray')}") from error


def _make_runner() -> Callable[..., Any]:
    # Defined in a function, the runner is pickled by value: Ray's workers run it
    # without importing this package, which a remote cluster may not have.
    def run(
        fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return fn(*args, **kwargs)

    run.__name__ = run.__qualname__ = "fluent_executors_task"
    return run


class _RayTask(NamedTuple):
    ref: Any  # the ray.ObjectRef of the task's result
    future: Future[Any]  # ref.future(), resolved on one of Ray's threads


class RayExecutor(RemoteExecutor[_RayTask]):
    """An executor that runs callables as Ray tasks.

    Ray has no :class:`concurrent.futures.Executor`; this is one. :meth:`submit`
    runs ``fn(*args, **kwargs)`` as a Ray task and returns a standard
    :class:`~concurrent.futures.Future` (through Ray's ``ObjectRef.future()``), so
    every wrapper of this library, :func:`~concurrent.futures.wait` and
    :func:`~concurrent.futures.as_completed` work with Ray.

    - If Ray is not initialized in this process, the constructor calls
      ``ray.init(**init_kwargs)`` (a local Ray instance, or
      ``address="ray://host:10001"`` for a cluster) and :meth:`shutdown` calls
      ``ray.shutdown()``. If it is, the executor uses it and leaves it running.
    - Keyword arguments reach the callable whatever their names (``num_cpus``,
      ``max_retries``, ...); the options of Ray tasks are given once, as
      ``remote_options``.
    - Callables and arguments are pickled (cloudpickle) to reach Ray's workers;
      :meth:`submit` raises the error if that fails. Ray ``ObjectRef`` s among the
      arguments are passed as they are, not replaced by their values.
    - ``cancel()`` calls ``ray.cancel()`` on the task and succeeds unless the
      future is done: a task not started never runs; a running one is interrupted
      with ``KeyboardInterrupt`` (Ray's default), and its future is cancelled at
      once.
    - A task that raises fails its future with Ray's ``RayTaskError``, which is
      also an instance of the task's exception type (``except ValueError`` works).
      A task whose worker process dies is retried by Ray (``max_retries``, 3 by
      default), then fails with ``ray.exceptions.WorkerCrashedError``.
    - Results are fetched, and futures resolved, in up to four threads named
      ``fluent-executors-ray-<name>_<n>``, never in Ray's own: done callbacks run
      there and may block.
    - :meth:`~concurrent.futures.Future.running` is always ``False``.

    A ``FluentExecutor[SameResult]`` (see :ref:`guide-result-types`).

    Args:
        logger: where to log (a cancel that fails); default
            ``logging.getLogger("fluent_executors.ray")``.
        name: the executor's name, used in thread names and passed down chains.
        remote_options: options of the Ray tasks (``ray.remote`` /
            ``.options()``: ``num_cpus``, ``num_gpus``, ``resources``,
            ``max_retries``, ``runtime_env``, ...).
        init_kwargs: arguments of ``ray.init()``, used only if Ray is not
            initialized yet.

    Raises:
        ImportError: Ray is not installed (install the ``ray`` extra).
        TypeError: ``name`` is not a ``str``; ``remote_options`` is not a
            mapping.
        ValueError: ``init_kwargs`` are given but Ray is already initialized;
            Ray refuses a remote option.
    """

    def __init__(
        self,
        logger: logging.Logger | None = None,
        name: str = "default",
        *,
        remote_options: Mapping[str, Any] | None = None,
        **init_kwargs: Any,
    ) -> None:
        check_name(name)
        check_logger(logger)
        if remote_options is not None and not isinstance(remote_options, Mapping):
            raise TypeError(
                f"remote_options must be a mapping, got {type(remote_options).__name__}"
            )
        ray = _import_ray()
        if ray.is_initialized() and init_kwargs:
            raise ValueError(
                "Ray is already initialized in this process, so init_kwargs ("
                + ", ".join(sorted(init_kwargs))
                + ") cannot be applied; give none to use the running Ray"
            )
        remote = ray.remote(_make_runner())
        if remote_options:
            remote = remote.options(**remote_options)
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(**init_kwargs)
        super().__init__(name, "ray", logger)
        self._ray = ray
        self._remote = remote
        self._open_metrics()

    @property
    def owns_ray(self) -> bool:
        """Whether the executor started Ray, and :meth:`shutdown` stops it
        (``bool``)."""
        return self._owns_ray

    def submit(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> Future[T]:
        """Run ``fn(*args, **kwargs)`` as a Ray task.

        Returns:
            A ``Future[T]`` resolved with what ``fn`` returns or raises.

        Raises:
            TypeError: ``fn`` is not callable; ``fn`` or an argument cannot be
                pickled (Ray's error).
            RuntimeError: the executor has been shut down.
        """
        return super().submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting work; then shut Ray down if the executor started it.

        Args:
            wait: if ``True``, return once every future is done (and Ray is shut
                down, if owned); if ``False``, return at once, and shut Ray down
                once the last future is done.
            cancel_futures: if ``True``, first cancel every future not done (its
                Ray task is cancelled).

        Calling it more than once is harmless. New submits raise ``RuntimeError``.
        """
        super().shutdown(wait, cancel_futures=cancel_futures)

    # -- the hooks of RemoteExecutor ----------------------------------------------

    def _submit_remote(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _RayTask:
        ref = self._remote.remote(fn, args, kwargs)
        future: Future[Any] = ref.future()
        return _RayTask(ref, future)

    def _add_done_callback(
        self, handle: _RayTask, callback: Callable[[], None]
    ) -> None:
        handle.future.add_done_callback(lambda _: callback())

    def _fetch(self, handle: _RayTask) -> Any:
        return handle.future.result()

    def _cancel_remote(self, handle: _RayTask) -> bool:
        self._ray.cancel(handle.ref)
        return True

    def _close_resources(self) -> None:
        if self._owns_ray:
            self._ray.shutdown()

    def __repr__(self) -> str:
        return f"<RayExecutor {self.name!r} owns_ray={self._owns_ray}>"
