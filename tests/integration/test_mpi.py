"""MPI as under Slurm: OpenMPI's ``mpirun`` inside an ``sbatch`` allocation over two agents in
separate network namespaces starts its daemons through ``srun`` (as it does under Slurm:
``srun --ntasks-per-node=1 --kill-on-bad-exit --mpi=none ... orted``), and an mpi4py
all-reduce over 4 ranks on 2 nodes completes.

Needs OpenMPI (Debian's openmpi-bin, which ``make`` installs) and mpi4py (a test dependency),
besides what the namespaces need.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from live_env import env
from netns_env import NEEDS_NETNS, hosts, netns_cluster

from phalanx.slurm.shims import write_shims

pytestmark = [
    NEEDS_NETNS,
    pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs OpenMPI's mpirun"),
]

PROGRAM = """
import os, sys
from mpi4py import MPI
comm = MPI.COMM_WORLD
total = comm.allreduce(comm.Get_rank() + 1, op=MPI.SUM)
print(f"rank {comm.Get_rank()} of {comm.Get_size()} on {os.environ['SLURMD_NODENAME']} sum {total}")
"""


def test_mpirun_in_an_allocation_launches_through_srun_and_all_reduces(
    tmp_path: Path, workdir: Path
) -> None:
    pytest.importorskip("mpi4py")
    program = workdir / "allreduce.py"
    program.write_text(PROGRAM)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    bin_dir.chmod(0o755)
    write_shims(bin_dir)
    # The emulated nodes share one kernel's hostname and /tmp, where OpenMPI's shared-memory
    # transport keeps its files by host name: ranks of two "nodes" would share them. TCP
    # between all ranks, as between hosts.
    script = workdir / "job.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"export PATH={bin_dir}:$PATH\n"
        "mpirun --allow-run-as-root --mca btl tcp,self --mca plm_base_verbose 5 "
        f"-np 4 {sys.executable} {program}\n"
    )
    with hosts(2) as nodes, netns_cluster(tmp_path, nodes, cpus=4) as cluster:
        # As a user on another host: the controller by its address, with a token.
        port = (cluster.state_dir / "controller.port").read_text().strip()
        remote = {
            "PHALANX_URL": f"http://{nodes[0].gateway}:{port}",
            "PHALANX_TOKEN": (cluster.state_dir / "token").read_text().strip(),
        }
        [job_id] = cluster.submit(
            command=["sh", str(script)],
            nodes="2",
            ntasks_per_node=2,
            workdir=str(workdir),
            environment={**env(), **remote, "PATH": f"{bin_dir}:{env()['PATH']}"},
            output=str(workdir / "out.txt"),
            batch=True,
        )
        [job] = cluster.wait([job_id], timeout=120)
    out = (workdir / "out.txt").read_text()
    assert job["state"] == "COMPLETED", out
    ranks = sorted(line for line in out.splitlines() if line.startswith("rank "))
    assert ranks == [
        "rank 0 of 4 on node1 sum 10",
        "rank 1 of 4 on node1 sum 10",
        "rank 2 of 4 on node2 sum 10",
        "rank 3 of 4 on node2 sum 10",
    ], out
    # mpirun started its daemons with srun, as under Slurm.
    assert "srun --ntasks-per-node=1 --kill-on-bad-exit" in out, out
