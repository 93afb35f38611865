"""Queue objects as the Kubernetes API holds them (JSON dicts) -> ``Queues``.

The same reader as a ``--queues`` file (``phalanx.config.queues``), one object at a time:

- ``check_object(obj)``: one object, validated exactly as a document of a ``--queues`` file
  is (Kueue's and Volcano's webhook rules); a ``ConfigError`` names the field path. What the
  server keeps of an object and a file has no use for is left out first: ``status``,
  metadata the server sets (uid, resourceVersion, managedFields...), and the spec fields
  of Kueue's that the engine does not model (``IGNORED``: admission checks, a LocalQueue's
  fair-sharing weight, a flavor's topology), which the API's schema accepts.
- ``active_queues(objects)``: every object together, as Kueue's controllers see them: a
  ClusterQueue or Cohort that names a ResourceFlavor no object defines is inactive
  (Kueue's ``FlavorNotFound``), so are a Cohort in a cycle of parents and a LocalQueue whose
  ClusterQueue is missing or inactive. The inactive ones are left out of the ``Queues``
  (their jobs wait, "ClusterQueue q doesn't exist") and returned with why, for the
  objects' ``Active`` condition. A file is refused for the same faults (it is read whole);
  through the API objects come one at a time, in any order, so a reference may dangle for
  a while, as in Kueue.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from phalanx.config.queues import Reader
from phalanx.config.yamlfield import YamlField
from phalanx.domain.queues import Queues
from phalanx.errors import ConfigError

__all__ = [
    "IGNORED",
    "QUEUE_KINDS",
    "Inactive",
    "active_queues",
    "as_document",
    "check_object",
    "key_of",
    "objects_from_yaml",
]

QUEUE_KINDS: Mapping[str, str] = {
    "ResourceFlavor": "kueue.x-k8s.io",
    "ClusterQueue": "kueue.x-k8s.io",
    "Cohort": "kueue.x-k8s.io",
    "LocalQueue": "kueue.x-k8s.io",
    "WorkloadPriorityClass": "kueue.x-k8s.io",
    "Queue": "scheduling.volcano.sh",
}
"""Kind -> API group of the objects that feed the engine's queues."""

IGNORED: Mapping[str, tuple[str, ...]] = {
    "ClusterQueue": ("admissionChecks", "admissionChecksStrategy", "admissionScope"),
    "LocalQueue": ("fairSharing",),
    "ResourceFlavor": ("topologyName",),
}
"""Spec fields Kueue has, the API accepts, and the engine does not model (yet)."""

_META = ("name", "namespace", "labels", "annotations")
_TOP = ("apiVersion", "kind", "metadata", "spec", "value", "description")

Key = tuple[str, str, str]
"""(kind, namespace or "", name)."""
Inactive = dict[Key, tuple[str, str]]
"""Key -> (Kueue's reason, message) of each object left out of the ``Queues``."""


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "") if obj.get("kind") == "LocalQueue" else ""
    return str(obj.get("kind", "")), namespace, str(meta.get("name", ""))


def objects_from_yaml(text: str, key: str | None = None) -> list[dict[str, Any]]:
    """The queue objects of a ``--queues`` file (``key`` None: its documents) or of a
    cluster YAML (``key="queues"``: that list), as plain dicts; read after the file was
    accepted, so nothing here is checked again."""
    if key is None:
        docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    else:
        top = yaml.safe_load(text)
        found = top.get(key) if isinstance(top, dict) else None
        docs = [d for d in found or () if isinstance(d, dict)]
    return [json.loads(json.dumps(d, default=str)) for d in docs]  # JSON values only


def as_document(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What a ``--queues`` document of ``obj`` would hold (module docstring): a new dict,
    ``obj`` is not changed."""
    doc = {k: v for k, v in obj.items() if k in _TOP}
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        doc["metadata"] = {k: v for k, v in meta.items() if k in _META and v}
    spec = doc.get("spec")
    dropped = IGNORED.get(str(obj.get("kind", "")), ())
    if isinstance(spec, dict) and dropped:
        doc["spec"] = {k: v for k, v in spec.items() if k not in dropped}
    return doc


def _field(obj: Mapping[str, Any], source: str) -> YamlField:
    # JSON is YAML: composing it gives the node tree the file reader walks, field paths and all
    node = yaml.compose(json.dumps(as_document(obj)), Loader=yaml.SafeLoader)
    assert node is not None  # a JSON object is one document
    return YamlField(node, "", source)


def check_object(obj: Mapping[str, Any]) -> None:
    """Raise the ``ConfigError`` a ``--queues`` file with ``obj`` in it would raise for it
    (its field names the path, ``spec.resourceGroups[0].flavors[0].name``)."""
    Reader().read(1, _field(obj, "<object>"))


def active_queues(objects: Iterable[Mapping[str, Any]]) -> tuple[Queues, Inactive]:
    """The ``Queues`` of ``objects`` (module docstring), and the inactive ones. An object
    that ``check_object`` refuses is inactive too (never one the API took)."""
    reader = Reader()
    inactive: Inactive = {}
    for number, obj in enumerate(objects, start=1):
        try:
            reader.read(number, _field(obj, "<object>"))
        except ConfigError as exc:
            inactive[key_of(obj)] = ("Invalid", exc.message)
    for name, cohort in list(reader.cohorts.items()):
        missing = sorted({f for f, _ in cohort[0].quotas() if f not in reader.flavors})
        if missing:
            inactive[("Cohort", "", name)] = _flavor_not_found(missing)
            del reader.cohorts[name]
    for name in reader.cohorts_in_cycles():
        inactive[("Cohort", "", name)] = ("CohortCycle", "Cohort is in a cycle of parents")
        del reader.cohorts[name]
    for name, cq in list(reader.cqs.items()):
        missing = sorted({f for f, _ in cq[0].quotas() if f not in reader.flavors})
        if missing:
            inactive[("ClusterQueue", "", name)] = _flavor_not_found(missing)
            del reader.cqs[name]
    for (namespace, name), local in list(reader.locals.items()):
        target = local[0].cluster_queue
        if target not in reader.cqs:
            inactive[("LocalQueue", namespace, name)] = (
                "ClusterQueueDoesNotExist"
                if ("ClusterQueue", "", target) not in inactive
                else "ClusterQueueIsInactive",
                f"Can't submit new workloads to clusterQueue {target}",
            )
            del reader.locals[(namespace, name)]
    return reader.finish(), inactive


def _flavor_not_found(missing: list[str]) -> tuple[str, str]:
    """Kueue's ``Active`` condition of a queue that names flavors no object defines."""
    names = ", ".join(missing)
    return (
        "FlavorNotFound",
        f"Can't admit new workloads: references missing ResourceFlavor(s): {names}.",
    )
