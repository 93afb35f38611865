"""The clock port and its two in-memory implementations.

A driver asks its clock two things: what time it is (``now``), and whether an event due at
``at`` may be handled yet (``due``). The wall clock (``phalanx.live.clock``) answers by the
time of day; a virtual clock jumps to ``at`` and answers yes, so a simulation runs as fast as
it can; a fake clock moves only when a test moves it.
"""

from __future__ import annotations

from typing import Protocol

from mypy_extensions import mypyc_attr

from phalanx.domain.time import Instant

__all__ = ["Clock", "FakeClock", "VirtualClock"]


class Clock(Protocol):
    def now(self) -> Instant:
        """Milliseconds since the Unix epoch (or since a virtual or fake clock's zero)."""

    def due(self, at: Instant) -> bool:
        """Whether time has reached ``at``: the driver handles an event only once it has.
        Called with non-decreasing ``at`` by one driver."""


@mypyc_attr(allow_interpreted_subclasses=True)
class VirtualClock:
    """Simulated time: it is always the instant of the next event (it jumps there)."""

    __slots__ = ("_now",)

    def __init__(self, start: Instant = 0) -> None:
        self._now = start

    def now(self) -> Instant:
        return self._now

    def due(self, at: Instant) -> bool:
        if at > self._now:
            self._now = at
        return True


@mypyc_attr(allow_interpreted_subclasses=True)
class FakeClock:
    """A clock that moves only when told to (``set`` never goes backwards)."""

    __slots__ = ("_now",)

    def __init__(self, start: Instant = 0) -> None:
        self._now = start

    def now(self) -> Instant:
        return self._now

    def due(self, at: Instant) -> bool:
        return at <= self._now

    def set(self, at: Instant) -> None:
        if at < self._now:
            raise ValueError(f"the clock cannot go back from {self._now} to {at}")
        self._now = at

    def advance(self, by: Instant) -> None:
        self.set(self._now + by)
