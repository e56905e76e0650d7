"""The executors and chains that ``test_contract.py`` holds to one contract.

A :class:`Chain` is a base executor (``sync``, ``thread_pool`` or ``process_pool``)
wrapped in a sequence of :class:`Layer` s, innermost first; it builds a fresh
executor for each test, and its ``id`` reads as the chain does:
``thread_pool.with_map.with_retry``.

The layers are set up so that the contract can be checked on what comes out: the
poll functions resolve every descriptor with its result, the map functions are the
identity, the flat-map function returns a done future of the result, the timeouts
never fire (600 s), the limits never block for long, and retries wait a millisecond.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from wrapper_doubles import TIMEOUT

from fluent_executors import Executors, PollDescriptor, f_return

POLL_INTERVAL = 0.002  # seconds between polls while futures are polled
RETRY_SLEEP = 0.001  # seconds before the first retry (default policy: 3 attempts)


def resolve_all(descriptors: list[PollDescriptor[Any]]) -> None:
    """A poll function under which every remote task has finished."""
    for descriptor in descriptors:
        descriptor.yield_result()


def accept_cancel(result: Any) -> bool:
    """A cancel function that always manages to cancel the remote task."""
    return True


def identity(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Layer:
    """One wrapper of a chain: ``wrap(delegate)`` returns the wrapping executor."""

    name: str
    wrap: Callable[[Executor], Executor]


POLL = Layer(
    "with_poll",
    lambda e: Executors.with_poll(e, resolve_all, default_interval=POLL_INTERVAL),
)
POLL_CANCEL_FN = Layer(
    "with_poll_cancel_fn",
    lambda e: Executors.with_poll(
        e, resolve_all, cancel_fn=accept_cancel, default_interval=POLL_INTERVAL
    ),
)
# A poll executor without a cancel function inside a timeout: cancelling a polled
# future cancels it locally (docs/poll.rst, Cancelling), so the timeout ends it.
POLL_IN_TIMEOUT = Layer(
    "with_poll.with_timeout",
    lambda e: Executors.with_timeout(
        Executors.with_poll(e, resolve_all, default_interval=POLL_INTERVAL), 600.0
    ),
)
RETRY = Layer("with_retry", lambda e: Executors.with_retry(e, sleep=RETRY_SLEEP))
TIMEOUT_600 = Layer("with_timeout", lambda e: Executors.with_timeout(e, 600.0))
MAP = Layer("with_map", lambda e: Executors.with_map(e, identity))
FLAT_MAP = Layer("with_flat_map", lambda e: Executors.with_flat_map(e, f_return))
THROTTLE = Layer("with_throttle", lambda e: Executors.with_throttle(e, 16))
RATE_LIMIT = Layer(
    "with_rate_limit", lambda e: Executors.with_rate_limit(e, 100, period=0.01)
)
CANCEL_ON_SHUTDOWN = Layer(
    "with_cancel_on_shutdown", lambda e: Executors.with_cancel_on_shutdown(e)
)

SINGLE_LAYERS = (
    POLL,
    POLL_IN_TIMEOUT,
    RETRY,
    TIMEOUT_600,
    MAP,
    FLAT_MAP,
    THROTTLE,
    RATE_LIMIT,
    CANCEL_ON_SHUTDOWN,
)

# Every wrapper; poll, map, retry and timeout twice.
EVERY_WRAPPER = (
    POLL,
    MAP,
    RETRY,
    THROTTLE,
    TIMEOUT_600,
    FLAT_MAP,
    RATE_LIMIT,
    POLL_CANCEL_FN,
    CANCEL_ON_SHUTDOWN,
    POLL_IN_TIMEOUT,
    MAP,
    RETRY,
    TIMEOUT_600,
)


@dataclass
class Built:
    """A freshly built chain: its outermost and innermost executors."""

    outer: Any  # an Executor; Any, since the mapping executors retype submit()
    inner: Executor
    workers: int
    gates: list[threading.Event] = field(default_factory=list)

    def block_inner(self) -> threading.Event:
        """Occupy every worker of the innermost pool until the returned event is
        set, so that what is submitted next waits in the pool's queue."""
        gate = threading.Event()
        self.gates.append(gate)
        started = threading.Semaphore(0)

        def blocker() -> None:
            started.release()
            gate.wait(TIMEOUT)

        for _ in range(self.workers):
            self.inner.submit(blocker)
        for _ in range(self.workers):
            assert started.acquire(timeout=TIMEOUT), "the pool's workers never started"
        return gate

    def release(self) -> None:
        for gate in self.gates:
            gate.set()


@dataclass(frozen=True)
class Chain:
    """A base executor wrapped in ``layers``, innermost first."""

    base: str  # "sync", "thread_pool" or "process_pool"
    layers: Sequence[Layer] = ()
    alias: str | None = None  # the id's layer part, for chains too long to spell out
    workers: int = 4

    @property
    def id(self) -> str:
        if self.alias is not None:
            return f"{self.base}.{self.alias}"
        return ".".join([self.base, *(layer.name for layer in self.layers)])

    @property
    def layers_id(self) -> str:
        return self.id.partition(".")[2]

    @property
    def has_pool(self) -> bool:
        """Whether work can wait in the innermost executor (not the sync one)."""
        return self.base != "sync"

    def build(self) -> Built:
        inner: Executor
        if self.base == "sync":
            inner = Executors.sync(name="contract")
        elif self.base == "thread_pool":
            inner = Executors.thread_pool(max_workers=self.workers, name="contract")
        else:
            raise ValueError(f"no builder for base {self.base!r}")
        return Built(self.wrap(inner), inner, self.workers)

    def wrap(self, inner: Executor) -> Any:
        executor = inner
        for layer in self.layers:
            executor = layer.wrap(executor)
        return executor


CHAINS = [
    Chain("sync"),
    Chain("thread_pool"),
    *(Chain("thread_pool", (layer,)) for layer in SINGLE_LAYERS),
    Chain("sync", (POLL,)),
    Chain("sync", (RETRY, TIMEOUT_600)),
    Chain("thread_pool", (MAP, RETRY)),
    Chain("thread_pool", (THROTTLE, RATE_LIMIT, CANCEL_ON_SHUTDOWN, FLAT_MAP)),
    # The chain of the user guide (docs/guide.rst, "Composing executors").
    Chain("thread_pool", (POLL_CANCEL_FN, TIMEOUT_600, RETRY), workers=8),
    Chain("thread_pool", EVERY_WRAPPER, alias="every_wrapper"),
    Chain("sync", EVERY_WRAPPER, alias="every_wrapper"),
]

POOL_CHAINS = [chain for chain in CHAINS if chain.has_pool]

# Each distinct sequence of layers once, to put over a delegate that fails submits.
WRAPPER_CHAINS = list(
    {chain.layers_id: chain for chain in CHAINS if chain.layers}.values()
)
