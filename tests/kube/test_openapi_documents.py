"""The served OpenAPI documents: index, per-group-version documents, v2, kinds, patch metadata."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from openapi_data import needs_data

from phalanx.kube.openapi import (
    kinds,
    openapi_v2,
    openapi_v3,
    openapi_v3_hash,
    openapi_v3_index,
    patch_meta,
)

pytestmark = [needs_data]

# The kinds of issue 12, each with its group/version.
WANTED = (
    {("", "v1", k) for k in ("Namespace", "Pod", "Event", "Service", "ConfigMap")}
    | {
        ("batch", "v1", "Job"),
        ("kubeflow.org", "v1", "PyTorchJob"),
        ("batch.volcano.sh", "v1alpha1", "Job"),
        ("jobset.x-k8s.io", "v1alpha2", "JobSet"),
        ("scheduling.k8s.io", "v1", "PriorityClass"),
        ("kueue.x-k8s.io", "v1alpha1", "Cohort"),
        ("scheduling.volcano.sh", "v1beta1", "Queue"),
        ("apps", "v1", "Deployment"),
        ("apps", "v1", "ReplicaSet"),
        ("autoscaling", "v2", "HorizontalPodAutoscaler"),
    }
    | {
        ("kueue.x-k8s.io", v, k)
        for v in ("v1beta1", "v1beta2")
        for k in (
            "ResourceFlavor",
            "ClusterQueue",
            "LocalQueue",
            "WorkloadPriorityClass",
            "Workload",
        )
    }
    | {
        ("rbac.authorization.k8s.io", "v1", k)
        for k in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
    }
)


def _doc(gv: str) -> dict[str, Any]:
    raw = openapi_v3(gv)
    assert raw is not None, gv
    doc: dict[str, Any] = json.loads(raw)
    return doc


def test_every_wanted_kind_has_a_schema() -> None:
    assert {(k.group, k.version, k.kind) for k in kinds()} >= WANTED


def test_the_index_lists_every_group_version_with_its_hash() -> None:
    index = openapi_v3_index("")
    gvs = {("api/v1" if not k.group else f"apis/{k.group}/{k.version}") for k in kinds()}
    assert set(index["paths"]) == gvs
    for gv, entry in index["paths"].items():
        body = openapi_v3(gv)
        assert body is not None
        digest = hashlib.sha512(body).hexdigest().upper()
        assert entry["serverRelativeURL"] == f"/openapi/v3/{gv}?hash={digest}"
        assert openapi_v3_hash(gv) == digest
    assert openapi_v3_index("/k8s/")["paths"]["api/v1"]["serverRelativeURL"].startswith(
        "/k8s/openapi/v3/api/v1?hash="
    )
    assert openapi_v3("apis/nothing/v1") is None


def _refs(node: Any, into: set[str]) -> None:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            into.add(node["$ref"])
        for v in node.values():
            _refs(v, into)
    elif isinstance(node, list):
        for v in node:
            _refs(v, into)


@pytest.mark.parametrize(
    "gv", sorted(openapi_v3_index()["paths"]) if needs_data.args[0] is False else []
)
def test_each_document_is_whole_and_advertises_field_validation(gv: str) -> None:
    """Every $ref resolves inside the document, every kind's schema carries its GVK, and each
    kind's PATCH operation has the fieldValidation query parameter: what kubectl 1.32 reads
    (cli-runtime's queryParamVerifierV3) to send fieldValidation=Strict instead of validating
    on the client."""
    doc = _doc(gv)
    schemas = doc["components"]["schemas"]
    refs: set[str] = set()
    _refs(doc, refs)
    assert {r.rsplit("/", 1)[1] for r in refs} <= set(schemas)
    for k in (k for k in kinds() if k.group_version == gv):
        gvk = {"group": k.group, "version": k.version, "kind": k.kind}
        assert gvk in schemas[k.schema]["x-kubernetes-group-version-kind"]
        root = f"/apis/{k.group}/{k.version}" if k.group else f"/api/{k.version}"
        ns = "/namespaces/{namespace}" if k.namespaced else ""
        assert (
            doc["paths"][f"{root}{ns}/{k.plural}"]["post"]["x-kubernetes-group-version-kind"] == gvk
        )
        assert "get" in doc["paths"][f"{root}{ns}/{k.plural}/{{name}}"]
        if k.namespaced:
            assert doc["paths"][f"{root}/{k.plural}"]["get"]["x-kubernetes-action"] == "list"
        patches = [
            op
            for item in doc["paths"].values()
            if (op := item.get("patch")) and op.get("x-kubernetes-group-version-kind") == gvk
        ]
        assert patches, k
        for op in patches:
            assert {"name": "fieldValidation", "in": "query"}.items() <= next(
                p for p in op["parameters"] if p["name"] == "fieldValidation"
            ).items()


def test_builtin_extensions_kubectl_apply_uses_are_kept() -> None:
    pod_spec = _doc("api/v1")["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]
    containers = pod_spec["properties"]["containers"]
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]


def test_patch_meta() -> None:
    assert patch_meta("batch", "v1", "Job", ("spec", "template", "spec", "containers")) == (
        "merge",
        "name",
    )
    assert patch_meta("", "v1", "Pod", ("spec", "volumes")) == ("merge,retainKeys", "name")
    assert patch_meta("", "v1", "Pod", ("spec", "containers", "ports")) == (
        "merge",
        "containerPort",
    )
    assert patch_meta("apps", "v1", "Deployment", ("spec", "strategy")) == ("retainKeys", None)
    assert patch_meta("", "v1", "Pod", ("spec", "containers", "args")) is None  # atomic
    assert patch_meta("", "v1", "Pod", ("spec", "nothing")) is None
    assert patch_meta("kubeflow.org", "v1", "PyTorchJob", ("spec", "pytorchReplicaSpecs")) is None


def test_openapi_v2_is_swagger_with_resolvable_refs() -> None:
    doc = json.loads(openapi_v2())
    assert doc["swagger"] == "2.0"
    refs: set[str] = set()
    _refs(doc, refs)
    assert all(r.startswith("#/definitions/") for r in refs)
    assert {r.rsplit("/", 1)[1] for r in refs} <= set(doc["definitions"])
    patch = doc["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs/{name}"]["patch"]
    assert any(p["name"] == "fieldValidation" and p["in"] == "query" for p in patch["parameters"])
    assert any(p["in"] == "body" for p in patch["parameters"])


def test_the_servers_merge_key_table_agrees_with_the_documents() -> None:
    """phalanx.kube.patch merges lists by field name; every built-in field the documents give
    a patch merge key has that key in the table (a Service's ports, keyed by port, are told
    apart there by their elements)."""
    from phalanx.kube.patch import MERGE_KEYS, PRIMITIVE_MERGE

    for gv in sorted(openapi_v3_index()["paths"]):
        doc = _doc(gv)
        for name, schema in doc["components"]["schemas"].items():
            if not name.startswith("io.k8s."):
                continue
            for field, prop in (schema.get("properties") or {}).items():
                strategy = prop.get("x-kubernetes-patch-strategy", "")
                if "merge" not in strategy.split(","):
                    continue
                key = prop.get("x-kubernetes-patch-merge-key")
                if key is None:
                    assert field in PRIMITIVE_MERGE, (name, field)
                elif (name, field) != ("io.k8s.api.core.v1.ServiceSpec", "ports"):
                    assert MERGE_KEYS.get(field) == key, (name, field, key)
