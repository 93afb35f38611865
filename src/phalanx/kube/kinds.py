"""The kinds the Kubernetes API serves: group, version, names, scope, verbs, categories,
subresources -- what discovery (``/api/v1``, ``/apis/GROUP/VERSION``) lists and what the
routes and the store look resources up by.

Names, short names and categories follow the upstream definitions (kube-apiserver's built-in
types, Kueue's, Volcano's, the training operator's, JobSet's and KServe's CRDs)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["KINDS", "Kind", "by_kind", "by_resource", "groups", "lookup"]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
"""What every kind here allows; a Namespace lacks ``deletecollection`` as upstream."""


@dataclass(frozen=True)
class Kind:
    group: str
    """"" for the core group (``/api/v1``)."""
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ("status",)
    also: tuple[str, ...] = ()
    """Further versions served (objects are kept as written; read through another version,
    only ``apiVersion`` changes: no field conversion)."""

    @property
    def versions(self) -> tuple[str, ...]:
        """Every version served, the preferred one first."""
        return (self.version, *self.also)

    def api_version_of(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    @property
    def api_version(self) -> str:
        """``v1`` or ``batch/v1``: the object's ``apiVersion``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def resource(self) -> tuple[str, str]:
        """(group, plural): how the store and the errors name the resource."""
        return (self.group, self.plural)

    @property
    def group_version(self) -> str:
        return self.api_version

    def path(self, namespace: str | None, name: str | None = None) -> str:
        """The URL path of the collection (or of ``name`` in it)."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            root += f"/namespaces/{namespace}"
        root += f"/{self.plural}"
        return f"{root}/{name}" if name else root


def _k(
    api_version: str,
    kind: str,
    plural: str,
    *,
    cluster: bool = False,
    short: tuple[str, ...] = (),
    cat: tuple[str, ...] = (),
    status: bool = True,
    scale: bool = False,
    verbs: tuple[str, ...] = ALL_VERBS,
    also: tuple[str, ...] = (),
) -> Kind:
    group, _, version = api_version.rpartition("/")
    return Kind(
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=kind.lower(),
        namespaced=not cluster,
        short_names=short,
        categories=cat,
        verbs=verbs,
        subresources=(("status",) if status else ()) + (("scale",) if scale else ()),
        also=also,
    )


_KUEUE_OLD = ("v1beta1",)
_NS_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")

KINDS: tuple[Kind, ...] = (
    _k("v1", "Namespace", "namespaces", cluster=True, short=("ns",), verbs=_NS_VERBS),
    _k("v1", "Pod", "pods", short=("po",), cat=("all",)),
    _k("v1", "Node", "nodes", cluster=True, short=("no",)),
    _k("v1", "Event", "events", short=("ev",), status=False),
    _k("v1", "Service", "services", short=("svc",), cat=("all",)),
    _k("v1", "ConfigMap", "configmaps", short=("cm",), status=False),
    _k("v1", "Secret", "secrets", status=False),
    _k("v1", "Endpoints", "endpoints", short=("ep",), status=False),
    _k("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", status=False),
    _k("batch/v1", "Job", "jobs", cat=("all",)),
    _k("apps/v1", "Deployment", "deployments", short=("deploy",), cat=("all",), scale=True),
    _k("apps/v1", "ReplicaSet", "replicasets", short=("rs",), cat=("all",), scale=True),
    _k(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        short=("hpa",),
        cat=("all",),
        also=("v1",),
    ),
    _k(
        "scheduling.k8s.io/v1",
        "PriorityClass",
        "priorityclasses",
        cluster=True,
        short=("pc",),
        status=False,
    ),
    _k("rbac.authorization.k8s.io/v1", "Role", "roles", status=False),
    _k("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", cluster=True, status=False),
    _k("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", status=False),
    _k(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        cluster=True,
        status=False,
    ),
    _k("kubeflow.org/v1", "PyTorchJob", "pytorchjobs"),
    _k("batch.volcano.sh/v1alpha1", "Job", "jobs", short=("vcjob", "vj")),
    _k(
        "scheduling.volcano.sh/v1beta1",
        "Queue",
        "queues",
        cluster=True,
        short=("q", "queue-v1beta1"),
    ),
    _k("jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets"),
    _k("serving.kserve.io/v1beta1", "InferenceService", "inferenceservices", short=("isvc",)),
    # Kueue serves v1beta2 (its examples' version) and v1beta1; Cohort also v1alpha1.
    _k(
        "kueue.x-k8s.io/v1beta2",
        "ResourceFlavor",
        "resourceflavors",
        cluster=True,
        short=("flavor", "flavors", "rf"),
        status=False,
        also=_KUEUE_OLD,
    ),
    _k(
        "kueue.x-k8s.io/v1beta2",
        "ClusterQueue",
        "clusterqueues",
        cluster=True,
        short=("cq",),
        also=_KUEUE_OLD,
    ),
    _k(
        "kueue.x-k8s.io/v1beta2",
        "LocalQueue",
        "localqueues",
        short=("queue", "queues", "lq"),
        also=_KUEUE_OLD,
    ),
    _k(
        "kueue.x-k8s.io/v1beta2",
        "WorkloadPriorityClass",
        "workloadpriorityclasses",
        cluster=True,
        status=False,
        also=_KUEUE_OLD,
    ),
    _k("kueue.x-k8s.io/v1beta2", "Workload", "workloads", short=("wl",), also=_KUEUE_OLD),
    _k("kueue.x-k8s.io/v1beta2", "Cohort", "cohorts", cluster=True, also=(*_KUEUE_OLD, "v1alpha1")),
)

_BY_RESOURCE = {k.resource: k for k in KINDS}
_BY_KIND = {(k.group, k.kind): k for k in KINDS}
_BY_PATH = {(k.group, v, k.plural): k for k in KINDS for v in k.versions}


def by_resource(group: str, plural: str) -> Kind | None:
    """The kind served as ``plural`` in ``group`` (one version per group here)."""
    return _BY_RESOURCE.get((group, plural))


def by_kind(api_version: str, kind: str) -> Kind | None:
    """The kind of an object with this ``apiVersion`` and ``kind`` (None: not served)."""
    group, _, version = api_version.rpartition("/")
    found = _BY_KIND.get((group, kind))
    return found if found is not None and version in found.versions else None


def lookup(group: str, version: str, plural: str) -> Kind | None:
    """The kind at ``/apis/GROUP/VERSION/PLURAL`` (``/api/v1/PLURAL``: group "")."""
    return _BY_PATH.get((group, version, plural))


def groups() -> Iterator[tuple[str, list[str]]]:
    """(group, [versions]) in the order kinds are listed, the core group ("") first."""
    seen: dict[str, list[str]] = {}
    for k in KINDS:
        versions = seen.setdefault(k.group, [])
        for v in k.versions:
            if v not in versions:
                versions.append(v)
    yield from seen.items()
