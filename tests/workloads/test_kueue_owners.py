"""Where each kind Kueue integrates keeps its suspend flag, as its webhook sets it."""

from __future__ import annotations

from typing import Any

from phalanx.workloads.kueue_owners import (
    has_suspend,
    is_suspended,
    pod_sets,
    suspend_on_create,
    with_suspend,
)

LABELS = {"kueue.x-k8s.io/queue-name": "user-queue"}


def _obj(api: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": "x", "labels": LABELS},
        "spec": spec,
    }


def test_a_pytorchjobs_flag_is_under_its_run_policy() -> None:
    obj = _obj("kubeflow.org/v1", "PyTorchJob", {"pytorchReplicaSpecs": {}})
    suspend_on_create(obj)
    assert obj["spec"]["runPolicy"] == {"suspend": True} and is_suspended(obj)
    shown = with_suspend(obj, False)
    assert shown["spec"]["runPolicy"]["suspend"] is False
    assert obj["spec"]["runPolicy"]["suspend"] is True  # the object itself is left alone


def test_a_jobsets_flag_is_its_specs_and_a_volcano_job_has_none() -> None:
    jobset = _obj("jobset.x-k8s.io/v1alpha2", "JobSet", {"replicatedJobs": []})
    suspend_on_create(jobset)
    assert jobset["spec"]["suspend"] is True and is_suspended(jobset)
    vcjob = _obj("batch.volcano.sh/v1alpha1", "Job", {"tasks": []})
    suspend_on_create(vcjob)
    assert "suspend" not in vcjob["spec"] and not has_suspend(vcjob) and not is_suspended(vcjob)
    assert with_suspend(vcjob, True)["spec"] == vcjob["spec"]


def test_an_unqueued_workload_is_not_suspended() -> None:
    obj = _obj("kubeflow.org/v1", "PyTorchJob", {"pytorchReplicaSpecs": {}})
    obj["metadata"]["labels"] = {}
    suspend_on_create(obj)
    assert "runPolicy" not in obj["spec"]


def test_a_jobs_pod_set_is_main_of_its_parallelism() -> None:
    job = _obj("batch/v1", "Job", {"parallelism": 3, "template": {"spec": {"containers": []}}})
    assert [(p["name"], p["count"]) for p in pod_sets(job)] == [("main", 3)]
