"""Lightning Fabric's ``SLURMEnvironment`` in srun steps of a Phalanx batch job: what it
reads from the step's variables (world size, ranks, node rank) is what Slurm would give."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from slurm_shell import activate_shims

from phalanx.server.localcluster import LocalCluster

pytest.importorskip(
    "lightning_fabric", reason="lightning-fabric is not installed (pip install lightning-fabric)"
)

PROBE = """
from lightning_fabric.plugins.environments import SLURMEnvironment
env = SLURMEnvironment()
print(env.world_size(), env.global_rank(), env.local_rank(), env.node_rank(),
      SLURMEnvironment.detect(), env.main_address, env.main_port > 0)
"""


def test_slurm_environment_sees_the_step_ranks(
    phalanx: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    activate_shims(phalanx, tmp_path, monkeypatch)
    (tmp_path / "probe.py").write_text(PROBE)
    (tmp_path / "job.sh").write_text(f"#!/bin/bash\nsrun {sys.executable} probe.py\n")
    done = subprocess.run(
        "sbatch --wait -N2 --ntasks-per-node=2 -o out.txt job.sh",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = (tmp_path / "out.txt").read_text()
    assert done.returncode == 0, out + done.stderr
    rows = sorted(line.split() for line in out.splitlines() if line.strip())
    assert [row[:5] for row in rows] == [
        ["4", "0", "0", "0", "True"],
        ["4", "1", "1", "0", "True"],
        ["4", "2", "0", "1", "True"],
        ["4", "3", "1", "1", "True"],
    ], out
    assert len({row[5] for row in rows}) == 1 and all(row[6] == "True" for row in rows), out
