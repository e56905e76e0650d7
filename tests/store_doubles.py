"""What the tests of the stores and of durable polling share: a lease, and a wall
clock that the test moves."""

from __future__ import annotations

LEASE = 30.0  # seconds


class Clock:
    """A wall clock the test moves: seconds since the epoch (a store's ``clock``)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now
