"""``apps/v1`` Deployment: ReplicaSets as its children, one per pod template, rolled from old
to new as its strategy says; its status and conditions from theirs.

Kubernetes 1.32's deployment controller, in the parts that make sense here. The new
ReplicaSet is the one whose template equals the Deployment's (the ``pod-template-hash`` label
aside); it is ``NAME-HASH``, its selector and pods carry the hash label, its
``deployment.kubernetes.io/revision`` is one more than any old one's (a ReplicaSet brought back
by ``kubectl rollout undo`` takes the next revision, its former ones kept in
``revision-history``), and the Deployment's annotations are copied onto it (``kubernetes.io/
change-cause`` for ``kubectl rollout history``). RollingUpdate grows the new ReplicaSet while
all stay within ``replicas + maxSurge`` and shrinks old ones (unavailable pods first, oldest
ReplicaSet first) while ``replicas - maxUnavailable`` stay available; Recreate takes old ones to
zero, waits for their pods to be gone, then makes the new one whole. A scale (``spec.replicas``
changed, the scale subresource) while several ReplicaSets are active is shared among them in
proportion. ``paused``: scaled, never rolled. ``revisionHistoryLimit`` old ReplicaSets at zero
are kept, the oldest beyond it deleted. Status: replicas, updatedReplicas, readyReplicas,
availableReplicas, unavailableReplicas, observedGeneration, and the conditions ``Available``
and ``Progressing`` with upstream's reasons and messages, so ``kubectl rollout status``
follows a rollout to its end (or to ProgressDeadlineExceeded).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from phalanx.domain.queues import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from phalanx.domain.time import Instant
from phalanx.errors import InputError
from phalanx.workloads.deployment_status import rollout_status
from phalanx.workloads.events import event
from phalanx.workloads.plan import Context, Plan, refused
from phalanx.workloads.pods import controller_ref
from phalanx.workloads.rollout import (
    HASH_LABEL,
    canonical,
    fenceposts,
    new_replicas,
    old_scale_down,
    proportion,
    template_hash,
)
from phalanx.workloads.selectors import matches
from phalanx.workloads.timestamps import parse_time

__all__ = [
    "COMPONENT",
    "DESIRED",
    "MAX_REPLICAS",
    "REVISION",
    "REVISION_HISTORY",
    "reconcile",
    "revision",
]

COMPONENT = "deployment-controller"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
_NOT_COPIED = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        REVISION_HISTORY,
        DESIRED,
        MAX_REPLICAS,
        "deprecated.deployment.rollback.to",
    }
)

Obj = dict[str, Any]


def _kueue_labels(meta: Mapping[str, Any]) -> dict[str, str]:
    """The Deployment's Kueue labels, passed to its ReplicaSets (whose pods' engine jobs then
    go to that LocalQueue), as Kueue's Deployment integration passes them to the pods."""
    labels = meta.get("labels") or {}
    return {k: str(labels[k]) for k in (QUEUE_NAME_LABEL, PRIORITY_CLASS_LABEL) if k in labels}


def revision(rs: Mapping[str, Any]) -> int:
    value = ((rs.get("metadata") or {}).get("annotations") or {}).get(REVISION, "0")
    return int(value) if str(value).isdecimal() else 0


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name"))


def _replicas(rs: Mapping[str, Any]) -> int:
    return int((rs.get("spec") or {}).get("replicas", 1) or 0)


def _stat(rs: Mapping[str, Any], name: str) -> int:
    return int((rs.get("status") or {}).get(name, 0) or 0)


def _created(rs: Mapping[str, Any]) -> tuple[int, str]:
    at = parse_time((rs.get("metadata") or {}).get("creationTimestamp"))
    return (at if at is not None else 2**62, _name(rs))


def _without_hash(template: Mapping[str, Any]) -> Any:
    """``template`` as ``EqualIgnoreHash`` compares it: canonical, no hash label."""
    out = canonical(template)
    labels = (out.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return canonical(out)


class _Pass:
    """One reconcile: the Deployment, its ReplicaSets as the plan leaves them, the plan."""

    def __init__(
        self, obj: Mapping[str, Any], children: Sequence[Mapping[str, Any]], now: Instant
    ) -> None:
        self.obj = obj
        self.now = now
        self.plan = Plan()
        self.spec: Mapping[str, Any] = obj.get("spec") or {}
        self.rs: dict[str, Obj] = {_name(c): copy.deepcopy(dict(c)) for c in children}
        self.changed: set[str] = set()
        replicas = self.spec.get("replicas")
        replicas = 1 if replicas is None else replicas
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise InputError("must be greater than or equal to 0", field="spec.replicas")
        self.replicas: int = replicas
        strategy = self.spec.get("strategy") or {}
        self.recreate = strategy.get("type") == "Recreate"
        if strategy.get("type", "RollingUpdate") not in ("RollingUpdate", "Recreate"):
            raise InputError(
                f"unsupported value: {strategy.get('type')!r}", field="spec.strategy.type"
            )
        self.surge, self.unavailable = (
            (0, 0) if self.recreate else fenceposts(strategy, self.replicas)
        )
        self.new: str | None = None

    # -- ReplicaSets ---------------------------------------------------------------------

    def ordered(self) -> list[Obj]:
        return sorted(self.rs.values(), key=_created)

    def old(self) -> list[Obj]:
        return [r for r in self.ordered() if _name(r) != self.new]

    def scale(self, name: str, to: int) -> None:
        """Set a ReplicaSet's ``spec.replicas`` (and its replica annotations), with the event."""
        rs = self.rs[name]
        before = _replicas(rs)
        notes = rs.setdefault("metadata", {}).setdefault("annotations", {})
        wanted = {DESIRED: str(self.replicas), MAX_REPLICAS: str(self.replicas + self.surge)}
        if before == to and all(notes.get(k) == v for k, v in wanted.items()):
            return
        notes.update(wanted)
        rs.setdefault("spec", {})["replicas"] = to
        self.changed.add(name)
        if before != to:
            way = "up" if to > before else "down"
            self.plan.events.append(
                event(
                    self.obj,
                    "ScalingReplicaSet",
                    f"Scaled {way} replica set {name} from {before} to {to}",
                    self.now,
                    seq=len(self.plan.events),
                    component=COMPONENT,
                )
            )

    def find_new(self) -> str | None:
        template = _without_hash(self.spec.get("template") or {})
        for rs in self.ordered():
            if _without_hash((rs.get("spec") or {}).get("template") or {}) == template:
                return _name(rs)
        return None

    def make_new(self, replicas: int) -> str:
        """Create the new ReplicaSet (``NAME-HASH``) at ``replicas``, at the next revision."""
        meta = self.obj.get("metadata") or {}
        status = self.obj.get("status") or {}
        template = copy.deepcopy(dict(self.spec.get("template") or {}))
        collisions = int(status.get("collisionCount", 0) or 0)
        digest = template_hash(template, collisions)
        name = f"{meta.get('name')}-{digest}"
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), HASH_LABEL: digest}
        selector = copy.deepcopy(dict(self.spec.get("selector") or {}))
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: digest}
        notes = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in _NOT_COPIED}
        notes.update(
            {
                REVISION: str(max((revision(r) for r in self.rs.values()), default=0) + 1),
                DESIRED: str(self.replicas),
                MAX_REPLICAS: str(self.replicas + self.surge),
            }
        )
        rs: Obj = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": meta.get("namespace", "default"),
                "labels": {**tmeta["labels"], **_kueue_labels(meta)},
                "annotations": notes,
                "ownerReferences": [controller_ref(self.obj)],
            },
            "spec": {
                "replicas": replicas,
                "minReadySeconds": int(self.spec.get("minReadySeconds", 0) or 0),
                "selector": selector,
                "template": template,
            },
            "status": {"replicas": 0},
        }
        self.rs[name] = rs
        self.plan.create.append(rs)
        self.plan.events.append(
            event(
                self.obj,
                "ScalingReplicaSet",
                f"Scaled up replica set {name} from 0 to {replicas}",
                self.now,
                seq=len(self.plan.events),
                component=COMPONENT,
            )
        )
        return name

    def bump_revision(self, name: str) -> None:
        """The new ReplicaSet's revision is above every old one's (an undo brings an old one
        back: its former revision goes to ``revision-history``), the Deployment's annotations
        and ``minReadySeconds`` copied onto it."""
        rs = self.rs[name]
        notes = rs.setdefault("metadata", {}).setdefault("annotations", {})
        top = max((revision(r) for r in self.old()), default=0) + 1
        current = revision(rs)
        wanted = dict(notes)
        for k, v in ((self.obj.get("metadata") or {}).get("annotations") or {}).items():
            if k not in _NOT_COPIED:
                wanted[k] = v
        if current < top:
            history = [h for h in str(notes.get(REVISION_HISTORY, "")).split(",") if h]
            if current:
                history.append(str(current))
            wanted[REVISION] = str(top)
            if history:
                wanted[REVISION_HISTORY] = ",".join(history)
        if wanted != notes:
            rs["metadata"]["annotations"] = wanted
            self.changed.add(name)
        ready_s = int(self.spec.get("minReadySeconds", 0) or 0)
        if int((rs.get("spec") or {}).get("minReadySeconds", 0) or 0) != ready_s:
            rs.setdefault("spec", {})["minReadySeconds"] = ready_s
            self.changed.add(name)

    # -- strategies ----------------------------------------------------------------------

    def is_scaling(self) -> bool:
        """A scale, not a rollout: an active ReplicaSet was sized for another replica count."""
        for rs in self.rs.values():
            desired = ((rs.get("metadata") or {}).get("annotations") or {}).get(DESIRED)
            if _replicas(rs) > 0 and desired is not None and desired != str(self.replicas):
                return True
        return False

    def sync_scale(self) -> None:
        """``scale()``: one active ReplicaSet (or none) takes the whole count; several share
        the change in proportion to their sizes (RollingUpdate), the largest the remainder."""
        active = [r for r in self.ordered() if _replicas(r) > 0]
        if (
            self.new is not None
            and _replicas(self.rs[self.new]) == self.replicas
            and not [r for r in active if _name(r) != self.new]
        ):
            self.scale(self.new, self.replicas)
            return
        if len(active) <= 1:
            target = _name(active[0]) if active else self.new
            if target is None and self.rs:
                target = _name(self.ordered()[-1])
            if target is not None:
                self.scale(target, self.replicas)
            return
        if self.recreate:
            return
        allowed = self.replicas + self.surge
        to_add = allowed - sum(_replicas(r) for r in active)
        if to_add == 0:
            # Nothing to move, but the sizes still carry the old count's annotations: as
            # Kubernetes' scale() does, write the new ones, or is_scaling() stays true and the
            # rollout never resumes (a scale from 2 to 1 mid-rollout left 1 + 1 for good).
            for rs in active:
                self.scale(_name(rs), _replicas(rs))
            return
        # growing: the largest first, the newer on ties; shrinking: the largest, the older
        sign = -1 if to_add > 0 else 1
        by_size = sorted(active, key=lambda r: (-_replicas(r), sign * _created(r)[0], _name(r)))
        sizes: dict[str, int] = {}
        added = 0
        for rs in by_size:
            annotated = ((rs.get("metadata") or {}).get("annotations") or {}).get(MAX_REPLICAS)
            base = (
                int(str(annotated))
                if str(annotated).isdecimal()
                else int((self.obj.get("status") or {}).get("replicas", 0) or 0)
            )
            step = proportion(_replicas(rs), self.replicas, self.surge, base, to_add, added)
            sizes[_name(rs)] = _replicas(rs) + step
            added += step
        first = _name(by_size[0])
        sizes[first] = max(0, sizes[first] + to_add - added)
        for name, size in sizes.items():
            self.scale(name, max(0, size))

    def rolling(self) -> None:
        """``rolloutRolling``: grow the new ReplicaSet within the surge, else shrink old ones
        within the unavailability allowed."""
        assert self.new is not None
        new = self.rs[self.new]
        total = sum(_replicas(r) for r in self.rs.values())
        size = _replicas(new)
        if size > self.replicas:
            self.scale(self.new, self.replicas)
            return
        grown = new_replicas(self.replicas, self.surge, total, size)
        if grown != size:
            self.scale(self.new, grown)
            return  # old ones shrink in a later pass, on the new one's status
        old = self.old()
        cuts = old_scale_down(
            self.replicas,
            self.unavailable,
            size,
            _stat(new, "availableReplicas"),
            [(_replicas(r), _stat(r, "availableReplicas")) for r in old],
        )
        for rs, cut in zip(old, cuts, strict=True):
            if cut:
                self.scale(_name(rs), _replicas(rs) - cut)

    def recreating(self) -> None:
        """``rolloutRecreate``: old ReplicaSets to zero; once none has a pod, the new one whole."""
        for rs in self.old():
            self.scale(_name(rs), 0)
        if any(_stat(r, "replicas") for r in self.old()):
            return
        if self.new is None:
            self.new = self.make_new(self.replicas)
        else:
            self.scale(self.new, self.replicas)

    def cleanup(self) -> None:
        """Delete old ReplicaSets at zero beyond ``revisionHistoryLimit``, oldest revision
        first."""
        limit = self.spec.get("revisionHistoryLimit", 10)
        limit = 10 if not isinstance(limit, int) or limit < 0 else limit
        idle = [
            r
            for r in self.old()
            if _replicas(r) == 0
            and _stat(r, "replicas") == 0
            and int((r.get("metadata") or {}).get("generation", 0) or 0)
            <= int((r.get("status") or {}).get("observedGeneration", 0) or 0)
        ]
        idle.sort(key=lambda r: (revision(r), _created(r)))
        for rs in idle[: max(0, len(idle) - limit)]:
            name = _name(rs)
            self.plan.delete.append(name)
            del self.rs[name]
            self.changed.discard(name)


def reconcile(
    obj: Mapping[str, Any], children: Sequence[Mapping[str, Any]], now: Instant, ctx: Context
) -> Plan:
    """One pass of the deployment controller over ``obj`` and the ReplicaSets it owns (module
    docstring). The plan's ``create``, ``update`` and ``delete`` are ReplicaSets."""
    del ctx  # the pods' requests are the ReplicaSets' business
    try:
        spec = obj.get("spec") or {}
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if not matches(spec.get("selector"), labels, "spec.selector"):
            raise InputError(
                "`selector` does not match template `labels`",
                field="spec.template.metadata.labels",
            )
        p = _Pass(obj, children, now)
    except InputError as e:
        return refused(obj, str(e), now, COMPONENT)
    paused = bool(spec.get("paused", False))
    p.new = p.find_new()
    created = False
    if p.new is not None:
        p.bump_revision(p.new)
    if paused or p.is_scaling():
        p.sync_scale()
    elif p.recreate:
        had = p.new
        p.recreating()
        created = had is None and p.new is not None
    else:
        if p.new is None:
            total = sum(_replicas(r) for r in p.rs.values())
            p.new = p.make_new(new_replicas(p.replicas, p.surge, total, 0))
            created = True
        p.rolling()
    p.cleanup()
    made = {_name(c) for c in p.plan.create}
    p.plan.update = [p.rs[n] for n in sorted(p.changed) if n in p.rs and n not in made]
    if p.new is not None:
        wanted = str(revision(p.rs[p.new]))
        if ((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION) != wanted:
            p.plan.annotate[REVISION] = wanted
    status, wake = rollout_status(obj, p.rs, p.new, p.replicas, p.unavailable, now, created, paused)
    if wake is not None:
        p.plan.wake(wake)
    if status != (obj.get("status") or {}):
        p.plan.status = status
    return p.plan
