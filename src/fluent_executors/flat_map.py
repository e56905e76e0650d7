"""The flat-map executor under the module name more-executors gives it, so that
``from more_executors.flat_map import FlatMapExecutor`` switches by the import
alone. It is defined beside :class:`~fluent_executors.MapExecutor`, in
``fluent_executors.map``."""

from .map import FlatMapExecutor

__all__ = ["FlatMapExecutor"]
