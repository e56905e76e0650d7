"""The machinery of :class:`~fluent_executors.PollExecutor` (public module:
``fluent_executors.poll``), a poll core and its drivers, each layer importing only
from those below it:

- ``thread``: the thread driver, the poll thread of a ``PollExecutor``; a thin
  loop that feeds the core events, and calls the poll and cancel functions;
- ``keeper``: ``StoreKeeper``, the records of the futures in the executor's
  store (durable polling), written and renewed by the poll thread;
- ``driver``: ``DriverBase``, what both drivers keep (the settings, the core
  made of them, its lock) and do alike;
- ``reports``: what every driver logs, and does, after a call of the poll
  function (a failed call settled as the core decided);
- ``descriptor``: ``PollDescriptor``, what the poll function is given, and the
  executor's future, with the methods a driver calls on them (``PollDriver``);
- ``settings``: ``PollSettings``, a poll executor's arguments checked once
  (threaded or async alike), and the core they make;
- ``core``: the poll core, the decisions of each round as a state machine that does
  no I/O, starts no thread and reads no clock (``PollCore``, ``PollEntry``);
- ``rounds``: the list of descriptors that each round passes to the poll function.
"""
