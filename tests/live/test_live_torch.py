"""A real torch.distributed all-reduce over gloo, in a 2-node x 2-task gang scheduled live."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.state import JobState
from phalanx.domain.time import MINUTE
from phalanx.testing import LiveStack

pytest.importorskip("torch")

ALL_REDUCE = r"""
import os, sys, torch, torch.distributed as dist
dist.init_process_group("gloo")  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
line = f'{os.environ["SLURM_NODEID"]} {os.environ["LOCAL_RANK"]} {dist.get_world_size()} {t.item()}'
sys.stdout.write(line + "\n")  # one write: the four tasks share the output file
dist.destroy_process_group()
"""


def test_gloo_all_reduce_across_a_two_node_gang(tmp_path: Path, live: LiveStack) -> None:
    engine = live.engine
    spec = JobSpec(
        name="allreduce",
        nodes_min=2,
        nodes_max=2,
        tasks_per_node=2,
        gpus_per_task=1,
        time_limit=5 * MINUTE,
        command=(sys.executable, "-c", ALL_REDUCE),
        workdir=str(tmp_path),
    )
    [job_id] = live.submit(spec)
    assert live.run(lambda: engine.jobs[job_id].state.is_final, timeout=120)
    out = (tmp_path / f"slurm-{job_id}.out").read_text()
    assert engine.jobs[job_id].state is JobState.COMPLETED, out
    lines = sorted(line for line in out.splitlines() if line and line[0].isdigit())
    assert lines == ["0 0 4 10.0", "0 1 4 10.0", "1 0 4 10.0", "1 1 4 10.0"]
