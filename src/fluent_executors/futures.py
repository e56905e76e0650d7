"""Functions that compose futures: map them, zip them, combine them with or/and.

They accept any :class:`concurrent.futures.Future` (those of the standard executors,
of this library, of other libraries that subclass it) and return a new
:class:`~fluent_executors.ProxyFuture`, which is a standard future that can also be
awaited. None of them blocks: the returned future is resolved from a done callback
of the inputs, in the thread that resolves the last input it needs (or at once, in
the calling thread, when the inputs are already done). A function given to them (a
map function, an error function) runs in that thread too; if it raises, the returned
future fails with that exception.

The signatures in the docstrings use the notation ``Future<A>`` for a future whose
result is of type ``A``.

They live in modules by family: transforming one future (``f_return``,
``f_map``, ``f_flat_map``, ``f_proxy``), combining many (``f_zip``,
``f_sequence``, ``f_traverse``, ``f_or``, ``f_and``, ``f_apply``), and time and
cancellation (``f_timeout``, ``f_nocancel``); every name is imported from here.
"""

from _fluent_executors.futures.combining import (
    f_and,
    f_apply,
    f_or,
    f_sequence,
    f_traverse,
    f_zip,
)
from _fluent_executors.futures.timing import f_nocancel, f_timeout
from _fluent_executors.futures.transforming import (
    f_flat_map,
    f_map,
    f_proxy,
    f_return,
    f_return_cancelled,
    f_return_error,
)
from _fluent_executors.public import publish

__all__ = [
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

publish(__name__, *(globals()[name] for name in __all__))
