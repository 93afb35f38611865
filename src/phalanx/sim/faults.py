"""Seeded node failures: each node fails after an exponential time with mean ``mtbf``, is
down for an exponential repair time with mean ``repair``, and so on, up to ``horizon``."""

from __future__ import annotations

import random
from dataclasses import dataclass

from phalanx.domain.time import Duration, Instant
from phalanx.engine.events import NodeDown, NodeUp

__all__ = ["FaultModel"]


@dataclass(frozen=True, slots=True)
class FaultModel:
    mtbf: Duration
    repair: Duration
    seed: int = 0

    def events(self, nodes: int, horizon: Instant) -> list[NodeDown | NodeUp]:
        rng = random.Random(self.seed * 7919 + 17)
        out: list[NodeDown | NodeUp] = []
        for node in range(nodes):
            t = 0.0
            while True:
                t += rng.expovariate(1.0 / self.mtbf)
                if t >= horizon:
                    break
                down = int(t)
                t += max(1.0, rng.expovariate(1.0 / self.repair))
                out.append(NodeDown(down, node))
                out.append(NodeUp(int(t), node))
        out.sort(key=lambda e: (e.at, e.node, isinstance(e, NodeUp)))
        return out
