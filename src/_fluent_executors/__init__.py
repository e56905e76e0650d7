# The layers, top to bottom: a module imports, at module level, only from its own
# line and the lines below it (tests/test_layers.py reads this sketch and checks it;
# every module of the package is on it). Modules first, then what they are.
#
#   progress process_pool interpreter_pool
#                                   progress(); ProcessPoolExecutor (it imports
#                                   multiprocessing: imported on first use);
#                                   InterpreterPoolExecutor (3.14+, the same)
#   aio                             the async executors' machinery (a package of
#                                   its own layers: facade > executor > mapping
#                                   > layers > driver)
#   library_pool futures waiting    what both pools add to the standard ones; the
#                                   future combinators (a package: transforming,
#                                   combining, timing, checks); as_completed and
#                                   wait with an idle timeout
#   poll retry_policy queueing remote  poll's machinery (a package of its own
#                                   layers: thread > driver > reports
#                                   > descriptor > settings > core > rounds);
#                                   retry policies; the queue of throttle and rate
#                                   limit; the base of dask and ray
#   adaptive hints                  the adaptive rate of a rate limit; delays
#                                   that a failure carries (Retry-After)
#   durable                         durable polling's store protocol, its records and
#                                   errors, and what the SQL stores share
#   wrapper                         what the wrappers share: delegate, shutdown, checks
#   fluent outstanding              FluentExecutor and its with_* methods (each
#                                   imports its wrapper's public module when
#                                   called: the one reach upward); the futures
#                                   outstanding until a shutdown ends
#   counts stats                    the counts of stats() and metrics; the snapshots
#   exporters metrics tracing       metrics (the exporters of Prometheus and
#                                   OpenTelemetry are imported when the first
#                                   executor starts them); OpenTelemetry spans,
#                                   and the submitter's context carried to the work
#   proxy scheduler clock errors    ProxyFuture; the shared timer thread; the
#                                   clock; the library's exceptions
#   resolvable waiters handoff work_item  ProxyFuture's base: the standard
#                                   future API over one lock, resolved once; what
#                                   it holds of waiters and done callbacks; the
#                                   library's thread pool's work items, and the
#                                   one of a call whose follower is known (a poll
#                                   future's), in place of a future of its own
#   callbacks bounded_map           running users' callbacks (contained, flat);
#                                   Executor.map with buffersize, on every Python
#   logging                         the contained logger; per-future records (TRACE)
#   stdlib_compat public            what is read of CPython beyond its API: private
#                                   names, its version, its GIL (the portable mode);
#                                   the public module of what private ones define,
#                                   and the lazy names of the public package
#
# No module here imports a public one (fluent_executors.*) at module level; in a
# function, only fluent.py's chain methods and bind() do, importing the wrapper
# (or bind) module they build when called, and aio's driver, the SQLite store of
# a with_poll(store=path) (tests/test_layers.py). Its
# loggers keep the names under fluent_executors that the docs give
# (fluent_executors._proxy, ._scheduler, ...), so that the fluent_executors logger
# controls them. Deferred, though not up: stats (dataclasses import inspect), by
# stats(); exporters, when the first executor is created.

"""The private modules of :mod:`fluent_executors`: everything its public modules are
made of. Nothing here is public API: import from ``fluent_executors``.
"""
