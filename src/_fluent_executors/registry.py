"""The table of the library's executors, one row per class, and the methods made
from it: the facade's (``Executors.with_retry``), the chain methods
(``executor.with_retry``) and those of ``BoundCallable``.

Each row names its class by module and name, and each method imports that module
on its first call (:func:`load`): importing the table, the facade or
``FluentExecutor`` imports no executor's module, and nothing imports upward. A
method's signature is its class's (the parameters after the delegate, ``name``
defaulting to the delegate's), read by ``inspect.signature`` from the class when
asked, never written again. Type checkers read the classes' own signatures too,
except for the chain methods, whose signatures ``fluent`` states for them alone
(tests/test_registry.py checks that they are the classes').
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import inspect

__all__ = [
    "EXECUTORS",
    "WRAPPERS",
    "Row",
    "install",
    "load",
    "method_for",
    "name_of",
    "public",
    "with_classes",
]


class Row(NamedTuple):
    """One executor class of the library.

    Attributes:
        method: its method on the facade (``"with_retry"``, ``"sync"``); a
            wrapper's is its chain method's name too.
        module: the module that defines the class: a public one, relative to
            ``fluent_executors`` (``".retry"``), or the process pool's own
            (``"_fluent_executors.process_pool"``, imported on first use).
        cls: the class's name (``"RetryExecutor"``).
        kind: its ``stats().kind``, the ``type`` label of its metrics.
        stats: the name of the class of its ``stats()`` snapshot.
        wraps: whether it wraps a delegate (a ``with_*`` method); ``False`` for a
            base executor, built with no delegate.
        keeps_result: whether its futures have its delegate's result type
            (``False`` for map and flat map, whose functions decide it).
        bound: whether ``BoundCallable`` has its method too (not asyncio, whose
            futures are ``asyncio.Future`` objects).
    """

    method: str
    module: str
    cls: str
    kind: str
    stats: str = "ExecutorStats"
    wraps: bool = True
    keeps_result: bool = True
    bound: bool = True


def _base(method: str, module: str, cls: str, kind: str) -> Row:
    """The row of a base executor."""
    return Row(method, module, cls, kind, wraps=False, bound=False)


# Every concrete executor class of the library (tests/test_registry.py checks it
# against the subclasses of FluentExecutor): the base executors, then the wrappers.
EXECUTORS: tuple[Row, ...] = (
    _base("thread_pool", ".pools", "ThreadPoolExecutor", "threadpool"),
    _base(
        "process_pool",
        "_fluent_executors.process_pool",
        "ProcessPoolExecutor",
        "processpool",
    ),
    _base(
        "interpreter_pool",
        "_fluent_executors.interpreter_pool",
        "InterpreterPoolExecutor",
        "interpreterpool",
    ),
    _base("sync", ".sync", "SyncExecutor", "sync"),
    _base("dask", ".dask", "DaskExecutor", "dask"),
    _base("ray", ".ray", "RayExecutor", "ray"),
    Row("with_poll", ".poll", "PollExecutor", "poll", "PollStats"),
    Row("with_retry", ".retry", "RetryExecutor", "retry", "RetryStats"),
    Row("with_timeout", ".timeout", "TimeoutExecutor", "timeout", "TimeoutStats"),
    Row("with_map", ".map", "MapExecutor", "map", keeps_result=False),
    Row("with_flat_map", ".map", "FlatMapExecutor", "flat_map", keeps_result=False),
    Row("with_throttle", ".throttle", "ThrottleExecutor", "throttle", "QueueStats"),
    Row(
        "with_rate_limit",
        ".rate_limit",
        "RateLimitExecutor",
        "rate_limit",
        "RateLimitStats",
    ),
    Row(
        "with_cancel_on_shutdown",
        ".cancel_on_shutdown",
        "CancelOnShutdownExecutor",
        "cancel_on_shutdown",
    ),
    Row("with_asyncio", ".asyncio", "AsyncioExecutor", "asyncio", bound=False),
)
WRAPPERS: tuple[Row, ...] = tuple(row for row in EXECUTORS if row.wraps)


def public(module: str, name: str) -> Any:
    """The public name ``name`` of the package's module ``module`` (``".bind"``),
    the module imported on first use: the way a lower layer reaches a class above
    it without an import statement."""
    import importlib

    return getattr(importlib.import_module(module, "fluent_executors"), name)


def load(row: Row) -> type[Any]:
    """The class of ``row``, its module imported on first use."""
    cls: type[Any] = public(row.module, row.cls)
    return cls


def install(owner: type, rows: tuple[Row, ...], make: Callable[[Row], object]) -> None:
    """Give ``owner`` the method ``make(row)`` for each row of ``rows`` that it does
    not define itself."""
    for row in rows:
        if row.method not in vars(owner):
            setattr(owner, row.method, make(row))


def with_classes(names: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """``names``, a table of public names by module, with every executor class
    added to its module's."""
    table = dict(names)
    for row in EXECUTORS:
        table[row.module] = (*table.get(row.module, ()), row.cls)
    return table


def name_of(executor: Executor, name: str | None = None) -> str:
    """``name`` if given, else the ``name`` of ``executor`` if it has a string one,
    else ``"default"``: the name of a wrapper built around ``executor``."""
    if name is not None:
        return name
    name = getattr(executor, "name", "default")
    return name if isinstance(name, str) else "default"


class _Signature(type):
    """The type of what a made method's ``__wrapped__`` is: a class standing for
    its signature, worked out from the executor's class when ``inspect.signature``
    asks (:mod:`inspect` is not imported before). A class, not an object: a tool
    that unwraps a method to judge whether it is one (Sphinx's autodoc) takes a
    method wrapping a class for one, as it does a constructor."""

    _row: Row
    _owner: str

    @classmethod
    def of(mcs, row: Row, owner: str) -> _Signature:
        """The stand-in for the signature of ``row``'s method of ``owner``."""
        return mcs(row.method, (), {"_row": row, "_owner": owner})

    @property
    def __signature__(cls) -> inspect.Signature:
        import inspect

        row = cls._row
        executor = load(row)
        signature = inspect.signature(executor)
        parameters = list(signature.parameters.values())
        if row.wraps:
            if cls._owner == "FluentExecutor":  # self is the delegate
                parameters[0] = inspect.Parameter(
                    "self", inspect.Parameter.POSITIONAL_OR_KEYWORD
                )
            parameters = [
                p.replace(default=None, annotation="str | None")
                if p.name == "name"
                else p
                for p in parameters
            ]
        return signature.replace(parameters=parameters, return_annotation=executor)


def method_for(row: Row, owner: str) -> Callable[..., Any]:
    """The method ``row.method`` of ``owner`` (``"Executors"``,
    ``"FluentExecutor"`` or ``"BoundCallable"``): ``row``'s constructor, its class
    imported on the first call, except that a wrapper's ``name`` (positional or
    keyword), when not given or ``None``, is the delegate's (:func:`name_of`), and
    that a wrong keyword argument's ``TypeError`` names ``<owner>.<method>()``
    (:func:`~_fluent_executors.errors.called_as`). A chain method takes ``self`` as
    the delegate. Its signature is the class's (see :class:`_Signature`)."""
    called = f"{owner}.{row.method}"
    made: list[tuple[type[Any], int]] = []  # the class and where name is, once known

    def constructor() -> tuple[type[Any], int]:
        if not made:
            cls = load(row)
            code = cls.__init__.__code__
            positional = code.co_varnames[: code.co_argcount]  # self, delegate, ...
            at = positional.index("name") - 2 if "name" in positional else -1
            made.append((cls, at))
        return made[0]

    method: Callable[..., Any]
    if row.wraps:

        def wrap(delegate: Executor, *args: Any, **kwargs: Any) -> Any:
            from .errors import called_as

            cls, at = constructor()
            if 0 <= at < len(args):
                args = (*args[:at], name_of(delegate, args[at]), *args[at + 1 :])
            else:
                kwargs["name"] = name_of(delegate, kwargs.get("name"))
            return called_as(called, cls, delegate, *args, **kwargs)

        method = wrap
    else:

        def build(*args: Any, **kwargs: Any) -> Any:
            from .errors import called_as

            return called_as(called, constructor()[0], *args, **kwargs)

        method = build

    method.__name__ = row.method
    method.__qualname__ = called
    method.__module__ = "fluent_executors"
    method.__wrapped__ = _Signature.of(row, owner)  # type: ignore[union-attr]
    method.__doc__ = _doc(row, owner)
    return method


def _doc(row: Row, owner: str) -> str:
    """The docstring of the method ``row.method`` of ``owner``."""
    kind, method = row.cls, row.method
    see = f"(see :class:`~fluent_executors.{kind}`)"
    if not row.wraps:
        return f"""Return a new :class:`~fluent_executors.{kind}`.

        ``Executors.{method}(...)`` is ``{kind}(...)``: the same arguments, in the
        same order {see}, except that a wrong keyword argument's ``TypeError``
        names ``Executors.{method}()``.
        """
    if owner == "FluentExecutor":
        returns = (
            f"A ``{kind}[R]``: its futures have this executor's result type."
            if row.keeps_result
            else f"A ``{kind}[U]``, for functions whose results are ``U``."
        )
        return f"""Wrap this executor in a :class:`~fluent_executors.{kind}`.

        Same as ``Executors.{method}(self, ...)``; see
        :meth:`Executors.{method} <fluent_executors.Executors.{method}>`.

        Returns:
            {returns}
        """
    return f"""Wrap ``delegate`` in a :class:`~fluent_executors.{kind}`.

        ``Executors.{method}(delegate, ...)`` is ``{kind}(delegate, ...)``: the
        same arguments, in the same order {see}, except that ``name``, unless
        given, is ``delegate``'s name rather than ``"default"`` (see
        :ref:`guide-names`). On a :class:`~fluent_executors.BoundCallable`,
        ``bound.{method}(...)`` wraps its executor so, and returns a new
        ``BoundCallable`` of the same function.

        Returns:
            A ``{kind}[R]`` if ``delegate`` is a
            :class:`~fluent_executors.FluentExecutor` of result type ``R`` (the
            result type passes down the chain), else a ``{kind}[SameResult]``
            (for ``with_map`` and ``with_flat_map``, their functions' result type).

        Raises:
            TypeError: ``delegate`` has no ``submit`` method, or an argument has
                the wrong type, as for :class:`~fluent_executors.{kind}`.
            ValueError: an argument is out of range, as for
                :class:`~fluent_executors.{kind}`.
        """
