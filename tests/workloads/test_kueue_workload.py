"""Kueue's Workload as built from the engine's decisions (``phalanx.workloads.kueue_workload``):
its name, the verdict over a Job's engine jobs, conditions through admission, eviction and the
end, and the Job's ``suspend`` on create."""

from __future__ import annotations

from typing import Any

from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND
from phalanx.workloads.kueue_workload import (
    Placement,
    Verdict,
    as_reconciled,
    judge,
    suspend_on_create,
    workload,
    workload_name,
)
from phalanx.workloads.plan import EngineJob

JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {
        "name": "pi",
        "namespace": "team-a",
        "uid": "u-1",
        "labels": {"kueue.x-k8s.io/queue-name": "lq"},
    },
    "spec": {"parallelism": 2},
}
POD_SETS = [
    {
        "name": "main",
        "count": 2,
        "template": {
            "spec": {
                "containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                    {"name": "b", "resources": {"requests": {"cpu": "250m"}}},
                ]
            }
        },
    }
]
PLACED = Placement("cq", {"cpu": "f1", "memory": "f1"})


def conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {
        c["type"]: (c["status"], c["reason"], c["message"]) for c in obj["status"]["conditions"]
    }


def test_the_name_is_kind_name_and_a_hash_of_the_owner() -> None:
    one = workload_name("Job", "batch", "pi", "u-1")
    assert one.startswith("job-pi-") and len(one) == len("job-pi-") + 5
    assert workload_name("Job", "batch", "pi", "u-2") != one  # a new Job of the same name
    assert len(workload_name("Job", "batch", "x" * 300, "u")) <= 253


def test_a_job_is_admitted_once_every_live_engine_job_started() -> None:
    running = EngineJob(1, JobState.RUNNING, start=5 * SECOND)
    waiting = EngineJob(2, JobState.PENDING, reason="AssocGrpCpuLimit", message="no quota")
    done = EngineJob(3, JobState.COMPLETED, start=SECOND, end=2 * SECOND)
    assert judge([running, done]) == Verdict(admitted=True)
    assert judge([running, waiting]) == Verdict(admitted=False, message="no quota")
    assert judge([], "LocalQueue lq doesn't exist") == Verdict(False, "LocalQueue lq doesn't exist")
    assert judge([done]).admitted is False  # nothing live: nothing holds quota
    requeued = EngineJob(4, JobState.PENDING, reason="BeginTime", restarts=1)
    assert judge([requeued]) == Verdict(admitted=False, message="BeginTime", evicted=True)


def test_admission_pending_eviction_and_the_end_in_kueues_conditions() -> None:
    pending = workload(JOB, POD_SETS, Verdict(False, "no quota"), None, None, None, 0)
    assert pending["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert pending["spec"]["queueName"] == "lq" and pending["spec"]["active"] is True
    assert conditions(pending) == {"QuotaReserved": ("False", "Pending", "no quota")}
    assert "admission" not in pending["status"]
    assert all("lastProbeTime" not in c for c in pending["status"]["conditions"])

    admitted = workload(JOB, POD_SETS, Verdict(True), PLACED, None, pending, 10 * SECOND)
    assert conditions(admitted)["Admitted"] == ("True", "Admitted", "The workload is admitted")
    assert conditions(admitted)["QuotaReserved"][0] == "True"
    assignment = admitted["status"]["admission"]["podSetAssignments"][0]
    assert admitted["status"]["admission"]["clusterQueue"] == "cq"
    assert assignment["resourceUsage"] == {"cpu": "1500m", "memory": "2Gi"}
    assert assignment["count"] == 2 and assignment["flavors"] == {"cpu": "f1", "memory": "f1"}

    evicted = workload(JOB, POD_SETS, Verdict(False, "wait"), None, None, admitted, 20 * SECOND)
    assert conditions(evicted)["Evicted"][:2] == ("True", "Preempted")
    assert conditions(evicted)["Admitted"][0] == "False"
    assert "admission" not in evicted["status"]

    again = workload(JOB, POD_SETS, Verdict(True), PLACED, None, evicted, 30 * SECOND)
    assert conditions(again)["Evicted"][0] == "False"
    ended = workload(JOB, POD_SETS, Verdict(False), PLACED, (True, "ok"), again, 40 * SECOND)
    assert conditions(ended)["Finished"] == ("True", "Succeeded", "ok")


def test_a_condition_moves_its_transition_time_only_when_its_status_does() -> None:
    first = workload(JOB, POD_SETS, Verdict(False, "a"), None, None, None, 0)
    later = workload(JOB, POD_SETS, Verdict(False, "b"), None, None, first, 9 * SECOND)
    before, after = first["status"]["conditions"][0], later["status"]["conditions"][0]
    assert after["message"] == "b"
    assert after["lastTransitionTime"] == before["lastTransitionTime"]


def test_the_webhook_suspends_a_queued_job_and_the_reconciler_sees_it_running() -> None:
    plain: dict[str, Any] = {"metadata": {"name": "x"}, "spec": {"suspend": False}}
    suspend_on_create(plain)
    assert plain["spec"]["suspend"] is False
    queued: dict[str, Any] = {**JOB, "spec": {"suspend": False}}
    suspend_on_create(queued)
    assert queued["spec"]["suspend"] is True
    assert as_reconciled(queued, active=True)["spec"]["suspend"] is False
    assert as_reconciled(queued, active=False)["spec"]["suspend"] is True
    assert queued["spec"]["suspend"] is True  # the stored object is left alone


def test_a_child_job_of_another_workload_is_left_to_its_parent() -> None:
    child: dict[str, Any] = {
        **JOB,
        "metadata": {
            **JOB["metadata"],
            "ownerReferences": [{"kind": "JobSet", "name": "js", "controller": True}],
        },
        "spec": {"suspend": False},
    }
    suspend_on_create(child)
    assert child["spec"]["suspend"] is False
