"""Lightning Fabric's ``SLURMEnvironment`` in srun steps of a Phalanx batch job: what it
reads from the step's variables (world size, ranks, node rank) is what Slurm would give."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from phalanx.server.localcluster import LocalCluster, cluster_yaml
from phalanx.slurm.shims import write_shims

pytest.importorskip(
    "lightning_fabric", reason="lightning-fabric is not installed (pip install lightning-fabric)"
)

PROBE = """
from lightning_fabric.plugins.environments import SLURMEnvironment
env = SLURMEnvironment()
print(env.world_size(), env.global_rank(), env.local_rank(), env.node_rank(),
      SLURMEnvironment.detect(), env.main_address, env.main_port > 0)
"""


@pytest.fixture(scope="module")
def phalanx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    state = tmp_path_factory.mktemp("phalanx")
    config = cluster_yaml(2, 8, 32).replace("- name: main", "- name: gpu")
    with LocalCluster(state, config) as local:
        yield local
    log = local.log_tail("controller", 200)
    assert "Traceback" not in log, log


def test_slurm_environment_sees_the_step_ranks(
    phalanx: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    write_shims(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}")
    monkeypatch.setenv("PHALANX_STATE_DIR", str(phalanx.state_dir))
    monkeypatch.delenv("PHALANX_URL", raising=False)
    for name in [k for k in os.environ if k.startswith("SLURM_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    tmp_path.chmod(0o755)
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
