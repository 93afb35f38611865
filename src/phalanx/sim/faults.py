"""Seeded faults of nodes, each an independent stream per node up to ``horizon``:

- node failures (``mtbf``, ``repair``): the node fails after an exponential time with mean
  ``mtbf`` (its jobs end as on a node failure), is down for an exponential repair time with
  mean ``repair``, and so on;
- GPU faults found by the health checks (``gpu_mtbf``, ``gpu_repair``): after an exponential
  time with mean ``gpu_mtbf`` a GPU fault drains the node (a share ``fatal_fraction`` of them
  are fatal Xids that also requeue its jobs at once; the others let them finish), and the
  node is resumed after an exponential repair time with mean ``gpu_repair`` counted from the
  fault (a repair that comes while jobs still run lifts the drain early: a simplification).

The two kinds draw from separate seeded streams, so adding one leaves the other unchanged.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from phalanx.domain.time import Duration, Instant
from phalanx.engine.events import NodeDown, NodeUp, NodeUpdate

__all__ = ["HEALTH_USER", "FaultModel"]

HEALTH_USER = "healthcheck"
"""Who drains a node in a simulated health check (as in the live controller)."""


@dataclass(frozen=True, slots=True)
class FaultModel:
    mtbf: Duration | None
    repair: Duration
    seed: int = 0
    gpu_mtbf: Duration | None = None
    gpu_repair: Duration = 0
    fatal_fraction: float = 0.5

    def events(self, nodes: int, horizon: Instant) -> list[NodeDown | NodeUp | NodeUpdate]:
        out: list[NodeDown | NodeUp | NodeUpdate] = []
        if self.mtbf is not None:
            rng = random.Random(self.seed * 7919 + 17)
            for node in range(nodes):
                for down, up in _spells(rng, self.mtbf, self.repair, horizon):
                    out.append(NodeDown(down, node))
                    out.append(NodeUp(up, node))
        if self.gpu_mtbf is not None:
            rng = random.Random(self.seed * 7919 + 29)
            for node in range(nodes):
                for down, up in _spells(rng, self.gpu_mtbf, self.gpu_repair, horizon):
                    fatal = rng.random() < self.fatal_fraction
                    reason = "Xid 79 (simulated)" if fatal else "GPU degraded (simulated)"
                    out.append(NodeUpdate(down, node, "drain", reason, HEALTH_USER, kill=fatal))
                    out.append(NodeUpdate(up, node, "resume", user=HEALTH_USER))
        out.sort(key=lambda e: (e.at, e.node, _rank(e)))
        return out


def _spells(
    rng: random.Random, mean_up: Duration, mean_repair: Duration, horizon: Instant
) -> list[tuple[Instant, Instant]]:
    """(start, end) of each fault of one node: exponential times between them."""
    out: list[tuple[Instant, Instant]] = []
    t = 0.0
    while True:
        t += rng.expovariate(1.0 / mean_up)
        if t >= horizon:
            return out
        start = int(t)
        t += max(1.0, rng.expovariate(1.0 / mean_repair) if mean_repair > 0 else 1.0)
        out.append((start, int(t)))


def _rank(event: NodeDown | NodeUp | NodeUpdate) -> int:
    """At one instant: a fault before a return to service."""
    if isinstance(event, NodeUpdate):
        return 1 if event.state == "resume" else 0
    return 1 if isinstance(event, NodeUp) else 0
