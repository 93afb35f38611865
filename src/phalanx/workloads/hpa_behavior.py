"""The HorizontalPodAutoscaler's stabilization and rate limits (steps 3-4 of
``phalanx.workloads.hpa``), pure, over the controller's memory of one HPA:

- with ``behavior``: the recommendation held between the lowest of the scale-up window and
  the highest of the scale-down window, then each direction's policies counted from the
  replicas at the start of their periods (``selectPolicy`` Max, Min or Disabled), then
  ``minReplicas``/``maxReplicas`` (``normalizeDesiredReplicasWithBehaviors``);
- without: the highest recommendation of the downscale window, then at most
  max(2 x current, 4) (``normalizeDesiredReplicas``).

Each sets the ``AbleToScale`` and ``ScalingLimited`` conditions with upstream's reasons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from phalanx.domain.time import SECOND, Instant
from phalanx.workloads.conditions import set_condition
from phalanx.workloads.hpa_spec import HpaSpec, Rules

__all__ = [
    "Memory",
    "normalize",
    "normalize_legacy",
    "remember_scale",
    "scale_down_limit",
    "scale_up_limit",
]


@dataclass
class Memory:
    """What the controller remembers of one HPA between syncs: its raw recommendations and
    the scale changes it made, each with its time."""

    recommendations: list[tuple[Instant, int]] = field(default_factory=list)
    ups: list[tuple[Instant, int]] = field(default_factory=list)
    downs: list[tuple[Instant, int]] = field(default_factory=list)


def normalize(
    spec: HpaSpec,
    memory: Memory,
    current: int,
    proposal: int,
    conditions: list[dict[str, Any]],
    now: Instant,
) -> int:
    """Steps 3-4: stabilization, then the rate policies and the bounds
    (``normalizeDesiredReplicasWithBehaviors``)."""
    stabilized, reason, message = _stabilize(spec, memory, current, proposal, now)
    if stabilized != proposal:
        set_condition(conditions, "AbleToScale", True, reason, message, now)
    else:
        set_condition(
            conditions,
            "AbleToScale",
            True,
            "ReadyForNewScale",
            "recommended size matches current size",
            now,
        )
    desired, reason, message = _limit(spec, memory, current, stabilized, now)
    set_condition(conditions, "ScalingLimited", desired != stabilized, reason, message, now)
    return desired


def normalize_legacy(
    spec: HpaSpec,
    memory: Memory,
    current: int,
    proposal: int,
    conditions: list[dict[str, Any]],
    now: Instant,
) -> int:
    """Steps 3-4 for an HPA without ``behavior`` (``normalizeDesiredReplicas``): the highest
    recommendation of the downscale window, then at most max(2 x current, 4)."""
    cutoff = now - spec.scale_down.stabilization_s * SECOND
    kept = [(at, r) for at, r in memory.recommendations if at >= cutoff]
    stabilized = max([proposal, *(r for _, r in kept)])
    memory.recommendations = [*kept, (now, proposal)]
    if stabilized != proposal:
        set_condition(
            conditions,
            "AbleToScale",
            True,
            "ScaleDownStabilized",
            "recent recommendations were higher than current one, applying the highest recent "
            "recommendation",
            now,
        )
    else:
        set_condition(
            conditions,
            "AbleToScale",
            True,
            "ReadyForNewScale",
            "recommended size matches current size",
            now,
        )
    limit = max(2 * current, 4)
    if spec.max_replicas > limit:
        ceiling, reason = limit, "ScaleUpLimit"
        message = "the desired replica count is increasing faster than the maximum scale rate"
    else:
        ceiling, reason = spec.max_replicas, "TooManyReplicas"
        message = "the desired replica count is more than the maximum replica count"
    desired = stabilized
    if stabilized < spec.min_replicas:
        desired, reason = spec.min_replicas, "TooFewReplicas"
        message = "the desired replica count is less than the minimum replica count"
    elif stabilized > ceiling:
        desired = ceiling
    else:
        reason, message = "DesiredWithinRange", "the desired count is within the acceptable range"
    set_condition(conditions, "ScalingLimited", desired != stabilized, reason, message, now)
    return desired


def _stabilize(
    spec: HpaSpec, memory: Memory, current: int, proposal: int, now: Instant
) -> tuple[int, str, str]:
    up_cutoff = now - spec.scale_up.stabilization_s * SECOND
    down_cutoff = now - spec.scale_down.stabilization_s * SECOND
    up, down = proposal, proposal
    kept: list[tuple[Instant, int]] = []
    for at, replicas in memory.recommendations:
        if at > up_cutoff:
            up = min(up, replicas)
        if at > down_cutoff:
            down = max(down, replicas)
        if at > up_cutoff or at > down_cutoff:
            kept.append((at, replicas))
    # Upstream overwrites one expired slot; dropping every expired one keeps the same answer.
    kept.append((now, proposal))
    memory.recommendations = kept
    recommendation = min(max(current, up), down)
    if proposal >= current:
        return (
            recommendation,
            "ScaleUpStabilized",
            "recent recommendations were lower than current one, applying the lowest recent "
            "recommendation",
        )
    return (
        recommendation,
        "ScaleDownStabilized",
        "recent recommendations were higher than current one, applying the highest recent "
        "recommendation",
    )


def _limit(
    spec: HpaSpec, memory: Memory, current: int, desired: int, now: Instant
) -> tuple[int, str, str]:
    if desired > current:
        limit = max(scale_up_limit(current, memory, spec.scale_up, now), current)
        if spec.max_replicas > limit:
            ceiling = limit
            reason = "ScaleUpLimit"
            message = "the desired replica count is increasing faster than the maximum scale rate"
        else:
            ceiling = spec.max_replicas
            reason = "TooManyReplicas"
            message = "the desired replica count is more than the maximum replica count"
        if desired > ceiling:
            return ceiling, reason, message
    elif desired < current:
        limit = min(scale_down_limit(current, memory, spec.scale_down, now), current)
        if spec.min_replicas < limit:
            floor = limit
            reason = "ScaleDownLimit"
            message = "the desired replica count is decreasing faster than the maximum scale rate"
        else:
            floor = spec.min_replicas
            reason = "TooFewReplicas"
            message = "the desired replica count is less than the minimum replica count"
        if desired < floor:
            return floor, reason, message
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def _changed(events: list[tuple[Instant, int]], period_s: int, now: Instant) -> int:
    cutoff = now - period_s * SECOND
    return sum(change for at, change in events if at > cutoff)


def scale_up_limit(current: int, memory: Memory, rules: Rules, now: Instant) -> int:
    """The most replicas the scale-up policies allow now (``calculateScaleUpLimit...``): each
    policy counts from the replicas at the start of its period."""
    if rules.select == "Disabled":
        return current
    pick = min if rules.select == "Min" else max
    result: int | None = None
    for policy in rules.policies:
        start = (
            current
            - _changed(memory.ups, policy.period_s, now)
            + _changed(memory.downs, policy.period_s, now)
        )
        if policy.type == "Pods":
            proposed = start + policy.value
        else:
            # Rounded up, or a small target could never grow.
            proposed = math.ceil(start * (1 + policy.value / 100))
        result = proposed if result is None else pick(result, proposed)
    return current if result is None else result


def scale_down_limit(current: int, memory: Memory, rules: Rules, now: Instant) -> int:
    """The fewest replicas the scale-down policies allow now."""
    if rules.select == "Disabled":
        return current
    pick = max if rules.select == "Min" else min
    result: int | None = None
    for policy in rules.policies:
        start = (
            current
            - _changed(memory.ups, policy.period_s, now)
            + _changed(memory.downs, policy.period_s, now)
        )
        if policy.type == "Pods":
            proposed = start - policy.value
        else:
            proposed = int(start * (1 - policy.value / 100))
        result = proposed if result is None else pick(result, proposed)
    return current if result is None else result


def remember_scale(memory: Memory, current: int, desired: int, now: Instant) -> None:
    # Changes older than the longest policy period (30 min at most) no longer matter.
    horizon = now - 1800 * SECOND
    if desired > current:
        memory.ups = [e for e in memory.ups if e[0] > horizon] + [(now, desired - current)]
    else:
        memory.downs = [e for e in memory.downs if e[0] > horizon] + [(now, current - desired)]
