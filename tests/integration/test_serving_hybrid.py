"""A hybrid run on one cluster (``phalanx up``, two emulated nodes of 4 GPUs, real kubectl):
a training gang at QOS ``normal`` fills every GPU and checkpoints its step count every
``INTERVAL_S``; a serving burst (a Deployment of PriorityClass ``high`` scaled up, each replica
asking for 4 GPUs) preempts it: the gang gets its grace signal, checkpoints and is requeued;
the replicas serve through the router; once the burst is scaled back in, the gang resumes from
its checkpoint. Lost work (the steps done twice, over the step rate) must be at most one
checkpoint interval.

Run twice: with the QOS ``high`` preempting ``normal`` (Slurm's way), and with a guaranteed
serving pool of 4 GPUs (``phalanx.config.serving_pool``: ClusterQueues ``serving`` and
``training`` in one cohort, the QOS routed to them, no QOS preemption): the gang runs by
borrowing the pool's idle GPUs, and the serving scale-up reclaims them."""

from __future__ import annotations

import contextlib
import shutil
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from live_env import env

from phalanx.config.serving_pool import ServingPool, pool_yaml
from phalanx.server.localcluster import cluster_yaml
from phalanx.testing.serving import MODEL_SERVER, ServingStack, deployment_yaml, free_port

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is needed")

INTERVAL_S = 2.0
"""The training job's checkpoint interval."""
RATE = 20.0
"""Its steps per second."""
GRACE_S = 10
"""QOS normal's grace time (seconds between the preemption's SIGTERM and its SIGKILL)."""

TRAIN = """\
import os, signal, sys, time
ckpt, progress, log = sys.argv[1], sys.argv[2], sys.argv[3]
interval, rate = float(sys.argv[4]), float(sys.argv[5])
rank = int(os.environ.get("SLURM_PROCID", "0"))
step = int(open(ckpt).read()) if os.path.exists(ckpt) else 0
def write(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
def note(what):
    if rank == 0:
        with open(log, "a") as f:
            f.write(f"{what} {step}\\n")
def checkpoint():
    if rank == 0:
        write(ckpt, str(step))
def grace(signum, frame):
    checkpoint()  # the grace signal: save now, then leave
    note("term")
    sys.exit(0)
signal.signal(signal.SIGTERM, grace)
note("start")
saved = time.monotonic()
while True:
    time.sleep(1 / rate)
    step += 1
    if rank == 0:
        write(progress, str(step))
    if time.monotonic() - saved >= interval:
        checkpoint()
        saved = time.monotonic()
"""

PRIORITY_CLASS = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: high
value: 1000
description: serving bursts (the cluster's QOS high, which preempts normal)
"""


def wait_for(check: object, timeout: float, what: str) -> float:
    assert callable(check)
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return time.monotonic()


POOL_QOS = f"""\
qos:
  - name: normal
    grace_time: "{GRACE_S}"
    cluster_queue: training
  - name: high
    priority: 1000
    cluster_queue: serving
"""
"""The pool run's QOS: ``high`` preempts nothing by itself; each QOS names its ClusterQueue."""


def borrowed_gpus(stack: ServingStack, queue: str) -> str:
    """What ClusterQueue ``queue``'s status says it borrows of ``nvidia.com/gpu``."""
    path = '{.status.flavorsUsage[*].resources[?(@.name=="nvidia.com/gpu")].borrowed}'
    return stack.kubectl("get", "clusterqueue", queue, "-o", f"jsonpath={path}").strip()


@pytest.mark.parametrize("setup", ["qos", "pool"])
def test_a_serving_burst_preempts_training_which_resumes_from_its_checkpoint(
    tmp_path: Path, setup: str
) -> None:
    tmp_path.chmod(0o755)
    work = tmp_path / "train"
    work.mkdir()
    ckpt, progress, log = work / "ckpt", work / "progress", work / "log"
    train = tmp_path / "train.py"
    train.write_text(TRAIN)
    server = tmp_path / "server.py"
    server.write_text(MODEL_SERVER)
    # Slurm's GraceTime on the victims' QOS: SIGTERM, then SIGKILL that long after
    config = cluster_yaml(2, 4).replace(
        "  - name: normal\n", f'  - name: normal\n    grace_time: "{GRACE_S}"\n'
    )
    assert f'grace_time: "{GRACE_S}"' in config
    up_args: list[str] = []
    if setup == "pool":
        config = config[: config.index("qos:\n")] + POOL_QOS
        queues = tmp_path / "pool.yaml"
        queues.write_text(pool_yaml(ServingPool("guaranteed", 4), 8))
        up_args = ["--queues", str(queues)]
    stack = ServingStack(tmp_path, config=config, up_args=up_args)
    job = None
    try:
        stack.apply(PRIORITY_CLASS)
        stack.apply(
            deployment_yaml(
                "burst",
                server,
                free_port(),
                replicas=0,
                work_ms=10,
                burn_ms=1,
                priority_class="high",
                gpus=4,
            )
        )
        argv = [sys.executable, str(train), str(ckpt), str(progress), str(log)]
        [job] = stack.call(
            "POST",
            "/v1/jobs",
            body={
                "command": [*argv, str(INTERVAL_S), str(RATE)],
                "name": "train",
                "nodes": "2",
                "gpus_per_task": 4,
                "workdir": str(work),
                "environment": env(),
            },
        )["job_ids"][0]

        def state() -> dict[str, object]:
            got: dict[str, object] = stack.call("GET", f"/v1/jobs/{job}")
            return got

        wait_for(lambda: state()["state"] == "RUNNING", 60, "training to run")
        wait_for(lambda: ckpt.exists() and int(ckpt.read_text()) > 0, 30, "a first checkpoint")
        if setup == "pool":  # 8 GPUs on a nominal quota of 4: the pool's 4 are borrowed
            wait_for(lambda: borrowed_gpus(stack, "training") == "4", 10, "the borrow shown")
        time.sleep(INTERVAL_S / 2)  # halfway between two checkpoints

        stack.kubectl("scale", "deployment", "burst", "--replicas=2")
        burst = time.monotonic()
        preempted = wait_for(lambda: state()["state"] != "RUNNING", 30, "training preempted")
        ready = wait_for(lambda: stack.ready_endpoints("burst") == 2, 60, "the burst ready")
        reached = int(progress.read_text())  # the last step training did before it stopped
        url = f"http://{stack.cluster_ip('burst')}/"
        codes = []
        for _ in range(20):
            with urllib.request.urlopen(url, timeout=30) as r:
                codes.append(r.status)
        assert codes == [200] * 20

        stack.kubectl("scale", "deployment", "burst", "--replicas=0")
        ended = time.monotonic()
        resumed = wait_for(
            lambda: state()["state"] == "RUNNING" and log.read_text().count("start") == 2,
            60,
            "training to resume",
        )
        notes = [line.split() for line in log.read_text().splitlines()]
        starts = [int(n[1]) for n in notes if n[0] == "start"]
        assert state()["restarts"] == 1
        twice = reached - starts[1]  # steps done before the preemption and again after it
        lost_s = twice / RATE
        print(
            f"\nhybrid ({setup}): burst scaled up -> training preempted {preempted - burst:.2f}s, "
            f"2 replicas ready {ready - burst:.2f}s; burst scaled in -> training running "
            f"again {resumed - ended:.2f}s; training reached step {reached}, resumed from "
            f"checkpoint {starts[1]} (log: {' '.join(' '.join(n) for n in notes)}): "
            f"{twice} steps done twice = {lost_s:.2f}s of work lost "
            f"(checkpoint interval {INTERVAL_S:.0f}s)"
        )
        assert twice >= 0 and lost_s <= INTERVAL_S
        assert [n[0] for n in notes] == ["start", "term", "start"]  # it had its grace signal
    finally:
        if job is not None:
            with contextlib.suppress(Exception):
                stack.call("DELETE", f"/v1/jobs/{job}")
        stack.down()
