"""The workload runner against the real object store and the live controller running real
processes on this machine (``phalanx.testing.live_stack``): upstream examples, changed only
in command and args, run to completion; their pods' output is where ``log_path`` says."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from runner_loop import Loop

from phalanx.domain.caller import Caller
from phalanx.kube.controllers import (
    JOBS,
    JOBSETS,
    PODS,
    PYTORCHJOBS,
    VCJOBS,
    WorkloadRunner,
    log_path,
)
from phalanx.kube.store import ObjectStore
from phalanx.testing.live import LiveStack, live_stack

EXAMPLES = Path("/work/shared/k8s-examples/adapted")
SAMPLE_JOB = EXAMPLES / "kueue/site/static/examples/jobs/sample-job.yaml"
SIMPLE_PYTORCH = EXAMPLES / "training-operator/examples/pytorch/simple.yaml"
VOLCANO_JOB = EXAMPLES / "volcano/example/job.yaml"
PARALLEL_JOBS = EXAMPLES / "jobset/site/static/examples/simple/paralleljobs.yaml"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[ObjectStore, WorkloadRunner, Loop, LiveStack]]:
    stack = live_stack(nodes=2, gpus=1)
    store = ObjectStore()
    loop = Loop(stack)
    runner = WorkloadRunner(
        store,
        stack.controller,
        clock=stack.controller.clock.now,
        defer=loop.defer,
        log_dir=str(tmp_path / "logs"),
        workdir=str(tmp_path),
        default_user="tester",
        known_user=lambda _user: True,  # the test stack launches as this process
    )
    runner.start(stack.controller.watch)
    for ns in ("kubeflow",):
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    yield store, runner, loop, stack
    # whatever still runs is stopped and reaped: no process outlives its test
    for resource in (
        JOBSETS,
        JOBS,
        PYTORCHJOBS,
        VCJOBS,
    ):  # else a Job replaces the pods cancelled below
        for obj in store.list(resource):
            store.delete(resource, obj["metadata"]["namespace"], obj["metadata"]["name"])
    admin = Caller(0, "root", admin=True)
    for job in stack.controller.jobs():
        stack.controller.cancel(job.id, admin)
    tasks = stack.agents.runner
    done = loop.run(lambda: not tasks.running_count() and not tasks.unreaped(), 30)
    assert done, (tasks.running_count(), tasks.unreaped(), stack.controller.jobs(finished=True))


def load(path: Path, **meta: Any) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(path.read_text())
    obj["metadata"].update(meta)
    if "name" in meta:
        obj["metadata"].pop("generateName", None)
    return obj


def condition(obj: dict[str, Any] | None, kind: str) -> bool:
    return obj is not None and any(
        c["type"] == kind and c["status"] == "True"
        for c in (obj.get("status") or {}).get("conditions") or ()
    )


def test_sample_job_runs_its_pods_as_processes(
    world: tuple[ObjectStore, WorkloadRunner, Loop, LiveStack],
) -> None:
    store, _runner, loop, stack = world
    store.create(load(SAMPLE_JOB, name="sample-job-x"))
    assert loop.run(lambda: len(store.list(PODS, "default")) == 3, 10)
    assert loop.run(lambda: condition(store.get(JOBS, "default", "sample-job-x"), "Complete"), 60)
    job = store.get(JOBS, "default", "sample-job-x")
    assert job is not None
    assert job["status"]["succeeded"] == 3 and job["status"]["ready"] == 0
    pods = store.list(PODS, "default")
    assert {p["status"]["phase"] for p in pods} == {"Succeeded"}
    for pod in pods:
        path = log_path(pod)
        assert path is not None and path.read_text() == "sample-job: hello world\n"
        assert pod["spec"]["nodeName"] in ("gpu001", "gpu002")
    ids = [int(p["metadata"]["annotations"]["phalanx.io/job-id"]) for p in pods]
    engine_jobs = stack.controller.jobs(finished=True, ids=ids)
    assert {(j.spec.account, j.spec.user, j.state.value) for j in engine_jobs} == {
        ("default", "tester", "COMPLETED")
    }
    reasons = {e["reason"] for e in store.list(("", "events"), "default")}
    assert {"SuccessfulCreate", "Scheduled", "Started", "Completed"} <= reasons


def test_deleting_a_job_cancels_its_engine_jobs(
    world: tuple[ObjectStore, WorkloadRunner, Loop, LiveStack],
) -> None:
    store, _runner, loop, stack = world
    obj = load(SAMPLE_JOB, name="long")
    obj["spec"]["template"]["spec"]["containers"][0]["args"] = ["-c", "sleep 60"]
    store.create(obj)
    assert loop.run(
        lambda: (
            all(p["status"]["phase"] == "Running" for p in store.list(PODS, "default"))
            and len(store.list(PODS, "default")) == 3
        ),
        20,
    )
    ids = [
        int(p["metadata"]["annotations"]["phalanx.io/job-id"]) for p in store.list(PODS, "default")
    ]
    store.delete(JOBS, "default", "long")
    assert loop.run(
        lambda: all(j.state.is_final for j in stack.controller.jobs(finished=True, ids=ids)), 20
    )
    assert {j.state.value for j in stack.controller.jobs(finished=True, ids=ids)} == {"CANCELLED"}


def test_pytorchjob_runs_as_one_gang_with_ranks(
    world: tuple[ObjectStore, WorkloadRunner, Loop, LiveStack],
) -> None:
    store, _runner, loop, _stack = world
    store.create(load(SIMPLE_PYTORCH))
    assert loop.run(
        lambda: (
            condition(store.get(PYTORCHJOBS, "kubeflow", "pytorch-simple"), "Succeeded")
            or condition(store.get(PYTORCHJOBS, "kubeflow", "pytorch-simple"), "Failed")
        ),
        180,
    )
    obj = store.get(PYTORCHJOBS, "kubeflow", "pytorch-simple")
    pods = {p["metadata"]["name"]: p for p in store.list(PODS, "kubeflow")}
    logs = {name: (log_path(p) or Path("/nonexistent")).read_text() for name, p in pods.items()}
    assert condition(obj, "Succeeded"), (obj, logs)
    ids = {p["metadata"]["annotations"]["phalanx.io/job-id"] for p in pods.values()}
    assert len(ids) == 1  # one engine job
    assert logs["pytorch-simple-master-0"].startswith("rank=0 world=2 master=")
    assert logs["pytorch-simple-worker-0"].startswith("rank=1 world=2 master=")
    assert ":23456" in logs["pytorch-simple-worker-0"]
    if "all_reduce sum" in logs["pytorch-simple-master-0"]:
        assert "all_reduce sum=1" in logs["pytorch-simple-worker-0"]


def test_pytorchjob_gang_all_reduces_over_gloo(
    world: tuple[ObjectStore, WorkloadRunner, Loop, LiveStack],
) -> None:
    """The same manifest with this interpreter's directory first on PATH (where CPU torch
    is): the two pods rendezvous at MASTER_ADDR:MASTER_PORT and all-reduce their ranks."""
    pytest.importorskip("torch")
    store, _runner, loop, _stack = world
    obj = load(SIMPLE_PYTORCH)
    path = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
    for replica in obj["spec"]["pytorchReplicaSpecs"].values():
        replica["template"]["spec"]["containers"][0]["env"] = [{"name": "PATH", "value": path}]
    store.create(obj)
    key = (PYTORCHJOBS, "kubeflow", "pytorch-simple")
    assert loop.run(
        lambda: condition(store.get(*key), "Succeeded") or condition(store.get(*key), "Failed"), 240
    )
    logs = {
        p["metadata"]["name"]: (log_path(p) or Path("/nonexistent")).read_text()
        for p in store.list(PODS, "kubeflow")
    }
    assert condition(store.get(*key), "Succeeded"), logs
    for name in ("pytorch-simple-master-0", "pytorch-simple-worker-0"):
        assert "all_reduce sum=1" in logs[name], logs


def test_a_new_runner_resubmits_under_the_same_key_and_runs_nothing_twice(
    world: tuple[ObjectStore, WorkloadRunner, Loop, LiveStack], tmp_path: Path
) -> None:
    store, _runner, loop, stack = world
    obj = load(SAMPLE_JOB, name="again")
    obj["spec"]["template"]["spec"]["containers"][0]["args"] = ["-c", "sleep 60"]
    store.create(obj)
    assert loop.run(lambda: len(store.list(PODS, "default")) == 3, 10)
    loop.step()
    before = {j.id for j in stack.controller.jobs(finished=True)}
    # a controller restart: the runner's memory is gone, the store and the engine are not
    fresh = WorkloadRunner(
        store,
        stack.controller,
        clock=stack.controller.clock.now,
        defer=loop.defer,
        log_dir=str(tmp_path / "logs"),
        default_user="t",
        known_user=lambda _user: True,
    )
    fresh.start(stack.controller.watch)
    loop.run(lambda: False, 1)
    assert {j.id for j in stack.controller.jobs(finished=True)} == before
    assert len(store.list(PODS, "default")) == 3


def test_deleting_a_pod_cancels_its_engine_job_and_the_job_replaces_it(
    world: tuple[ObjectStore, WorkloadRunner, Loop, LiveStack],
) -> None:
    store, _runner, loop, stack = world
    obj = load(SAMPLE_JOB, name="one")
    obj["spec"].update(parallelism=1, completions=1)
    obj["spec"]["template"]["spec"]["containers"][0]["args"] = ["-c", "sleep 60"]
    store.create(obj)
    assert loop.run(
        lambda: any(
            p["status"]["phase"] == "Running"
            and "phalanx.io/job-id" in p["metadata"]["annotations"]
            for p in store.list(PODS, "default")
        ),
        20,
    )
    (pod,) = store.list(PODS, "default")
    job_id = int(pod["metadata"]["annotations"]["phalanx.io/job-id"])
    store.delete(PODS, "default", pod["metadata"]["name"])
    assert loop.run(
        lambda: stack.controller.jobs(finished=True, ids=[job_id])[0].state.is_final, 20
    )
    assert loop.run(lambda: len(store.list(PODS, "default")) == 1, 10)
    (again,) = store.list(PODS, "default")
    assert again["metadata"]["name"] != pod["metadata"]["name"]


def test_a_pod_that_can_never_run_here_says_why(
    world: tuple[ObjectStore, WorkloadRunner, Loop, LiveStack],
) -> None:
    store, _runner, loop, _stack = world
    obj = load(SAMPLE_JOB, name="huge")
    del obj["metadata"]["labels"]  # not queued: its pod is made at once, and says why
    obj["spec"].update(parallelism=1, completions=1)
    obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": "64"}
    }
    store.create(obj)

    def why() -> str:
        pods = store.list(PODS, "default")
        conds = pods[0]["status"].get("conditions", []) if pods else []
        return next((c["message"] for c in conds if c["type"] == "PodScheduled"), "")

    assert loop.run(lambda: bool(why()), 10)
    assert store.list(PODS, "default")[0]["status"]["phase"] == "Pending"
    assert "Requested node configuration is not available" in why()
    events = [e for e in store.list(("", "events"), "default") if e["reason"] == "FailedScheduling"]
    assert events and events[0]["type"] == "Warning"


def test_a_user_unknown_here_is_refused_not_launched(
    world: tuple[ObjectStore, WorkloadRunner, Loop, LiveStack],
) -> None:
    store, runner, loop, stack = world
    runner.known_user = lambda user: user != "mallory"
    obj = load(SAMPLE_JOB, name="theirs")
    del obj["metadata"]["labels"]  # not queued: its pod is made at once, and says why
    obj["spec"].update(parallelism=1, completions=1)
    obj["metadata"].setdefault("annotations", {})["phalanx.io/user"] = "mallory"
    store.create(obj)

    def why() -> str:
        pods = store.list(PODS, "default")
        conds = pods[0]["status"].get("conditions", []) if pods else []
        return next((c["message"] for c in conds if c["type"] == "PodScheduled"), "")

    assert loop.run(lambda: bool(why()), 10)
    assert why() == 'Invalid user id: "mallory" is not a user on this machine'
    assert not [j for j in stack.controller.jobs(finished=True) if j.spec.user == "mallory"]


def test_volcano_job_runs_its_gang_and_the_rest(
    world: tuple[ObjectStore, WorkloadRunner, Loop, LiveStack],
) -> None:
    store, _runner, loop, stack = world
    obj = load(VOLCANO_JOB)
    obj["metadata"]["namespace"] = "default"
    store.create(obj)

    def phase() -> str:
        got = store.get(VCJOBS, "default", "test-job")
        return str(((got or {}).get("status") or {}).get("state", {}).get("phase", ""))

    assert loop.run(lambda: phase() in ("Completed", "Failed"), 90)
    got = store.get(VCJOBS, "default", "test-job")
    assert got is not None
    pods = {p["metadata"]["name"]: p for p in store.list(PODS, "default")}
    logs = {n: (log_path(p) or Path("/nonexistent")).read_text() for n, p in pods.items()}
    assert phase() == "Completed", (got["status"], logs)
    assert got["status"]["succeeded"] == 6 and got["status"]["minAvailable"] == 3
    for i in range(6):
        name = f"test-job-default-nginx-{i}"
        assert logs[name] == f"volcano test-job task-index={i}\n"
        assert pods[name]["metadata"]["labels"]["volcano.sh/task-spec"] == "default-nginx"
    ids = {n: p["metadata"]["annotations"]["phalanx.io/job-id"] for n, p in pods.items()}
    gang = {ids[f"test-job-default-nginx-{i}"] for i in range(3)}
    assert len(gang) == 1 and len(set(ids.values())) == 4  # one gang of 3, 3 on their own
    jobs = stack.controller.jobs(finished=True, ids=[int(i) for i in set(ids.values())])
    assert {len(j.spec.tasks) for j in jobs} == {3, 0}


def test_jobset_runs_its_child_jobs(
    world: tuple[ObjectStore, WorkloadRunner, Loop, LiveStack],
) -> None:
    store, _runner, loop, _stack = world
    obj = load(PARALLEL_JOBS)
    obj["metadata"]["namespace"] = "default"
    store.create(obj)

    def terminal() -> str:
        got = store.get(JOBSETS, "default", "paralleljobs")
        return str(((got or {}).get("status") or {}).get("terminalState", ""))

    assert loop.run(lambda: terminal() != "", 90)
    got = store.get(JOBSETS, "default", "paralleljobs")
    assert got is not None
    children = {j["metadata"]["name"]: j for j in store.list(JOBS, "default")}
    pods = store.list(PODS, "default")
    logs = [(log_path(p) or Path("/nonexistent")).read_text() for p in pods]
    assert terminal() == "Completed", (got["status"], logs)
    assert sorted(children) == ["paralleljobs-driver-0", "paralleljobs-workers-0"]
    assert all(condition(j, "Complete") for j in children.values())
    assert (
        sorted(logs)
        == ["jobset paralleljobs driver done\n"] + ["jobset paralleljobs workers done\n"] * 4
    )
    for pod in pods:
        labels = pod["metadata"]["labels"]
        assert labels["jobset.sigs.k8s.io/jobset-name"] == "paralleljobs"
        assert pod["metadata"]["labels"]["batch.kubernetes.io/job-name"] in children
    statuses = {s["name"]: s for s in got["status"]["replicatedJobsStatus"]}
    assert statuses["workers"]["succeeded"] == 1 and statuses["driver"]["succeeded"] == 1


def test_volcano_job_restarts_when_a_pod_is_evicted(
    world: tuple[ObjectStore, WorkloadRunner, Loop, LiveStack],
) -> None:
    """The example's policy: PodEvicted -> RestartJob. Deleting a pod evicts it."""
    store, _runner, loop, _stack = world
    obj = load(VOLCANO_JOB)
    obj["metadata"]["namespace"] = "default"
    obj["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["command"] = [
        "/bin/sh",
        "-c",
        "sleep 60",
    ]
    store.create(obj)

    def running() -> bool:
        pods = store.list(PODS, "default")
        return len(pods) == 6 and all(p["status"]["phase"] == "Running" for p in pods)

    assert loop.run(running, 30)
    first = store.get(PODS, "default", "test-job-default-nginx-0")
    assert first is not None
    old = first["metadata"]["annotations"]["phalanx.io/job-id"]
    store.delete(PODS, "default", "test-job-default-nginx-0")

    def restarted() -> bool:
        got = store.get(VCJOBS, "default", "test-job")
        return bool(got and (got.get("status") or {}).get("retryCount") == 1)

    assert loop.run(restarted, 20)
    assert loop.run(running, 30)
    again = store.get(PODS, "default", "test-job-default-nginx-0")
    assert again is not None
    assert again["metadata"]["annotations"]["phalanx.io/job-id"] != old
    assert again["metadata"]["annotations"]["volcano.sh/job-retry-count"] == "1"


def test_jobset_restarts_its_child_jobs_then_fails(
    world: tuple[ObjectStore, WorkloadRunner, Loop, LiveStack],
) -> None:
    store, _runner, loop, _stack = world
    obj = load(PARALLEL_JOBS)
    obj["metadata"]["namespace"] = "default"
    obj["spec"]["failurePolicy"] = {"maxRestarts": 1}
    obj["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["containers"][0][
        "args"
    ] = ["-c", "exit 3"]
    store.create(obj)

    def status() -> dict[str, Any]:
        got = store.get(JOBSETS, "default", "paralleljobs")
        return dict((got or {}).get("status") or {})

    assert loop.run(lambda: "terminalState" in status(), 90)
    final = status()
    assert final["terminalState"] == "Failed" and final["restarts"] == 1, final
    assert [c["reason"] for c in final["conditions"] if c["type"] == "Failed"] == [
        "ReachedMaxRestarts"
    ]
    driver = store.get(JOBS, "default", "paralleljobs-driver-0")
    assert driver is not None
    assert driver["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "1"
    assert condition(driver, "Failed")
