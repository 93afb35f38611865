"""A Deployment's rollout arithmetic, as Kubernetes' deployment controller does it
(``pkg/controller/deployment/util``): the pod-template hash, maxSurge/maxUnavailable resolved
against the replica count, how far the new ReplicaSet may grow, how far old ones may shrink,
and proportional scaling. Pure functions of counts; ``deployment`` applies them."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from phalanx.errors import InputError

__all__ = [
    "HASH_LABEL",
    "canonical",
    "fenceposts",
    "new_replicas",
    "old_scale_down",
    "proportion",
    "template_hash",
]

HASH_LABEL = "pod-template-hash"
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_PERCENT = re.compile(r"^(\d+)%$")
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def canonical(value: Any) -> Any:
    """``value`` without nulls and empty maps or lists, recursively: how Go's typed structs
    see a template (``metadata.creationTimestamp: null``, as kubectl sends a template back on
    ``rollout undo``, is no field at all; ``apiequality.Semantic`` holds nil and empty equal)."""
    if isinstance(value, Mapping):
        out = {str(k): canonical(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


def template_hash(template: Mapping[str, Any], collisions: int = 0) -> str:
    """The ``pod-template-hash`` of ``template``: FNV-1a (32 bits) of the template (its
    ``canonical`` form), then of
    ``collisionCount`` (4 bytes, little-endian) when there is one, the number's decimal digits
    mapped onto the safe alphabet (``rand.SafeEncodeString``). Upstream hashes Go's printing
    of the struct; canonical JSON stands in for it, so values differ from a real cluster's but
    behave alike: stable, changed by any change to the template."""
    data = json.dumps(canonical(template), sort_keys=True, separators=(",", ":")).encode()
    if collisions:
        data += (collisions & 0xFFFFFFFF).to_bytes(4, "little")
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in str(h).encode())


def _scaled(value: object, total: int, round_up: bool, field: str) -> int:
    """An ``IntOrString``: a count, or a percentage of ``total`` rounded as told."""
    if isinstance(value, bool):
        raise InputError("must be an integer or a percentage", field=field)
    if isinstance(value, int):
        if value < 0:
            raise InputError("must be greater than or equal to 0", field=field)
        return value
    m = _PERCENT.match(str(value))
    if m is None:
        raise InputError(
            f"invalid value {value!r}: must be an integer or a percentage", field=field
        )
    exact = int(m.group(1)) * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def fenceposts(strategy: Mapping[str, Any], replicas: int) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) of a RollingUpdate, 25% each by default: surge rounded up,
    unavailable down; both zero makes unavailable 1 so that a rollout can move."""
    params = strategy.get("rollingUpdate") or {}
    field = "spec.strategy.rollingUpdate"
    surge = _scaled(params.get("maxSurge", "25%"), replicas, True, f"{field}.maxSurge")
    unavailable = _scaled(
        params.get("maxUnavailable", "25%"), replicas, False, f"{field}.maxUnavailable"
    )
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def new_replicas(replicas: int, surge: int, total: int, new: int) -> int:
    """What the new ReplicaSet may grow to (``NewRSNewReplicas``): towards ``replicas`` while
    all ReplicaSets' ``total`` stays within ``replicas + surge``."""
    room = replicas + surge - total
    if room <= 0:
        return new
    return new + min(room, max(0, replicas - new))


def old_scale_down(
    replicas: int,
    unavailable: int,
    new_desired: int,
    new_available: int,
    old: Sequence[tuple[int, int]],
) -> list[int]:
    """How many to take off each old ReplicaSet, given (spec.replicas, availableReplicas) of
    each, oldest first, so that at least ``replicas - unavailable`` stay available
    (``reconcileOldReplicaSets``): first their unavailable pods, up to what may go, then
    available ones beyond the minimum."""
    cuts = [0] * len(old)
    total = new_desired + sum(n for n, _ in old)
    minimum = replicas - min(unavailable, replicas)
    new_unavailable = new_desired - new_available
    allowed = total - minimum - new_unavailable
    if allowed <= 0 or not any(n for n, _ in old):
        return cuts
    # 1. unhealthy pods first: they serve nobody
    for i, (n, avail) in enumerate(old):
        if allowed - sum(cuts) <= 0:
            break
        cuts[i] = max(0, min(allowed - sum(cuts), n - avail))
    # 2. then available ones, while as many as the minimum stay available
    available = new_available + sum(
        max(0, min(avail, n - c)) for (n, avail), c in zip(old, cuts, strict=True)
    )
    spare = available - minimum
    for i, (n, _) in enumerate(old):
        if spare <= 0:
            break
        take = min(n - cuts[i], spare)
        cuts[i] += take
        spare -= take
    return cuts


def proportion(
    size: int, replicas: int, surge: int, annotated: int, to_add: int, added: int
) -> int:
    """How much one ReplicaSet of ``size`` grows (or shrinks) when the Deployment is scaled
    mid-rollout (``GetProportion``): its share of ``replicas + surge`` by the size the
    Deployment had (``annotated``, its max-replicas annotation), within what is left."""
    if replicas == 0:
        fraction = -size
    elif annotated <= 0:
        fraction = 0
    else:
        fraction = math.floor(size * (replicas + surge) / annotated + 0.5) - size
    left = to_add - added
    return min(fraction, left) if to_add > 0 else max(fraction, left)
