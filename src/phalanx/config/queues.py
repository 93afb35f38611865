"""Read Kueue's and Volcano's queue objects from a multi-document YAML file into ``Queues``.

Kinds (``apiVersion`` ``kueue.x-k8s.io/v1beta1``, also ``v1beta2``; Cohort also
``v1alpha1``; Volcano's ``scheduling.volcano.sh/v1beta1``)::

    ResourceFlavor         spec: nodeLabels, nodeTaints, tolerations
    ClusterQueue           spec: resourceGroups, cohort (or cohortName), namespaceSelector,
                           queueingStrategy, preemption, flavorFungibility, fairSharing,
                           stopPolicy
    Cohort                 spec: parent (or parentName), resourceGroups, fairSharing
    LocalQueue             metadata.namespace (default "default"); spec: clusterQueue,
                           stopPolicy
    WorkloadPriorityClass  value, description
    Queue (Volcano)        spec: weight, capability, guarantee.resource, deserved,
                           reclaimable, parent
    Configuration          (``config.kueue.x-k8s.io/v1beta1``, Kueue's own configuration,
                           at most one) fairSharing: enable, preemptionStrategies; its
                           other keys are Kueue's manager settings and are refused here

Validation follows Kueue's webhooks and CRD rules (``pkg/webhooks/clusterqueue_webhook.go``):
names are DNS subdomains; negative quantities, a borrowing or lending limit without a
cohort (a parent, for a Cohort), a lending limit over the nominal quota,
``reclaimWithinCohort: Never`` with a ``borrowWithinCohort`` policy, are refused. Beyond the
webhooks, as a file is read whole: a flavor no ResourceFlavor defines, a LocalQueue's
unknown ClusterQueue and a cycle of Cohort parents are refused too (Kueue would leave such a
queue inactive). A cohort no Cohort object defines is fine (one with no quota of its own).
Unknown keys are errors. Every error names the file, the line, the document (its index from
1, kind and name) and the field path.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from pathlib import Path

import yaml

from phalanx.config.queues_fields import choice, dns_name
from phalanx.config.queues_kinds import (
    cluster_queue,
    cohort,
    fair_sharing,
    resource_flavor,
    volcano_queue,
)
from phalanx.config.yamlfield import YamlField, optional
from phalanx.domain.queues import (
    ClusterQueue,
    Cohort,
    FairSharing,
    LocalQueue,
    Queues,
    ResourceFlavor,
    ResourceQuota,
    StopPolicy,
    VolcanoQueue,
    WorkloadPriorityClass,
)
from phalanx.errors import ConfigError

__all__ = ["Reader", "queues_from_documents", "queues_from_file", "queues_from_yaml"]

_KUEUE = ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2")
_VOLCANO = ("scheduling.volcano.sh/v1beta1",)
_KINDS: dict[str, tuple[str, ...]] = {
    "ResourceFlavor": _KUEUE,
    "ClusterQueue": _KUEUE,
    "Cohort": (*_KUEUE, "kueue.x-k8s.io/v1alpha1"),
    "LocalQueue": _KUEUE,
    "WorkloadPriorityClass": _KUEUE,
    "Queue": _VOLCANO,
}
_CONFIG = ("config.kueue.x-k8s.io/v1beta1", "config.kueue.x-k8s.io/v1beta2")
_META = ("name", "namespace", "labels", "annotations")


def queues_from_file(path: str) -> Queues:
    """Read ``path``; an unreadable file is a ``ConfigError`` naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read queues file: {exc}", source=path) from None
    return queues_from_yaml(text, path)


def queues_from_yaml(text: str, source: str = "<queues>") -> Queues:
    """Every document of ``text`` (empty ones skipped). Raises ``ConfigError``."""
    try:
        nodes = [n for n in yaml.compose_all(text, Loader=yaml.SafeLoader) if n is not None]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(f"invalid YAML: {exc.problem}", source=source, line=line) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", source=source) from None
    except RecursionError:  # PyYAML's composer recurses once per level: [[[...]]] 5,000 deep
        raise ConfigError("invalid YAML: nested too deeply", source=source) from None
    return queues_from_documents([YamlField(n, "", source) for n in nodes])


def queues_from_documents(documents: list[YamlField]) -> Queues:
    """The objects of ``documents`` (each a parsed YAML mapping; the cluster YAML's
    ``queues:`` list gives its items), cross-checked as a whole."""
    reader = Reader()
    for number, doc in enumerate(documents, start=1):
        reader.read(number, doc)
    return reader.finish()


def _kind_of(doc: YamlField) -> str | None:
    """The document's ``kind`` if it is a mapping with a plain string one."""
    node = doc.node
    if not isinstance(node, yaml.MappingNode):
        return None
    for key, value in node.value:
        if key.value == "kind" and isinstance(value, yaml.ScalarNode):
            return str(value.value)
    return None


def _in_document(exc: ConfigError, source: str, document: str) -> ConfigError:
    """``exc`` with the document in where it happened: ``queues.yaml:12: document 3
    (ClusterQueue team-a), field 'spec.cohort': ...``."""
    line = f":{exc.line}" if exc.line is not None else ""
    return ConfigError(exc.message, source=f"{source}{line}: {document}", field=exc.field)


class _Doc:
    """Where an object came from, for the errors of the checks made once all are read."""

    __slots__ = ("label", "spec", "top")

    def __init__(self, label: str, top: YamlField, spec: YamlField | None) -> None:
        self.label = label
        self.top = top
        self.spec = spec

    def error_at(self, field: YamlField, message: str) -> ConfigError:
        return _in_document(field.error(message), field.source, self.label)

    def flavor_field(self, flavor: str) -> YamlField:
        """The ``name`` field that names ``flavor`` in ``spec.resourceGroups`` (already
        checked, so read without checking again)."""
        for group in _items(_child(self.spec, "resourceGroups")):
            for item in _items(_child(group, "flavors")):
                name = _child(item, "name")
                if name is not None and name.text() == flavor:
                    return name
        return self.top


def _child(field: YamlField | None, key: str) -> YamlField | None:
    if field is None or not isinstance(field.node, yaml.MappingNode):
        return None
    for key_node, value_node in field.node.value:
        if key_node.value == key:
            return field.child(value_node, key)
    return None


def _items(field: YamlField | None) -> list[YamlField]:
    return field.sequence() if field is not None else []


class Reader:
    """Reads documents one at a time (``read``) and checks them as a whole (``finish``)."""

    def __init__(self) -> None:
        self.flavors: dict[str, ResourceFlavor] = {}
        self.cqs: dict[str, tuple[ClusterQueue, _Doc]] = {}
        self.cohorts: dict[str, tuple[Cohort, _Doc]] = {}
        self.locals: dict[tuple[str, str], tuple[LocalQueue, _Doc]] = {}
        self.classes: dict[str, WorkloadPriorityClass] = {}
        self.volcano: dict[str, VolcanoQueue] = {}
        self.fair_sharing: FairSharing | None = None

    def read(self, number: int, doc: YamlField) -> None:
        label = f"document {number}"
        try:
            self._read(label, doc)
        except ConfigError as exc:
            if "document" in (exc.source or ""):
                raise
            raise _in_document(exc, doc.source, label) from None

    def _read(self, label: str, doc: YamlField) -> None:
        if _kind_of(doc) == "Configuration":
            self._configuration(doc)
            return
        top = doc.mapping(
            ("apiVersion", "kind", "metadata", "spec", "value", "description", "status"),
            required=("apiVersion", "kind", "metadata"),
        )
        kind = top["kind"].as_str()
        versions = _KINDS.get(kind)
        if versions is None:
            raise top["kind"].error(f"unknown kind {kind!r}; expected one of {sorted(_KINDS)}")
        api = top["apiVersion"].as_str()
        if api not in versions:
            raise top["apiVersion"].error(
                f"kind {kind} is not served by {api!r}; expected one of {list(versions)}"
            )
        meta = top["metadata"].mapping(_META, required=("name",))
        name = dns_name(meta["name"])
        where = _Doc(f"{label} ({kind} {name})", doc, top.get("spec"))
        try:
            self._kind(kind, name, top, meta, where)
        except ConfigError as exc:
            raise _in_document(exc, doc.source, where.label) from None

    def _kind(
        self,
        kind: str,
        name: str,
        top: dict[str, YamlField],
        meta: dict[str, YamlField],
        where: _Doc,
    ) -> None:
        spec_field = top.get("spec")
        if kind == "WorkloadPriorityClass":
            if "spec" in top:
                raise top["spec"].error("a WorkloadPriorityClass has no spec: value is top-level")
            if "value" not in top:
                raise top["metadata"].error("missing required key 'value'")
            self._unique(name, self.classes, top["metadata"], kind)
            value = top["value"].as_int(minimum=-(2**31))
            description = top["description"].text() if "description" in top else ""
            self.classes[name] = WorkloadPriorityClass(name, value, description)
            return
        for key in ("value", "description"):
            if key in top:
                raise top[key].error(f"unknown key {key!r} for kind {kind}")
        if kind == "ResourceFlavor":
            self._unique(name, self.flavors, top["metadata"], kind)
            self.flavors[name] = resource_flavor(name, spec_field)
        elif kind == "ClusterQueue":
            self._unique(name, self.cqs, top["metadata"], kind)
            self.cqs[name] = (cluster_queue(name, spec_field), where)
        elif kind == "Cohort":
            self._unique(name, self.cohorts, top["metadata"], kind)
            self.cohorts[name] = (cohort(name, spec_field), where)
        elif kind == "LocalQueue":
            namespace = dns_name(meta["namespace"]) if "namespace" in meta else "default"
            if spec_field is None:
                raise top["metadata"].error("missing required key 'spec'")
            spec = spec_field.mapping(("clusterQueue", "stopPolicy"), required=("clusterQueue",))
            if (namespace, name) in self.locals:
                raise top["metadata"].error(f"duplicate LocalQueue {namespace}/{name}")
            local = LocalQueue(
                namespace,
                name,
                dns_name(spec["clusterQueue"]),
                optional(spec, "stopPolicy", lambda f: choice(f, StopPolicy), StopPolicy.NONE),
            )
            where.top = spec["clusterQueue"]
            self.locals[(namespace, name)] = (local, where)
        else:
            self._unique(name, self.volcano, top["metadata"], kind)
            self.volcano[name] = volcano_queue(name, spec_field)

    def _configuration(self, doc: YamlField) -> None:
        """Kueue's Configuration: only its ``fairSharing`` means anything here."""
        top = doc.mapping(("apiVersion", "kind", "metadata", "fairSharing"), ("apiVersion",))
        api = top["apiVersion"].as_str()
        if api not in _CONFIG:
            raise top["apiVersion"].error(
                f"kind Configuration is not served by {api!r}; expected one of {list(_CONFIG)}"
            )
        if self.fair_sharing is not None:
            raise top["kind"].error("duplicate Configuration: at most one per file")
        self.fair_sharing = FairSharing()
        if "fairSharing" in top:
            self.fair_sharing = fair_sharing(top["fairSharing"])

    @staticmethod
    def _unique(name: str, seen: Container[str], where: YamlField, kind: str) -> None:
        if name in seen:
            raise where.error(f"duplicate {kind} {name!r}")

    def finish(self) -> Queues:
        for cq, where in self.cqs.values():
            self._known_flavors(cq.quotas(), where)
        for node, where in self.cohorts.values():
            self._known_flavors(node.quotas(), where)
            self._no_cycle(node, where)
        for local, where in self.locals.values():
            if local.cluster_queue not in self.cqs:
                raise where.error_at(where.top, f"unknown ClusterQueue {local.cluster_queue!r}")
        return Queues(
            flavors=dict(self.flavors),
            cluster_queues={n: cq for n, (cq, _) in self.cqs.items()},
            cohorts={n: c for n, (c, _) in self.cohorts.items()},
            local_queues={k: lq for k, (lq, _) in self.locals.items()},
            priority_classes=dict(self.classes),
            volcano_queues=dict(self.volcano),
            fair_sharing=self.fair_sharing or FairSharing(),
        )

    def _known_flavors(self, quotas: Iterable[tuple[str, ResourceQuota]], where: _Doc) -> None:
        for flavor, _ in quotas:
            if flavor not in self.flavors:
                field = where.flavor_field(flavor)
                raise where.error_at(field, f"unknown ResourceFlavor {flavor!r}")

    def cohorts_in_cycles(self) -> list[str]:
        """The Cohorts whose chain of parents comes back to one it passed (themselves in
        the cycle or leading into it), in the order read."""
        out = []
        for name, (node, _) in self.cohorts.items():
            seen = [name]
            parent = node.parent
            while parent is not None and parent not in seen:
                seen.append(parent)
                found = self.cohorts.get(parent)
                parent = found[0].parent if found is not None else None
            if parent is not None:
                out.append(name)
        return out

    def _no_cycle(self, cohort: Cohort, where: _Doc) -> None:
        seen = [cohort.name]
        parent = cohort.parent
        while parent is not None:
            if parent in seen:
                cycle = " -> ".join([*seen, parent])
                raise where.error_at(where.top, f"parent cycle {cycle}")
            seen.append(parent)
            found = self.cohorts.get(parent)
            parent = found[0].parent if found is not None else None
