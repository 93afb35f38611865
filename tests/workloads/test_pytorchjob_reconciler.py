"""kubeflow.org/v1 PyTorchJob: one gang, a task per pod, the training operator's env."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.domain.state import JobState
from phalanx.errors import InputError
from phalanx.testing.workloads import Bench
from phalanx.workloads import pytorchjob
from phalanx.workloads.plan import Context, Plan
from phalanx.workloads.training import training_shape

T0 = 1_764_613_704_000
CTX = Context(user="bob", log_dir="/logs", max_nodes=1)


def container(**extra: Any) -> dict[str, Any]:
    return {
        "name": "pytorch",
        "image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
        "command": ["python3", "-c", "print(1)"],
        **extra,
    }


def make(workers: int = 2, run_policy: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    def replica(n: int) -> dict[str, Any]:
        return {
            "replicas": n,
            "restartPolicy": "OnFailure",
            "template": {"spec": {"containers": [container()]}},
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pt", "namespace": "kubeflow", "uid": "u-9"},
        "spec": {
            "pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(workers)},
            "runPolicy": run_policy or {},
            **spec,
        },
    }


def step(bench: Bench, now: int, ctx: Context = CTX) -> Plan:
    plan = pytorchjob.reconcile(bench.obj, list(bench.pods.values()), bench.engine(), now, ctx)
    bench.apply(plan)
    return plan


def env_of(bench: Bench, pod: str) -> dict[str, str]:
    return {
        e["name"]: e.get("value", "")
        for e in bench.pods[pod]["spec"]["containers"][0].get("env", [])
    }


def test_one_gang_submission_with_a_task_per_pod() -> None:
    bench = Bench(make(workers=2))
    plan = step(bench, T0)
    assert sorted(bench.pods) == ["pt-master-0", "pt-worker-0", "pt-worker-1"]
    (sub,) = plan.submit
    assert sub.pods == ("pt-master-0", "pt-worker-0", "pt-worker-1")
    assert sub.key == "kube/u-9/0"
    spec = sub.spec
    assert (spec.nodes_min, spec.tasks_per_node) == (1, 3)  # one machine: packed
    assert [t.output for t in spec.tasks] == [f"/logs/kubeflow/{p}.log" for p in sub.pods]
    assert (spec.user, spec.account) == ("bob", "kubeflow")
    ranks = [dict(t.environment)["RANK"] for t in spec.tasks]
    assert ranks == ["0", "1", "2"]
    env = dict(spec.tasks[2].environment)
    assert env["WORLD_SIZE"] == "3" and env["MASTER_PORT"] == "23456"
    assert env["PYTHONUNBUFFERED"] == "1" and env["PET_NNODES"] == "3"
    assert env["PET_NPROC_PER_NODE"] == "auto" and env["PET_NODE_RANK"] == "2"
    assert "MASTER_ADDR" not in env  # the launch sets it to rank 0's node
    assert [e["reason"] for e in plan.events] == ["SuccessfulCreatePod"] * 3


def test_spread_one_pod_per_node_where_there_are_nodes() -> None:
    bench = Bench(make(workers=3))
    spec = step(bench, T0, Context(max_nodes=8)).submit[0].spec
    assert (spec.nodes_min, spec.nodes_max, spec.tasks_per_node) == (4, 4, 1)
    spec = step(Bench(make(workers=3)), T0, Context(max_nodes=2)).submit[0].spec
    assert (spec.nodes_min, spec.tasks_per_node) == (2, 2)


def test_labels_of_the_training_operator() -> None:
    bench = Bench(make(workers=1))
    step(bench, T0)
    master = bench.pods["pt-master-0"]["metadata"]["labels"]
    worker = bench.pods["pt-worker-0"]["metadata"]["labels"]
    assert master == {
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/job-name": "pt",
        "training.kubeflow.org/replica-type": "master",
        "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/job-role": "master",
    }
    assert worker["training.kubeflow.org/replica-type"] == "worker"
    assert "training.kubeflow.org/job-role" not in worker


def test_master_port_from_the_named_port() -> None:
    obj = make(workers=1)
    obj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"] = [
        container(ports=[{"name": "pytorchjob-port", "containerPort": 29500}])
    ]
    bench = Bench(obj)
    step(bench, T0)
    assert env_of(bench, "pt-worker-0")["MASTER_PORT"] == "29500"


def test_elastic_policy_env() -> None:
    obj = make(
        workers=2,
        elasticPolicy={
            "minReplicas": 1,
            "maxReplicas": 3,
            "rdzvBackend": "c10d",
            "rdzvPort": 29400,
            "maxRestarts": 5,
            "rdzvConf": [{"key": "a", "value": "1"}],
        },
    )
    del obj["spec"]["pytorchReplicaSpecs"]["Master"]
    bench = Bench(obj)
    step(bench, T0)
    env = env_of(bench, "pt-worker-1")
    assert env["PET_NNODES"] == "1:3"
    assert env["PET_RDZV_ENDPOINT"] == "127.0.0.1:29400"
    assert env["PET_RDZV_BACKEND"] == "c10d" and env["PET_MAX_RESTARTS"] == "5"
    assert env["PET_RDZV_CONF"] == "a=1"
    assert "RANK" not in env  # no Master: the operator sets no rank


def test_conditions_through_running_and_success() -> None:
    bench = Bench(make(workers=1))
    step(bench, T0)
    assert [c["type"] for c in bench.obj["status"]["conditions"]] == ["Created"]
    assert bench.obj["status"]["conditions"][0]["reason"] == "PyTorchJobCreated"
    job_id = bench.job_of("pt-master-0")
    assert job_id == bench.job_of("pt-worker-0")  # one engine job
    bench.move(job_id, JobState.RUNNING, T0 + 5)
    step(bench, T0 + 5)
    status = bench.obj["status"]
    assert status["conditions"][-1]["type"] == "Running"
    assert status["replicaStatuses"]["Master"]["active"] == 1
    assert status["replicaStatuses"]["Worker"]["active"] == 1
    assert bench.pods["pt-worker-0"]["spec"]["nodeName"] == "node2"
    bench.move(job_id, JobState.COMPLETED, T0 + 9)
    plan = step(bench, T0 + 9)
    status = bench.obj["status"]
    kinds = {c["type"]: c["status"] for c in status["conditions"]}
    assert kinds == {"Created": "True", "Running": "False", "Succeeded": "True"}
    assert status["replicaStatuses"]["Worker"]["succeeded"] == 1
    assert "completionTime" in status
    assert "PyTorchJobSucceeded" in [e["reason"] for e in plan.events]
    assert step(bench, T0 + 20).status is None


def test_failure_restarts_the_gang_then_backoff_fails_it() -> None:
    bench = Bench(make(workers=1, run_policy={"backoffLimit": 1}))
    step(bench, T0)
    first = bench.job_of("pt-master-0")
    bench.move(first, JobState.RUNNING, T0)
    bench.move(first, JobState.FAILED, T0 + 1, exit_code=1)
    plan = step(bench, T0 + 1)
    assert [s.key for s in plan.submit] == ["kube/u-9/1"]
    assert bench.phases() == {"pt-master-0": "Pending", "pt-worker-0": "Pending"}
    cond = bench.obj["status"]["conditions"][-1]
    assert (cond["type"], cond["reason"]) == ("Restarting", "PyTorchJobRestarting")
    second = bench.job_of("pt-master-0")
    assert second != first
    bench.move(second, JobState.RUNNING, T0 + 2)
    step(bench, T0 + 2)
    types = [c["type"] for c in bench.obj["status"]["conditions"]]
    assert "Restarting" not in types and types[-1] == "Running"
    restarts = bench.pods["pt-worker-0"]["status"]["containerStatuses"][0]["restartCount"]
    assert restarts == 1
    bench.move(second, JobState.FAILED, T0 + 3, exit_code=1)
    step(bench, T0 + 3)
    failed = bench.obj["status"]["conditions"][-1]
    assert (failed["type"], failed["reason"]) == ("Failed", "PyTorchJobFailed")
    assert "backoff limit" in failed["message"]


def test_never_restart_policy_fails_at_once() -> None:
    obj = make(workers=1)
    for r in obj["spec"]["pytorchReplicaSpecs"].values():
        r["restartPolicy"] = "Never"
    bench = Bench(obj)
    step(bench, T0)
    job_id = bench.job_of("pt-master-0")
    bench.move(job_id, JobState.RUNNING, T0)
    bench.move(job_id, JobState.FAILED, T0 + 1)
    plan = step(bench, T0 + 1)
    assert not plan.submit
    cond = bench.obj["status"]["conditions"][-1]
    assert cond["message"] == "PyTorchJob pt is failed because 1 Master replica(s) failed."
    assert bench.obj["status"]["replicaStatuses"]["Worker"]["failed"] == 1


def test_suspend_and_resume() -> None:
    bench = Bench(make(workers=1, run_policy={"suspend": True}))
    plan = step(bench, T0)
    assert not plan.create and not bench.pods
    assert bench.obj["status"]["conditions"][-1]["type"] == "Suspended"
    bench.obj["spec"]["runPolicy"]["suspend"] = False
    plan = step(bench, T0 + 1)
    assert len(plan.create) == 2
    assert "PyTorchJobResumed" in [e["reason"] for e in plan.events]


def test_deadline_and_clean_pod_policy_and_ttl() -> None:
    bench = Bench(
        make(
            workers=1,
            run_policy={
                "activeDeadlineSeconds": 10,
                "cleanPodPolicy": "All",
                "ttlSecondsAfterFinished": 5,
            },
        )
    )
    step(bench, T0)
    job_id = bench.job_of("pt-master-0")
    bench.move(job_id, JobState.RUNNING, T0 + 1)
    plan = step(bench, T0 + 10_000)
    assert plan.cancel == [job_id]
    assert "deadline" in bench.obj["status"]["conditions"][-1]["message"]
    plan = step(bench, T0 + 11_000)
    assert sorted(plan.delete) == ["pt-master-0", "pt-worker-0"]
    assert plan.wake_at == T0 + 15_000
    assert step(bench, T0 + 15_000).delete_self


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            lambda s: s["pytorchReplicaSpecs"]["Master"].update(replicas=2),
            "spec.pytorchReplicaSpecs.Master.replicas",
        ),
        (lambda s: s["pytorchReplicaSpecs"].update(Chief={}), "spec.pytorchReplicaSpecs.Chief"),
        (
            lambda s: s["pytorchReplicaSpecs"]["Worker"].update(restartPolicy="Sometimes"),
            "spec.pytorchReplicaSpecs.Worker.restartPolicy",
        ),
        (lambda s: s["runPolicy"].update(cleanPodPolicy="Some"), "spec.runPolicy.cleanPodPolicy"),
    ],
)
def test_invalid_spec_names_the_field(change: Any, field: str) -> None:
    obj = make()
    change(obj["spec"])
    with pytest.raises(InputError) as err:
        training_shape(obj)
    assert err.value.field == field
