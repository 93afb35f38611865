"""The clock is a tiny interface: the wall clock live, a fake one in tests."""

from __future__ import annotations

import time
from typing import Protocol

from phalanx.domain.time import Instant

__all__ = ["Clock", "FakeClock", "WallClock"]


class Clock(Protocol):
    def now(self) -> Instant:
        """Milliseconds since the Unix epoch (or since the fake clock's zero)."""


class WallClock:
    def now(self) -> Instant:
        return time.time_ns() // 1_000_000


class FakeClock:
    """A clock that moves only when told to (``set`` never goes backwards)."""

    def __init__(self, start: Instant = 0) -> None:
        self._now = start

    def now(self) -> Instant:
        return self._now

    def set(self, at: Instant) -> None:
        if at < self._now:
            raise ValueError(f"the clock cannot go back from {self._now} to {at}")
        self._now = at

    def advance(self, by: Instant) -> None:
        self.set(self._now + by)
