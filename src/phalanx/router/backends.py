"""The endpoints behind one Service port and the choice among them.

``Pool.choose(now)`` picks the ready endpoint with the fewest outstanding requests; ties go
round-robin (a rotating start), so an idle service spreads its requests evenly. An endpoint
that refused a connection is marked down (``mark_down``) and skipped: first for
``DOWN_S``, doubling while it keeps refusing up to ``DOWN_MAX_S`` (a container restarted on
the same port gets traffic back by itself); a new endpoint list from the API that no longer
calls it ready, or calls a new pod ready at that address, settles it either way.

``Pool.wait_ready(timeout)`` is the hold: a request that finds no ready endpoint waits for
one (``set_endpoints`` wakes it), at most ``max_held`` at a time; the count held is the
demand an autoscaler scaling from zero reads.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

__all__ = ["DOWN_MAX_S", "DOWN_S", "Endpoint", "HoldFull", "Pool"]

DOWN_S = 1.0
DOWN_MAX_S = 30.0


class HoldFull(Exception):
    """More requests are held for the pool than it may hold."""


@dataclass(eq=False)
class Endpoint:
    """One address:port; ``ref`` names what serves it (the pod's uid), so a new pod at an
    old address is a new endpoint."""

    host: str
    port: int
    ready: bool = True
    ref: str = ""
    outstanding: int = 0
    down_until: float = 0.0
    down_for: float = 0.0
    refusals: int = 0
    sent: int = 0
    """Requests sent to it (each try counts: a refused one too)."""
    refused: int = 0
    """Connections it refused, in all."""

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.host, self.port, self.ref)

    def usable(self, now: float) -> bool:
        return self.ready and now >= self.down_until

    def snapshot(self, now: float) -> dict[str, object]:
        """What the admin endpoint shows of it (``phalanx.router`` docstring)."""
        return {
            "address": self.host,
            "port": self.port,
            "pod_uid": self.ref,
            "ready": self.ready,
            "usable": self.usable(now),
            "outstanding": self.outstanding,
            "requests_sent": self.sent,
            "refused": self.refused,
        }


class Pool:
    """The endpoints of one Service port (module docstring)."""

    def __init__(self, max_held: int = 1000) -> None:
        self.endpoints: list[Endpoint] = []
        self.max_held = max_held
        self.held = 0
        self._next = 0
        self._changed = asyncio.Event()

    # -- the API's view --------------------------------------------------------------------

    def set_endpoints(self, wanted: list[tuple[str, int, bool, str]]) -> None:
        """Replace the endpoint list with ``(host, port, ready, ref)``s; an endpoint kept
        keeps its outstanding count and, while the API still calls it ready, its down mark."""
        old = {e.key: e for e in self.endpoints}
        fresh: list[Endpoint] = []
        for host, port, ready, ref in wanted:
            found = old.pop((host, port, ref), None)
            if found is None:
                found = Endpoint(host, port, ready, ref)
            elif ready and not found.ready:
                found.down_until, found.down_for = 0.0, 0.0  # ready again: trust it again
            found.ready = ready
            fresh.append(found)
        self.endpoints = fresh
        self._wake()

    # -- choosing --------------------------------------------------------------------------

    def choose(self, now: float, exclude: frozenset[int] = frozenset()) -> Endpoint | None:
        """The usable endpoint with the fewest outstanding requests (ties: round-robin),
        ``exclude``: ``id()`` of endpoints already tried for this request. Counts it
        outstanding: the caller must ``release`` it."""
        n = len(self.endpoints)
        best: Endpoint | None = None
        for i in range(n):
            e = self.endpoints[(self._next + i) % n]
            if id(e) in exclude or not e.usable(now):
                continue
            if best is None or e.outstanding < best.outstanding:
                best = e
        if best is None:
            return None
        self._next = (self.endpoints.index(best) + 1) % n
        best.outstanding += 1
        best.sent += 1
        return best

    def release(self, endpoint: Endpoint, ok: bool = True) -> None:
        endpoint.outstanding -= 1
        if ok:
            endpoint.refusals = 0
            endpoint.down_for = 0.0

    def mark_down(self, endpoint: Endpoint, now: float) -> None:
        """``endpoint`` refused a connection: skip it for a while (longer each time)."""
        endpoint.refusals += 1
        endpoint.refused += 1
        endpoint.down_for = min(DOWN_MAX_S, endpoint.down_for * 2 or DOWN_S)
        endpoint.down_until = now + endpoint.down_for

    def ready_count(self, now: float) -> int:
        return sum(1 for e in self.endpoints if e.usable(now))

    def next_up(self, now: float) -> float | None:
        """When the first endpoint marked down may be tried again (None: none is down)."""
        times = [e.down_until for e in self.endpoints if e.ready and e.down_until > now]
        return min(times) if times else None

    # -- holding ---------------------------------------------------------------------------

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_change(self, timeout: float) -> None:
        """Wait until the endpoint list changes or ``timeout`` seconds pass; ``HoldFull``
        when ``max_held`` requests wait already."""
        if self.held >= self.max_held:
            raise HoldFull
        event = self._changed
        self.held += 1
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            self.held -= 1
