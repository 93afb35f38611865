"""Volcano's Queue (``scheduling.volcano.sh/v1beta1``) as an immutable value.

Quantities are thousandths of their unit, by resource name. ``deserved`` shares come from
the proportion plugin's water-filling over ``weight`` (next phase); ``capability`` caps a
queue, ``guarantee`` is kept for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["VolcanoQueue"]


@dataclass(frozen=True, slots=True)
class VolcanoQueue:
    name: str
    weight: int = 1
    """Volcano's webhook defaults an unset weight to 1."""
    capability: Mapping[str, int] = field(default_factory=dict)
    """The most the queue may use; a resource not named is not capped."""
    guarantee: Mapping[str, int] = field(default_factory=dict)
    """``guarantee.resource``: reserved for the queue, never reclaimed from it."""
    deserved: Mapping[str, int] | None = None
    """Set by hand (the capacity plugin); None: the proportion plugin computes it."""
    reclaimable: bool = True
    parent: str | None = None
    """Hierarchical queues; None: under ``root``."""
