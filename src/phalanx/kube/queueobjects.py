"""Kueue's and Volcano's queue objects of the Kubernetes API as the engine's queues.

One source of truth: the object store. ``admit`` refuses (422 Invalid, naming the field
path) an object a ``--queues`` file could not hold (``phalanx.config.queue_objects``).
``QueueObjects`` watches the store: after any create, update or delete of a queue object
(a namespace's deletion taking its LocalQueues too) it reads them all again, and when the
queues that result differ from the engine's it hands the engine a ``QueuesChange``, journaled
like every input, so a restart or a standby's takeover replays it. The objects of a
``--queues`` file (or the cluster YAML's ``queues:``) are created in the store at start
where absent (``seed``): the file seeds the store, the store then decides (an object of the
file deleted through the API comes back at the next start, as the file still says it).

Each queue object's ``status.conditions`` ``Active`` says whether Kueue would use it
(``FlavorNotFound``, ``CohortCycle``, a LocalQueue's missing ClusterQueue); a ClusterQueue's
and a LocalQueue's workload counts and flavor usage are the engine's (``phalanx.kube.queuestatus``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from phalanx.config.queue_objects import (
    QUEUE_KINDS,
    Inactive,
    active_queues,
    as_document,
    check_object,
    key_of,
)
from phalanx.domain.cluster import Cluster
from phalanx.engine import Event, QueuesChange
from phalanx.errors import ConfigError
from phalanx.kube.errors import Invalid, KubeError, field_error
from phalanx.kube.kinds import Kind
from phalanx.kube.queuestatus import QueueStatus, condition_of
from phalanx.kube.store import ObjectStore

__all__ = ["QUEUE_RESOURCES", "QueueObjects", "admit", "is_queue_kind"]

log = logging.getLogger("phalanx.kube.queues")

QUEUE_RESOURCES: Mapping[str, tuple[str, str]] = {
    "ResourceFlavor": ("kueue.x-k8s.io", "resourceflavors"),
    "Cohort": ("kueue.x-k8s.io", "cohorts"),
    "ClusterQueue": ("kueue.x-k8s.io", "clusterqueues"),
    "LocalQueue": ("kueue.x-k8s.io", "localqueues"),
    "WorkloadPriorityClass": ("kueue.x-k8s.io", "workloadpriorityclasses"),
    "Queue": ("scheduling.volcano.sh", "queues"),
}
"""Kind -> resource, in the order the engine reads them (flavors before their users)."""
_RESOURCES = frozenset(QUEUE_RESOURCES.values())


def is_queue_kind(kind: Kind) -> bool:
    return QUEUE_KINDS.get(kind.kind) == kind.group


def admit(kind: Kind, body: Mapping[str, Any]) -> None:
    """``Invalid`` (422) for a queue object a ``--queues`` file could not hold; other kinds
    pass."""
    if not is_queue_kind(kind):
        return
    try:
        check_object(body)
    except ConfigError as exc:
        name = str((body.get("metadata") or {}).get("name", ""))
        cause = field_error(exc.field or "", "FieldValueInvalid", exc.message)
        raise Invalid(kind.group, kind.kind, name, [cause]) from None


class QueueObjects:
    """Keeps the engine's queues those of the store (module docstring). Runs on the event
    loop, as the store does; ``defer`` runs a call soon after (a burst of writes, one read).
    ``cluster`` is the engine's (its queues are compared), ``accept`` journals an input and
    queues it for the engine (``JournalError`` when it cannot), ``now`` the engine's time."""

    def __init__(
        self,
        store: ObjectStore,
        cluster: Callable[[], Cluster],
        accept: Callable[[Event], object],
        *,
        now: Callable[[], int],
        defer: Callable[[Callable[[], None]], object],
        status: QueueStatus | None = None,
    ) -> None:
        self.store = store
        self.cluster = cluster
        self.accept = accept
        self.now = now
        self.defer = defer
        self.status = status
        self._pending = False
        self._seen: dict[tuple[str, str, str], str] = {}
        """Each object's document as last read: its status's writes are no change."""
        self.inactive: Inactive = {}

    def seed(self, objects: Iterable[Mapping[str, Any]]) -> int:
        """Create each of ``objects`` (a queues file's) that the store lacks; how many."""
        made = 0
        for obj in objects:
            kind, namespace, name = key_of(obj)
            resource = QUEUE_RESOURCES.get(kind)
            if resource is None or self.store.get(resource, namespace or None, name) is not None:
                continue
            doc = as_document(obj)
            if kind == "LocalQueue":
                doc["metadata"].setdefault("namespace", "default")
            try:
                self.store.create(doc)
                made += 1
            except KubeError as exc:
                log.warning("queue object %s %s not created: %s", kind, name, exc)
        return made

    def start(self) -> None:
        self.store.subscribe(self._changed)
        self.sync()

    def stop(self) -> None:
        self.store.unsubscribe(self._changed)

    def _changed(self, _type: str, obj: dict[str, Any]) -> None:
        kind = str(obj.get("kind", ""))
        resource = QUEUE_RESOURCES.get(kind)
        if resource is None or _group(obj) != resource[0]:
            return
        key = key_of(obj)
        text = "" if _type == "DELETED" else json.dumps(as_document(obj), sort_keys=True)
        if self._seen.get(key, "") == text and _type != "ADDED":
            return
        if text:
            self._seen[key] = text
        else:
            self._seen.pop(key, None)
        if self._pending:
            return
        self._pending = True
        self.defer(self.sync)

    def objects(self) -> list[dict[str, Any]]:
        """Every queue object of the store, as the engine reads them (``as_document``)."""
        out: list[dict[str, Any]] = []
        for resource in QUEUE_RESOURCES.values():
            out.extend(as_document(o) for o in self.store.list(resource))
        return out

    def sync(self) -> None:
        """Read the queue objects again; hand the engine their queues if they changed."""
        self._pending = False
        objects = self.objects()
        self._seen = {key_of(o): json.dumps(o, sort_keys=True) for o in objects}
        queues, self.inactive = active_queues(objects)
        # Kueue's Configuration is no API object: fair sharing stays as the cluster has it.
        queues = dataclasses.replace(queues, fair_sharing=self.cluster().queues.fair_sharing)
        if queues != self.cluster().queues:
            texts = tuple(json.dumps(o, separators=(",", ":"), sort_keys=True) for o in objects)
            self.accept(QueuesChange(self.now(), queues, texts))
            log.info(
                "queues from the API: %d ClusterQueues, %d LocalQueues, %d inactive",
                len(queues.cluster_queues),
                len(queues.local_queues),
                len(self.inactive),
            )
        self.write_conditions()
        if self.status is not None:
            self.status.write(self.cluster())

    def tick(self) -> None:
        """The ClusterQueues' status again (jobs come and go without a queue object's
        change)."""
        if self.status is not None:
            self.status.write(self.cluster())

    def write_conditions(self) -> None:
        """Each ClusterQueue's, LocalQueue's and Cohort's ``Active`` condition."""
        for kind in ("ClusterQueue", "LocalQueue", "Cohort"):
            resource = QUEUE_RESOURCES[kind]
            for obj in self.store.list(resource):
                found = self.inactive.get(key_of(obj))
                wanted = condition_of(kind, found, "")
                status = obj.get("status") or {}
                conditions = [
                    c for c in status.get("conditions") or () if c.get("type") != "Active"
                ]
                old = next(
                    (c for c in status.get("conditions") or () if c.get("type") == "Active"), None
                )
                if old is not None and all(old.get(k) == wanted[k] for k in ("status", "reason")):
                    continue
                obj["status"] = {**status, "conditions": [*conditions, wanted]}
                obj["metadata"].pop("resourceVersion", None)
                try:
                    self.store.update_status(obj)
                except KubeError as exc:
                    log.debug("status of %s: %s", key_of(obj), exc)


def _group(obj: Mapping[str, Any]) -> str:
    return str(obj.get("apiVersion", "")).rpartition("/")[0]
