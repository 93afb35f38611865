"""Volcano's proportion plugin: each queue's deserved resources, by water-filling over weights.

As ``pkg/scheduler/plugins/proportion/proportion.go`` (``OnSessionOpen``) computes it, once per
session: every queue with jobs starts with nothing deserved. Each round, what remains of the
cluster is split among the queues not yet satisfied in proportion to their weights; a queue's
deserved is then capped by its real capability (the cluster less every queue's guarantee,
plus its own guarantee, within its ``capability``) and by its request (what it runs and waits
for), and raised to its guarantee. A queue whose request is met, or whose deserved no longer
grows, is satisfied. What the round handed out beyond the caps returns to the remainder; the
rounds stop when nothing remains, when the remainder stops changing, or when every queue is
satisfied. A resource a queue's capability does not name is not capped; one its request does
not name is not asked for.

Amounts are floats (Volcano's are) in thousandths of their unit, by resource name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from phalanx.domain.queues.volcano import VolcanoQueue

__all__ = ["QueueDemand", "deserved"]

_EPSILON = 1e-6
"""Below this an amount counts as none (Volcano's ``minResource``)."""

Amounts = dict[str, float]


@dataclass(frozen=True, slots=True)
class QueueDemand:
    """A queue with jobs this session, and what its jobs hold and wait for together."""

    queue: VolcanoQueue
    request: Mapping[str, float]


def deserved(total: Mapping[str, float], demands: Sequence[QueueDemand]) -> dict[str, Amounts]:
    """Each queue's deserved resources (module docstring), by queue name."""
    names = list(total)
    guarantee_sum = {r: sum(d.queue.guarantee.get(r, 0) for d in demands) for r in names}
    real_cap: dict[str, Amounts] = {}
    for d in demands:
        cap = {
            r: max(0.0, total[r] - guarantee_sum[r]) + d.queue.guarantee.get(r, 0) for r in names
        }
        for r, limit in d.queue.capability.items():
            if r in cap:
                cap[r] = min(cap[r], limit)
        real_cap[d.queue.name] = cap
    out: dict[str, Amounts] = {d.queue.name: dict.fromkeys(names, 0.0) for d in demands}
    remaining = dict(total)
    met: set[str] = set()
    while True:
        weight = sum(d.queue.weight for d in demands if d.queue.name not in met)
        if weight == 0:
            break
        before = dict(remaining)
        increased = dict.fromkeys(names, 0.0)
        decreased = dict.fromkeys(names, 0.0)
        for d in demands:
            name = d.queue.name
            if name in met:
                continue
            old = out[name]
            new = {r: old[r] + before[r] * d.queue.weight / weight for r in names}
            new = {r: min(new[r], real_cap[name][r]) for r in names}
            new = {r: min(new[r], d.request.get(r, 0.0)) for r in names}
            new = {r: max(new[r], float(d.queue.guarantee.get(r, 0))) for r in names}
            out[name] = new
            if all(d.request.get(r, 0.0) <= new[r] + _EPSILON for r in names):
                met.add(name)
            elif all(abs(new[r] - old[r]) <= _EPSILON for r in names):
                met.add(name)  # capped: it cannot grow any more
            for r in names:
                delta = new[r] - old[r]
                if delta > 0:
                    increased[r] += delta
                else:
                    decreased[r] -= delta
        remaining = {r: max(0.0, before[r] + decreased[r] - increased[r]) for r in names}
        empty = all(v <= _EPSILON for v in remaining.values())
        if empty or all(abs(remaining[r] - before[r]) <= _EPSILON for r in names):
            break
    return out
