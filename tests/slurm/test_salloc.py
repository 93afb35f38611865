"""salloc on a real Phalanx, through the shims: an allocation, srun in it, and its end."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from phalanx.server.localcluster import LocalCluster, cluster_yaml
from phalanx.slurm.shims import write_shims

RANKS = "import os; v = os.environ; print(v['SLURM_PROCID'], v['SLURM_NODEID'], v['SLURM_NTASKS'])"


@pytest.fixture(scope="module")
def phalanx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    state = tmp_path_factory.mktemp("phalanx")
    config = cluster_yaml(2, 8, 32).replace("- name: main", "- name: gpu")
    with LocalCluster(state, config) as local:
        yield local
    log = local.log_tail("controller", 200)
    assert "Traceback" not in log, log


@pytest.fixture
def slurm_env(phalanx: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    write_shims(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}")
    monkeypatch.setenv("PHALANX_STATE_DIR", str(phalanx.state_dir))
    monkeypatch.delenv("PHALANX_URL", raising=False)
    for name in [k for k in os.environ if k.startswith("SLURM_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    tmp_path.chmod(0o755)
    return tmp_path


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
