"""The autoscalers' recent scale decisions, kept in process for the dashboard (as the HPA
controller keeps its scale events: lost on restart; the HPA's Events stay in the store)."""

from __future__ import annotations

from collections import deque

from phalanx.api.serving import ScaleDecision

__all__ = ["KEEP", "ScaleLog"]

KEEP = 200
"""Decisions kept: the most recent, across every autoscaler."""


class ScaleLog:
    def __init__(self, keep: int = KEEP) -> None:
        self._kept: deque[ScaleDecision] = deque(maxlen=keep)

    def add(self, decision: ScaleDecision) -> None:
        self._kept.append(decision)

    def recent(self) -> list[ScaleDecision]:
        """Newest first."""
        return list(reversed(self._kept))

    def last(self, autoscaler: str, namespace: str, name: str) -> ScaleDecision | None:
        """The newest decision of that autoscaler object, if one is kept."""
        for d in reversed(self._kept):
            if (d.autoscaler, d.namespace, d.name) == (autoscaler, namespace, name):
                return d
        return None
