"""A real torch.distributed all-reduce over gloo in a 2-node x 2-task gang, each node's
tasks started by its own agent process (two agents on this machine)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from live_env import env

from phalanx.server.localcluster import LocalCluster

pytest.importorskip("torch")

ALL_REDUCE = r"""
import os, sys, torch, torch.distributed as dist
dist.init_process_group("gloo")  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
v = os.environ
line = f'{v["SLURMD_NODENAME"]} {v["LOCAL_RANK"]} {dist.get_world_size()} {t.item()}'
sys.stdout.write(line + "\n")  # one write: the four tasks share the output file
dist.destroy_process_group()
"""


def test_gloo_all_reduce_across_two_agents(cluster: LocalCluster, workdir: Path) -> None:
    [job_id] = cluster.submit(
        command=[sys.executable, "-c", ALL_REDUCE],
        nodes="2",
        ntasks_per_node=2,
        gpus_per_task=1,
        time="5:00",
        workdir=str(workdir),
        environment=env(),
        name="allreduce",
    )
    [job] = cluster.wait([job_id], timeout=180)
    out = (workdir / f"slurm-{job_id}.out").read_text()
    assert job["state"] == "COMPLETED", out
    lines = sorted(line for line in out.splitlines() if line.startswith("node"))
    assert lines == ["node1 0 4 10.0", "node1 1 4 10.0", "node2 0 4 10.0", "node2 1 4 10.0"]
