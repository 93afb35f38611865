"""Deployments through the workload runner and the live controller, with real processes
(``phalanx.testing.live_stack``): replicas run, a killed replica is replaced, a rollout moves
the pods to the new template, a scale-down removes pods."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runner_loop import Loop

from phalanx.domain.caller import Caller
from phalanx.kube.controllers import DEPLOYMENTS, PODS, REPLICASETS, WorkloadRunner
from phalanx.kube.store import ObjectStore
from phalanx.testing.builders import make_job
from phalanx.testing.live import LiveStack, live_stack

World = tuple[ObjectStore, WorkloadRunner, Loop, LiveStack, Path]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
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
        known_user=lambda _user: True,
        containers=stack.controller.fleet.containers.get,
    )
    runner.start(stack.controller.watch)
    # as the server wires it: a container's report (restarts, readiness) updates its pod
    stack.controller.fleet.containers.subscribe(runner.on_jobs)
    yield store, runner, loop, stack, tmp_path
    for resource in (DEPLOYMENTS, REPLICASETS):  # else they replace the pods cancelled below
        for obj in store.list(resource):
            store.delete(resource, obj["metadata"]["namespace"], obj["metadata"]["name"])
    admin = Caller(0, "root", admin=True)
    for job in stack.controller.jobs():
        stack.controller.cancel(job.id, admin)
    tasks = stack.agents.runner
    done = loop.run(lambda: not tasks.running_count() and not tasks.unreaped(), 30)
    assert done, (tasks.running_count(), tasks.unreaped())


def web(pids: Path, replicas: int = 2, version: str = "v1") -> dict[str, Any]:
    """A Deployment whose replicas write their pid to ``pids/POD.pid`` and sleep (``$$$$``
    is ``$$`` once the kubelet's expansion has unescaped it)."""
    script = f'echo $$$$ > {pids}/"$POD_NAME".pid; exec sleep 300'
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "busybox",
                            "command": ["sh", "-c", script],
                            "env": [
                                {"name": "VERSION", "value": version},
                                {
                                    "name": "POD_NAME",
                                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                                },
                            ],
                        }
                    ]
                },
            },
        },
    }


def running(store: ObjectStore) -> list[dict[str, Any]]:
    return [p for p in store.list(PODS, "default") if p["status"]["phase"] == "Running"]


def available(store: ObjectStore, n: int) -> bool:
    d = store.get(DEPLOYMENTS, "default", "web")
    status = (d or {}).get("status") or {}
    return (
        status.get("availableReplicas") == n
        and status.get("updatedReplicas") == n
        and status.get("replicas") == n
        and len(running(store)) == n
    )


def test_a_killed_replica_is_replaced_and_a_rollout_moves_every_pod(world: World) -> None:
    store, _runner, loop, stack, tmp = world
    pids = tmp / "pids"
    pids.mkdir()
    store.create(web(pids))
    assert loop.run(lambda: available(store, 2), 30), store.list(PODS, "default")
    (rs,) = store.list(REPLICASETS, "default")
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    jobs = stack.controller.jobs(
        ids=[int(p["metadata"]["annotations"]["phalanx.io/job-id"]) for p in running(store)]
    )
    assert {j.spec.account for j in jobs} == {"default"}
    assert all(j.time_limit >= 300 * 1000 for j in jobs)  # a service is not cut short

    # kill -9 of a replica's process: its engine job fails and the ReplicaSet replaces the
    # pod, or (restartPolicy Always, once the agent restarts containers in place) the same pod
    # runs a new process with its restartCount up
    victim = running(store)[0]["metadata"]["name"]
    assert loop.run(lambda: (pids / f"{victim}.pid").exists(), 10)
    first = int((pids / f"{victim}.pid").read_text())
    loop.run(lambda: False, 2.5)  # running a while: no crash at start (that would back off)
    os.kill(first, signal.SIGKILL)
    killed = time.monotonic()

    def healed() -> bool:
        if not available(store, 2):
            return False
        pods = {p["metadata"]["name"]: p for p in running(store)}
        if victim not in pods:
            return True
        restarts = pods[victim]["status"]["containerStatuses"][0]["restartCount"]
        return bool(restarts) and int((pids / f"{victim}.pid").read_text() or 0) != first

    assert loop.run(healed, 10), store.list(PODS, "default")
    took = time.monotonic() - killed
    print(f"replica back {took:.2f} s after kill -9 of its process")
    assert took <= 10

    # a new template: a new ReplicaSet takes every replica, the old one goes to zero
    deployment = store.get(DEPLOYMENTS, "default", "web")
    assert deployment is not None
    deployment["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "v2"
    deployment["metadata"].pop("resourceVersion")
    store.update(deployment)
    assert loop.run(
        lambda: available(store, 2) and len(store.list(REPLICASETS, "default")) == 2, 30
    )
    sets = {
        r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: r
        for r in store.list(REPLICASETS, "default")
    }
    assert sets["1"]["spec"]["replicas"] == 0 and sets["2"]["spec"]["replicas"] == 2
    hash2 = sets["2"]["metadata"]["labels"]["pod-template-hash"]
    assert loop.run(
        lambda: (
            {p["metadata"]["labels"]["pod-template-hash"] for p in running(store)} == {hash2}
            and len(store.list(PODS, "default")) == 2
        ),
        30,
    )
    d = store.get(DEPLOYMENTS, "default", "web")
    assert d is not None
    progressing = [c for c in d["status"]["conditions"] if c["type"] == "Progressing"]
    assert progressing[0]["reason"] == "NewReplicaSetAvailable"

    # scale down through spec.replicas
    d["spec"]["replicas"] = 1
    d["metadata"].pop("resourceVersion")
    store.update(d)
    assert loop.run(lambda: available(store, 1) and len(store.list(PODS, "default")) == 1, 30)


def test_a_command_that_cannot_run_backs_off_instead_of_looping(world: World) -> None:
    store, _runner, loop, stack, _tmp = world
    broken = web(_tmp, replicas=1)
    broken["spec"]["template"]["spec"]["containers"][0]["command"] = ["false"]
    store.create(broken)
    loop.run(lambda: False, 6)
    # one engine job whose container the agent restarts in place (at once the first time,
    # then after the back-off: CrashLoopBackOff), as the kubelet: not a stream of jobs
    assert len(stack.controller.jobs(finished=True)) == 1
    (pod,) = store.list(PODS, "default")
    (container,) = pod["status"]["containerStatuses"]
    assert container["restartCount"] >= 2
    assert container["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    reasons = {e["reason"] for e in store.list(("", "events"), "default")}
    assert "BackOff" in reasons


def test_a_serving_pod_of_a_qos_named_priority_class_preempts_training(world: World) -> None:
    """Both GPUs held by training at QOS normal; a replica of PriorityClass ``high`` (the
    default clusters' QOS ``high`` preempts ``normal``) asks for one: training is requeued,
    the replica runs."""
    store, _runner, loop, stack, tmp = world
    training = make_job(
        gpus=1,
        nodes=2,
        time_limit=None,
        name="train",
        user="tester",
        command=("sleep", "300"),
        workdir=str(tmp),
        output=str(tmp / "t.out"),
    )
    [[train_id]] = stack.controller.submit([training])
    assert loop.run(lambda: stack.controller.jobs(ids=[train_id])[0].state.value == "RUNNING", 20)
    store.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
    )
    serving = web(tmp, replicas=1)
    container = serving["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    container["command"] = ["sleep", "300"]
    serving["spec"]["template"]["spec"]["priorityClassName"] = "high"
    store.create(serving)
    assert loop.run(lambda: available(store, 1), 30), store.list(PODS, "default")
    train = stack.controller.jobs(finished=True, ids=[train_id])[0]
    assert train.restarts == 1 and train.state.value in ("PENDING", "REQUEUED"), train.state
    (pod,) = running(store)
    [job] = stack.controller.jobs(ids=[int(pod["metadata"]["annotations"]["phalanx.io/job-id"])])
    assert (job.spec.qos, job.spec.nice) == ("high", -1000)
