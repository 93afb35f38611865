"""Volcano Job reconciler: the gang, pods' names and labels, plugins, policies, state."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from phalanx.domain.state import JobState
from phalanx.domain.time import SECOND
from phalanx.errors import InputError
from phalanx.testing.workloads import Bench
from phalanx.workloads import vcjob
from phalanx.workloads.plan import Context
from phalanx.workloads.volcano import volcano_shape

CTX = Context(user="alice", log_dir="/logs")
T0 = 1_000 * SECOND


def vcjob_obj(**spec: Any) -> dict[str, Any]:
    template = {
        "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["echo", "hi"]}]}
    }
    body: dict[str, Any] = {
        "minAvailable": 3,
        "queue": "research",
        "plugins": {"env": [], "svc": []},
        "tasks": [
            {"name": "ps", "replicas": 1, "template": copy.deepcopy(template)},
            {"name": "worker", "replicas": 3, "template": copy.deepcopy(template)},
        ],
    }
    body.update(spec)
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "vj", "namespace": "ml", "uid": "u1"},
        "spec": body,
    }


def step(bench: Bench, now: int) -> Any:
    plan = vcjob.reconcile(
        bench.obj, list(bench.pods.values()), bench.engine(), now, CTX, bench.names
    )
    bench.apply(plan)
    return plan


def env_of(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}


def test_first_min_available_pods_are_one_gang_the_rest_alone() -> None:
    bench = Bench(vcjob_obj())
    plan = step(bench, T0)
    assert sorted(bench.pods) == ["vj-ps-0", "vj-worker-0", "vj-worker-1", "vj-worker-2"]
    assert [s.pods for s in plan.submit] == [
        ("vj-ps-0", "vj-worker-0", "vj-worker-1"),
        ("vj-worker-2",),
    ]
    gang = plan.submit[0].spec
    assert len(gang.tasks) == 3 and gang.account == "ml" and gang.user == "alice"
    assert ("volcano.sh/queue-name", "research") in gang.extra
    assert bench.obj["status"]["state"]["phase"] == "Pending"
    assert bench.obj["status"]["minAvailable"] == 3


def test_min_available_equal_to_total_makes_one_gang() -> None:
    bench = Bench(vcjob_obj(minAvailable=None))
    plan = step(bench, T0)
    assert len(plan.submit) == 1 and len(plan.submit[0].pods) == 4


def test_pods_carry_volcano_labels_and_plugin_env() -> None:
    bench = Bench(vcjob_obj())
    step(bench, T0)
    pod = bench.pods["vj-worker-1"]
    labels = pod["metadata"]["labels"]
    assert labels["volcano.sh/job-name"] == "vj"
    assert labels["volcano.sh/task-spec"] == "worker"
    assert labels["volcano.sh/queue-name"] == "research"
    assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "vj-u1"
    env = env_of(pod)
    assert env["VK_TASK_INDEX"] == env["VC_TASK_INDEX"] == "1"
    assert env["VC_WORKER_NUM"] == "3"
    assert env["VC_WORKER_HOSTS"] == "vj-worker-0.vj,vj-worker-1.vj,vj-worker-2.vj"
    assert env["VC_PS_HOSTS"] == "vj-ps-0.vj"
    # the task's own env reaches the engine task of its rank
    sub = bench.specs[bench.job_of("vj-worker-1")]
    assert ("VC_TASK_INDEX", "1") in sub.spec.tasks[2].environment


def test_runs_then_completes() -> None:
    bench = Bench(vcjob_obj())
    step(bench, T0)
    gang, single = bench.job_of("vj-ps-0"), bench.job_of("vj-worker-2")
    bench.move(gang, JobState.RUNNING, T0 + SECOND)
    step(bench, T0 + SECOND)
    assert bench.obj["status"]["state"]["phase"] == "Running"
    assert bench.obj["status"]["running"] == 3 and bench.obj["status"]["pending"] == 1
    bench.move(gang, JobState.COMPLETED, T0 + 2 * SECOND)
    bench.move(single, JobState.COMPLETED, T0 + 2 * SECOND)
    step(bench, T0 + 2 * SECOND)
    status = bench.obj["status"]
    assert status["state"]["phase"] == "Completed" and status["succeeded"] == 4
    assert status["taskStatusCount"]["worker"] == {"phase": {"Succeeded": 3}}
    assert [c["status"] for c in status["conditions"]] == ["Pending", "Running", "Completed"]


def test_failure_without_policy_fails_the_job_once_no_pod_is_active() -> None:
    bench = Bench(vcjob_obj(minAvailable=None))
    step(bench, T0)
    job = bench.job_of("vj-ps-0")
    bench.move(job, JobState.FAILED, T0 + SECOND)
    step(bench, T0 + SECOND)
    assert bench.obj["status"]["state"]["phase"] == "Failed"
    assert bench.obj["status"]["failed"] == 4


def test_pod_failed_restart_job_until_max_retry() -> None:
    bench = Bench(
        vcjob_obj(
            minAvailable=None, maxRetry=2, policies=[{"event": "PodFailed", "action": "RestartJob"}]
        )
    )
    step(bench, T0)
    first = bench.job_of("vj-ps-0")
    bench.move(first, JobState.FAILED, T0 + SECOND)
    plan = step(bench, T0 + SECOND)
    assert bench.obj["status"]["retryCount"] == 1
    assert bench.obj["status"]["state"]["phase"] == "Pending"
    second = bench.job_of("vj-ps-0")
    assert second != first and len(plan.submit) == 1
    assert set(bench.phases().values()) == {"Pending"}
    assert any(e["reason"] == "ExecuteAction" for e in plan.events)
    bench.move(second, JobState.FAILED, T0 + 2 * SECOND)
    step(bench, T0 + 2 * SECOND)
    assert bench.obj["status"]["retryCount"] == 2
    assert bench.obj["status"]["state"]["phase"] == "Failed"


def test_exit_code_policy_and_task_policy_first() -> None:
    bench = Bench(
        vcjob_obj(
            minAvailable=None,
            policies=[{"exitCode": 3, "action": "AbortJob"}],
        )
    )
    step(bench, T0)
    bench.move(bench.job_of("vj-ps-0"), JobState.FAILED, T0 + SECOND, exit_code=3)
    plan = step(bench, T0 + SECOND)
    assert bench.obj["status"]["state"]["phase"] == "Aborted"
    assert sorted(plan.delete) == []  # all had ended: nothing left to kill
    spec = vcjob_obj(minAvailable=1, policies=[{"event": "PodFailed", "action": "AbortJob"}])
    spec["spec"]["tasks"][1]["policies"] = [{"event": "PodFailed", "action": "TerminateJob"}]
    bench = Bench(spec)
    step(bench, T0)
    ps = bench.job_of("vj-ps-0")
    bench.move(bench.job_of("vj-worker-0"), JobState.FAILED, T0 + SECOND)
    plan = step(bench, T0 + SECOND)
    assert bench.obj["status"]["state"]["phase"] == "Terminated"
    assert "vj-ps-0" in plan.delete and ps in plan.cancel


def test_task_completed_complete_job_kills_the_rest() -> None:
    spec = vcjob_obj(minAvailable=1)
    spec["spec"]["tasks"][0]["policies"] = [{"event": "TaskCompleted", "action": "CompleteJob"}]
    bench = Bench(spec)
    step(bench, T0)
    bench.move(bench.job_of("vj-ps-0"), JobState.COMPLETED, T0 + SECOND)
    plan = step(bench, T0 + SECOND)
    assert bench.obj["status"]["state"]["phase"] == "Completed"
    assert sorted(plan.delete) == ["vj-worker-0", "vj-worker-1", "vj-worker-2"]


def test_node_failure_is_pod_evicted() -> None:
    bench = Bench(
        vcjob_obj(minAvailable=None, policies=[{"event": "PodEvicted", "action": "RestartJob"}])
    )
    step(bench, T0)
    bench.move(bench.job_of("vj-ps-0"), JobState.NODE_FAIL, T0 + SECOND)
    step(bench, T0 + SECOND)
    assert bench.obj["status"]["retryCount"] == 1


def test_deleted_pod_is_made_again_with_its_gang() -> None:
    bench = Bench(vcjob_obj())
    step(bench, T0)
    old = bench.job_of("vj-ps-0")
    del bench.pods["vj-worker-1"]
    plan = step(bench, T0 + SECOND)
    assert old in plan.cancel
    assert sorted(bench.pods) == ["vj-ps-0", "vj-worker-0", "vj-worker-1", "vj-worker-2"]
    assert bench.job_of("vj-worker-1") == bench.job_of("vj-ps-0") != old


def test_ttl_deletes_the_finished_job() -> None:
    bench = Bench(vcjob_obj(minAvailable=None, ttlSecondsAfterFinished=5))
    step(bench, T0)
    bench.move(bench.job_of("vj-ps-0"), JobState.COMPLETED, T0 + SECOND)
    plan = step(bench, T0 + SECOND)
    assert plan.wake_at == T0 + 6 * SECOND and not bench.deleted
    step(bench, T0 + 6 * SECOND)
    assert bench.deleted


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"tasks": []}, "spec.tasks"),
        ({"minAvailable": 9}, "spec.minAvailable"),
        ({"policies": [{"event": "Nope", "action": "RestartJob"}]}, "spec.policies[0].event"),
        ({"policies": [{"event": "PodFailed", "action": "Nope"}]}, "spec.policies[0].action"),
        ({"plugins": {"mpi": []}}, "spec.plugins"),
        ({"maxRetry": -1}, "spec.maxRetry"),
    ],
)
def test_bad_specs_name_the_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as e:
        volcano_shape(vcjob_obj(**change))
    assert field in str(e.value)
    plan = vcjob.reconcile(vcjob_obj(**change), [], {}, T0, CTX, lambda: "x")
    assert not plan.create and plan.events[0]["reason"] == "FailedValidation"


def test_defaults() -> None:
    shape = volcano_shape(vcjob_obj(minAvailable=None, queue=None))
    assert shape.min_available == 4 and shape.max_retry == 3 and shape.queue == "default"
