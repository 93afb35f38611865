"""salloc on a real Phalanx, through the shims: an allocation, srun in it, and its end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from phalanx.server.localcluster import LocalCluster

RANKS = "import os; v = os.environ; print(v['SLURM_PROCID'], v['SLURM_NODEID'], v['SLURM_NTASKS'])"


def run(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, shell=True, capture_output=True, text=True, timeout=60, check=False
    )


def test_salloc_runs_srun_over_the_allocation_and_relinquishes_it(
    phalanx: LocalCluster, slurm_env: Path
) -> None:
    done = run(f'salloc -N2 --ntasks-per-node=2 srun {sys.executable} -c "{RANKS}"')
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == ["0 0 4", "1 0 4", "2 1 4", "3 1 4"]
    lines = done.stderr.splitlines()
    job_id = int(lines[0].rsplit(" ", 1)[1])
    assert lines[0] == f"salloc: Pending job allocation {job_id}"
    assert f"salloc: Granted job allocation {job_id}" in lines
    assert lines[-1] == f"salloc: Relinquishing job allocation {job_id}"
    assert phalanx.wait([job_id])[0]["state"] == "CANCELLED"


def test_salloc_sets_the_allocation_variables_and_returns_the_command_status(
    slurm_env: Path,
) -> None:
    script = 'echo "$SLURM_JOB_ID $SLURM_NNODES $SLURM_NTASKS"; exit 7'
    done = run(f"salloc -n 3 sh -c '{script}'")
    assert done.returncode == 7, done.stderr
    job_id, nodes, ntasks = done.stdout.split()
    assert (nodes, ntasks) == ("1", "3") and f"allocation {job_id}" in done.stderr
