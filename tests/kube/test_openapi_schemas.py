"""Where the schemas come from: Kubernetes 1.32's built-in definitions (kubernetes-validate) as
OpenAPI v3, and our declarations of the custom kinds, field by field as issue 12 names them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openapi_data import needs_data

from phalanx.kube.openapi import (
    FieldError,
    available,
    builtin,
    catalog,
    custom,
    kinds,
    openapi_v3,
    validate,
)

pytestmark = [needs_data]


def test_available_with_the_package_installed() -> None:
    assert available() and builtin.installed()


def test_builtin_definitions_are_openapi_v3() -> None:
    defs = builtin.definitions()
    assert len(defs) >= 600  # every type of the release
    text = json.dumps(defs)
    assert "#/$defs/" not in text and '"null"' not in text
    pod = defs["io.k8s.api.core.v1.Pod"]
    assert pod["type"] == "object"
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert "enum" not in pod["properties"]["kind"]  # routed by, not validated against a list
    # A $ref with a description beside it is wrapped, as kube-openapi writes it.
    assert pod["properties"]["spec"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}
    ]
    assert defs[builtin.INT_OR_STRING]["format"] == "int-or-string"
    assert builtin.by_gvk()[("batch", "v1", "Job")] == "io.k8s.api.batch.v1.Job"


def _field(schemas: dict[str, Any], schema: Any, path: tuple[str, ...]) -> dict[str, Any]:
    """The schema at ``path`` (``[]`` steps into a list's items, ``*`` into a map's values)."""
    node: dict[str, Any] = schema
    for step in path:
        while "allOf" in node or "$ref" in node:
            ref = node.get("$ref") or node["allOf"][0]["$ref"]
            node = schemas[ref.rsplit("/", 1)[1]]
        if step == "[]":
            node = node["items"]
        elif step == "*":
            node = node["additionalProperties"]
        else:
            assert step in node.get("properties", {}), (path, step)
            node = node["properties"][step]
    return node


# (group, version, kind) -> fields issue 12 names, each as its path from the object's root.
ISSUE_FIELDS = {
    ("batch.volcano.sh", "v1alpha1", "Job"): [
        "spec.minAvailable",
        "spec.tasks.[].template.spec.containers",
        "spec.tasks.[].policies.[].event",
        "spec.policies.[].action",
        "spec.queue",
        "spec.maxRetry",
    ],
    ("jobset.x-k8s.io", "v1alpha2", "JobSet"): [
        "spec.replicatedJobs.[].template.spec.template.spec.containers",
        "spec.failurePolicy.maxRestarts",
        "spec.successPolicy.operator",
        "spec.startupPolicy.startupPolicyOrder",
    ],
    ("kubeflow.org", "v1", "PyTorchJob"): [
        "spec.pytorchReplicaSpecs.*.template.spec.containers",
        "spec.pytorchReplicaSpecs.*.restartPolicy",
        "spec.runPolicy.cleanPodPolicy",
        "spec.elasticPolicy.rdzvBackend",
    ],
    **{
        ("kueue.x-k8s.io", v, "ClusterQueue"): [
            "spec.resourceGroups.[].flavors.[].resources.[].nominalQuota",
            "spec.resourceGroups.[].flavors.[].resources.[].borrowingLimit",
            "spec.resourceGroups.[].flavors.[].resources.[].lendingLimit",
            "spec.cohort" if v == "v1beta1" else "spec.cohortName",
            "spec.namespaceSelector.matchLabels",
            "spec.queueingStrategy",
            "spec.preemption.reclaimWithinCohort",
            "spec.flavorFungibility.whenCanBorrow",
            "spec.fairSharing.weight",
            "spec.stopPolicy",
        ]
        for v in ("v1beta1", "v1beta2")
    },
    ("kueue.x-k8s.io", "v1beta2", "LocalQueue"): ["spec.clusterQueue", "spec.stopPolicy"],
    ("kueue.x-k8s.io", "v1beta2", "ResourceFlavor"): ["spec.nodeLabels", "spec.nodeTaints"],
    ("kueue.x-k8s.io", "v1beta2", "Workload"): ["spec.podSets.[].template.spec.containers"],
    ("kueue.x-k8s.io", "v1alpha1", "Cohort"): ["spec.parent", "spec.resourceGroups"],
    ("scheduling.volcano.sh", "v1beta1", "Queue"): ["spec.weight", "spec.capability.*"],
}


@pytest.mark.parametrize("gvk", sorted(ISSUE_FIELDS), ids="/".join)
def test_custom_kinds_declare_the_issues_fields(gvk: tuple[str, str, str]) -> None:
    info = catalog.kind_info(*gvk)
    assert info is not None and info.origin == "crd"
    schemas = catalog.schemas_of(info)
    for field in ISSUE_FIELDS[gvk]:
        assert _field(schemas, schemas[info.schema], tuple(field.split(".")))


def test_every_custom_kind_is_served_with_its_status_unmodelled() -> None:
    served = {(k.group, k.version, k.kind) for k in kinds() if k.origin == "crd"}
    assert served == set(custom.schemas())
    for gvk, schema in custom.schemas().items():
        status = schema["properties"].get("status")
        if status is not None:
            assert status["x-kubernetes-preserve-unknown-fields"] is True, gvk


def _paths(errors: list[FieldError]) -> list[tuple[str, str]]:
    return [(e.path, e.reason) for e in errors]


def _obj(api_version: str, kind: str, spec: dict[str, Any] | None, **top: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "x", "namespace": "default"},
        **top,
    }
    if spec is not None:
        out["spec"] = spec
    return out


def test_custom_kind_values_are_checked() -> None:
    vcjob = _obj(
        "batch.volcano.sh/v1alpha1",
        "Job",
        {"minAvailable": "three", "tasks": [{"replicas": 1, "bogus": 1}]},
        status={"anything": {"at": "all"}},
    )
    assert _paths(validate(vcjob, "Strict")[0]) == [
        ("spec.minAvailable", "FieldValueTypeInvalid"),
        ("spec.tasks[0].bogus", "UnknownField"),
    ]
    jobset = _obj(
        "jobset.x-k8s.io/v1alpha2",
        "JobSet",
        {"successPolicy": {"operator": "Most"}, "startupPolicy": {}},
    )
    assert _paths(validate(jobset, "Strict")[0]) == [
        ("spec.successPolicy.operator", "FieldValueNotSupported"),
        ("spec.startupPolicy.startupPolicyOrder", "FieldValueRequired"),
    ]
    wpc = _obj("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass", None, description="d")
    assert _paths(validate(wpc, "Strict")[0]) == [("value", "FieldValueRequired")]
    ptj = _obj("kubeflow.org/v1", "PyTorchJob", {"runPolicy": {}})
    assert _paths(validate(ptj, "Strict")[0]) == [
        ("spec.pytorchReplicaSpecs", "FieldValueRequired")
    ]


def test_kueue_versions_name_the_cohort_differently() -> None:
    def cq(version: str, field: str) -> dict[str, Any]:
        return _obj(f"kueue.x-k8s.io/{version}", "ClusterQueue", {field: "team"})

    assert validate(cq("v1beta1", "cohort"), "Strict") == ([], [])
    assert validate(cq("v1beta2", "cohortName"), "Strict") == ([], [])
    assert _paths(validate(cq("v1beta2", "cohort"), "Strict")[0]) == [
        ("spec.cohort", "UnknownField")
    ]


def test_documents_are_stable_bytes() -> None:
    """The index's hash is of the bytes served: building twice gives the same bytes."""
    for gv in ("api/v1", "apis/kubeflow.org/v1"):
        body = openapi_v3(gv)
        assert body is not None
        catalog.document_bytes.cache_clear()
        assert openapi_v3(gv) == body
