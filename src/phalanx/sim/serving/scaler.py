"""Autoscalers: how many replicas a service wants, from what it observes. Sans-IO.

``Scaler`` is the one extension point: the simulator (``phalanx.sim.serving.run``) calls it
once per sync period with an ``Observation`` and submits or cancels replica jobs to reach the
answer. ``HpaScaler`` is the default, the Kubernetes HorizontalPodAutoscaler's documented rule
(autoscaling/v2, kube-controller-manager defaults):

- ``desired = ceil(ready x utilisation / target)``, kept at the current count while
  ``|utilisation / target - 1| <= tolerance`` (0.1);
- on a scale-up, replicas not ready yet count as using nothing (the HPA's treatment of
  unready pods), so replicas already starting are not asked for twice;
- scale-up at most ``max(current + 4, 2 x current)`` per period (the default scaleUp
  policies, Pods 4 and Percent 100 per 15 s, selectPolicy Max);
- scale-down stabilisation: the highest recommendation of the last 300 s is used, so a dip
  does not drop replicas that the next minute needs again;
- clamped to [min, max].

Utilisation here is offered requests/s per ready replica over its capacity at the SLO (the
metric an HPA on requests per second, or a KPA on concurrency, targets).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from phalanx.domain.time import SECOND, Duration, Instant

__all__ = ["HpaScaler", "Observation", "Scaler"]


@dataclass(frozen=True, slots=True)
class Observation:
    at: Instant
    replicas: int
    """Replicas asked for now (pending, starting and ready)."""
    ready: int
    """Replicas that serve (started, model loaded)."""
    offered_rps: float
    capacity_rps: float
    """Requests/s one replica serves at the SLO."""


class Scaler(Protocol):
    def desired(self, seen: Observation) -> int:
        """The replica count wanted after ``seen``; called once per sync period with
        non-decreasing ``seen.at``. May keep state (stabilisation windows)."""
        ...


class HpaScaler:
    def __init__(
        self,
        *,
        target_utilization: float,
        min_replicas: int,
        max_replicas: int,
        tolerance: float = 0.1,
        downscale_window: Duration = 300 * SECOND,
    ) -> None:
        if not 0 < target_utilization <= 1 or not 1 <= min_replicas <= max_replicas:
            raise ValueError("need 0 < target <= 1 and 1 <= min <= max")
        self.target = target_utilization
        self.min = min_replicas
        self.max = max_replicas
        self.tolerance = tolerance
        self.window = downscale_window
        self._recent: deque[tuple[Instant, int]] = deque()

    def desired(self, seen: Observation) -> int:
        current = max(seen.replicas, self.min)
        wanted = self._recommend(seen, current)
        # Scale-down stabilisation: the highest recommendation within the window.
        self._recent.append((seen.at, wanted))
        while self._recent and self._recent[0][0] <= seen.at - self.window:
            self._recent.popleft()
        if wanted < current:
            wanted = min(current, max(r for _, r in self._recent))
        wanted = min(wanted, max(current + 4, 2 * current))
        return max(self.min, min(self.max, wanted))

    def _recommend(self, seen: Observation, current: int) -> int:
        if seen.ready < 1:
            # No metrics from any replica: the HPA holds its count until one reports.
            return current
        per_ready = seen.offered_rps / (seen.ready * seen.capacity_rps)
        ratio = per_ready / self.target
        if abs(ratio - 1.0) <= self.tolerance:
            return current
        if ratio > 1.0 and seen.ready < current:
            # Unready replicas count as idle: recompute over all of them.
            ratio = seen.offered_rps / (current * seen.capacity_rps) / self.target
            if ratio <= 1.0 + self.tolerance:
                return current
            return math.ceil(current * ratio)
        return math.ceil(seen.ready * ratio)
