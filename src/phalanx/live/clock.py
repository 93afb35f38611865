"""The wall clock: the live controller's implementation of the driver's clock port."""

from __future__ import annotations

import time

from phalanx.domain.time import Instant

__all__ = ["WallClock"]


class WallClock:
    def now(self) -> Instant:
        return time.time_ns() // 1_000_000

    def due(self, at: Instant) -> bool:
        return at <= time.time_ns() // 1_000_000
