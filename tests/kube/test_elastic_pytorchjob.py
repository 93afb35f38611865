"""An elastic PyTorchJob with real torchrun (c10d rendezvous, gloo, CPU torch) grows from 2 to
4 workers when a blocker ends and shrinks back to 2 when a higher-priority job arrives, while
its training loop keeps counting steps (resuming from its checkpoint at each re-rendezvous).

The live controller runs real processes on this machine (``phalanx.testing.live_stack``), the
workload runner turns the PyTorchJob into one elastic engine job (one pod per node)."""

from __future__ import annotations

import itertools
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runner_loop import Loop

from phalanx.domain.caller import Caller
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.state import JobState
from phalanx.domain.time import MINUTE
from phalanx.kube.controllers import PODS, PYTORCHJOBS, WorkloadRunner
from phalanx.kube.store import ObjectStore
from phalanx.testing.live import LiveStack, live_stack

pytest.importorskip("torch")

TRAIN = r"""
import datetime, os, sys, time
import torch, torch.distributed as dist
log, ckpt = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
step = int(open(ckpt).read()) if os.path.exists(ckpt) else 0
resumed = step
while True:
    t = torch.ones(1)
    dist.all_reduce(t)  # every rank takes part in every step
    step += 1
    if rank == 0:
        with open(log, "a") as f:
            f.write(f"{step} {world} {int(t.item())} {resumed}\n")
        if step % 2 == 0:  # a checkpoint every two steps: a restart resumes from it
            with open(ckpt + ".tmp", "w") as f:
                f.write(str(step))
            os.replace(ckpt + ".tmp", ckpt)
    time.sleep(0.2)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _pytorchjob(script: Path, log: Path, ckpt: Path, port: int) -> dict[str, Any]:
    path = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
    container = {
        "name": "pytorch",
        "image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
        "command": ["torchrun", str(script), str(log), str(ckpt)],
        "env": [{"name": "PATH", "value": path}],
        "resources": {"limits": {"nvidia.com/gpu": 1}},
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "elastic", "namespace": "kubeflow"},
        "spec": {
            "elasticPolicy": {
                "rdzvBackend": "c10d",
                "rdzvPort": port,
                "minReplicas": 2,
                "maxReplicas": 4,
                "maxRestarts": 10,
                "nProcPerNode": 1,
                # The rendezvous waits this long for more nodes once it has the minimum.
                "rdzvConf": [{"key": "last_call_timeout", "value": "1"}],
            },
            "pytorchReplicaSpecs": {
                "Worker": {
                    "replicas": 4,
                    "restartPolicy": "OnFailure",
                    "template": {"spec": {"containers": [container]}},
                }
            },
        },
    }


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[ObjectStore, Loop, LiveStack]]:
    stack = live_stack(nodes=4, gpus=1)
    store = ObjectStore()
    loop = Loop(stack, pause=0.05)
    runner = WorkloadRunner(
        store,
        stack.controller,
        clock=stack.controller.clock.now,
        defer=loop.defer,
        log_dir=str(tmp_path / "logs"),
        workdir=str(tmp_path),
        default_user="tester",
        known_user=lambda _user: True,
    )
    runner.start(stack.controller.watch)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}})
    yield store, loop, stack
    for obj in store.list(PYTORCHJOBS):
        store.delete(PYTORCHJOBS, obj["metadata"]["namespace"], obj["metadata"]["name"])
    admin = Caller(0, "root", admin=True)
    for job in stack.controller.jobs():
        stack.controller.cancel(job.id, admin)
    tasks = stack.agents.runner
    done = loop.run(lambda: not tasks.running_count() and not tasks.unreaped(), 60)
    assert done, (tasks.running_count(), stack.controller.jobs(finished=True))


def _state(engine: Any, job_id: int) -> JobState | None:
    job = engine.jobs.get(job_id)  # not there until the submission is handled
    return None if job is None else job.state


def _steps(log: Path) -> list[tuple[int, int]]:
    """(step, world size) per line rank 0 wrote."""
    if not log.exists():
        return []
    out = []
    for line in log.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4:
            out.append((int(parts[0]), int(parts[1])))
    return out


def test_an_elastic_pytorchjob_grows_to_four_workers_and_shrinks_back_to_two(
    tmp_path: Path, world: tuple[ObjectStore, Loop, LiveStack]
) -> None:
    store, loop, stack = world
    engine = stack.engine
    script, log, ckpt = tmp_path / "train.py", tmp_path / "steps.log", tmp_path / "ckpt"
    script.write_text(TRAIN)
    sleep = ("/bin/sleep", "600")
    blocker = JobSpec(name="blocker", nodes_min=2, nodes_max=2, gpus_per_task=1,
                      time_limit=10 * MINUTE, command=sleep, workdir=str(tmp_path))  # fmt: skip
    [blocker_id] = stack.submit(blocker)
    assert loop.run(lambda: _state(engine, blocker_id) is JobState.RUNNING, 20)

    # 1. Only two nodes are free: it starts with its minimum, two workers.
    store.create(_pytorchjob(script, log, ckpt, _free_port()))
    assert loop.run(lambda: sum(w == 2 for _, w in _steps(log)) >= 3, 120), _steps(log)
    [job] = [j for j in engine.jobs.values() if j.spec.elastic]
    assert job.state is JobState.RUNNING and job.alloc is not None and len(job.alloc.nodes) == 2
    pods = {p["metadata"]["name"]: p["status"]["phase"] for p in store.list(PODS, "kubeflow")}
    assert sorted(pods.values()) == ["Pending", "Pending", "Running", "Running"], pods

    # 2. The blocker ends: the job grows onto its two nodes; the four re-rendezvous.
    stack.controller.cancel(blocker_id, Caller(0, "root", admin=True))
    grown = len(_steps(log))
    assert loop.run(lambda: sum(w == 4 for _, w in _steps(log)[grown:]) >= 3, 120), _steps(log)
    assert len(job.alloc.nodes) == 4

    # 3. A job that may preempt it arrives: the job gives two nodes back, instead of being
    # preempted whole, and the two survivors re-rendezvous and go on.
    high = JobSpec(name="high", qos="high", nodes_min=2, nodes_max=2, gpus_per_task=1,
                   time_limit=10 * MINUTE, command=sleep, workdir=str(tmp_path))  # fmt: skip
    [high_id] = stack.submit(high)
    shrunk = len(_steps(log))
    assert loop.run(lambda: sum(w == 2 for _, w in _steps(log)[shrunk:]) >= 3, 120), _steps(log)
    assert _state(engine, high_id) is JobState.RUNNING
    assert job.state is JobState.RUNNING and job.run == 1 and len(job.alloc.nodes) == 2

    # The steps went on across both changes: never back by more than the two steps since a
    # checkpoint, and on past where they were at each change.
    steps = _steps(log)
    worlds = [w for _, w in steps]
    assert worlds[0] == 2 and 4 in worlds and worlds[-1] == 2
    for (before, _), (after, _) in itertools.pairwise(steps):
        assert after >= before - 2, steps
    assert steps[-1][0] > steps[shrunk - 1][0] > steps[grown - 1][0]
