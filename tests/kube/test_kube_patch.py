"""Patches as kube-apiserver applies them: merge patch, strategic merge with merge keys and
directives."""

from __future__ import annotations

from typing import Any

from phalanx.kube.patch import merge_patch, strategic_merge

POD: dict[str, Any] = {
    "spec": {
        "containers": [
            {"name": "a", "image": "1", "env": [{"name": "X", "value": "1"}]},
            {"name": "b", "image": "1"},
        ],
        "volumes": [{"name": "v", "emptyDir": {}}],
        "tolerations": [{"key": "k"}],
    },
    "metadata": {"finalizers": ["f1"], "labels": {"a": "1", "b": "2"}},
}


def test_merge_patch_rfc7386() -> None:
    out = merge_patch(POD, {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"x": [1]}})
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert out["spec"]["x"] == [1] and out["spec"]["containers"] == POD["spec"]["containers"]
    assert POD["metadata"]["labels"] == {"a": "1", "b": "2"}  # the target is not changed


def test_strategic_merge_by_keys() -> None:
    patch = {
        "spec": {
            "containers": [
                {"name": "b", "image": "2"},
                {"name": "a", "env": [{"name": "Y", "value": "2"}]},
                {"name": "c", "image": "3"},
            ],
            "tolerations": [{"key": "other"}],
        },
        "metadata": {"finalizers": ["f2"]},
    }
    out = strategic_merge(POD, patch)
    containers = {c["name"]: c for c in out["spec"]["containers"]}
    assert list(containers) == ["a", "b", "c"]
    assert containers["b"]["image"] == "2" and containers["a"]["image"] == "1"
    assert [e["name"] for e in containers["a"]["env"]] == ["X", "Y"]
    assert out["spec"]["tolerations"] == [{"key": "other"}]  # no merge key: replaced
    assert out["metadata"]["finalizers"] == ["f1", "f2"]


def test_strategic_merge_directives() -> None:
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "a", "$patch": "delete"}],
            "volumes": [{"name": "w", "hostPath": {"path": "/x"}}, {"$patch": "replace"}],
        },
        "metadata": {
            "$deleteFromPrimitiveList/finalizers": ["f1"],
            "labels": {"$patch": "replace", "z": "9"},
        },
    }
    out = strategic_merge(POD, patch)
    assert [c["name"] for c in out["spec"]["containers"]] == ["b"]
    assert out["spec"]["volumes"] == [{"name": "w", "hostPath": {"path": "/x"}}]
    assert out["metadata"]["finalizers"] == []
    assert out["metadata"]["labels"] == {"z": "9"}
    retained = strategic_merge(
        {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}},
        {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}},
    )
    assert retained == {"strategy": {"type": "Recreate"}}
