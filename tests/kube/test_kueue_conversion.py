"""One stored object read through each served version of its kind (``phalanx.kube.conversion``):
Kueue's renames between v1beta1 and v1beta2, both ways, and nothing else touched."""

from __future__ import annotations

from typing import Any

from phalanx.kube.conversion import convert

OLD_CQ: dict[str, Any] = {
    "apiVersion": "kueue.x-k8s.io/v1beta1",
    "kind": "ClusterQueue",
    "metadata": {"name": "cq"},
    "spec": {"cohort": "all", "queueingStrategy": "StrictFIFO"},
}


def test_a_v1beta1_cluster_queue_reads_as_v1beta2_and_back() -> None:
    new = convert(OLD_CQ, "kueue.x-k8s.io/v1beta2")
    assert new["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert new["spec"] == {"cohortName": "all", "queueingStrategy": "StrictFIFO"}
    assert OLD_CQ["spec"] == {"cohort": "all", "queueingStrategy": "StrictFIFO"}  # kept
    assert convert(new, "kueue.x-k8s.io/v1beta1") == OLD_CQ


def test_a_cohorts_parent_is_renamed_from_either_old_version() -> None:
    for old in ("v1alpha1", "v1beta1"):
        cohort = {
            "apiVersion": f"kueue.x-k8s.io/{old}",
            "kind": "Cohort",
            "metadata": {"name": "c"},
            "spec": {"parent": "root"},
        }
        assert convert(cohort, "kueue.x-k8s.io/v1beta2")["spec"] == {"parentName": "root"}
        back = convert(convert(cohort, "kueue.x-k8s.io/v1beta2"), f"kueue.x-k8s.io/{old}")
        assert back == cohort


def test_the_same_version_and_other_kinds_are_left_alone() -> None:
    assert convert(OLD_CQ, "kueue.x-k8s.io/v1beta1") is OLD_CQ
    workload = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "spec": {"a": 1}}
    assert convert(workload, "kueue.x-k8s.io/v1beta1") == {
        **workload,
        "apiVersion": "kueue.x-k8s.io/v1beta1",
    }
    job = {"apiVersion": "batch/v1", "kind": "ClusterQueue", "spec": {"cohort": "x"}}
    assert convert(job, "batch/v2")["spec"] == {"cohort": "x"}  # not Kueue's group
