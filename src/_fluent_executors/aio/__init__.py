"""The machinery of the async executors of :mod:`fluent_executors.aio`, each
module importing only from those below it (tests/test_layers.py):

- ``facade``: ``AsyncExecutors``, the executors at the bottom of a chain;
- ``executor``: ``AsyncExecutor``: ``run``, the ``async with`` block, stats, the
  chain methods, ``map``;
- ``mapping``: ``AsyncMap``, the runs of ``map`` in order, so many at once;
- ``layers``: what each layer does with a run, one class per kind;
- ``driver``: the async driver of the poll core: a poll layer's loop, its
  store's records, and ``PolledRun``, a polled run's handle.

It imports anyio: only :mod:`fluent_executors.aio` imports it, after checking that
the ``aio`` extra is installed.
"""
