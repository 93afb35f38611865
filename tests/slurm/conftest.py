"""A real Phalanx (16 nodes of 8 GPUs, partition ``gpu``, as the reference Slurm) with the
Slurm shims on PATH, and the reference captures of Slurm 22.05 to compare with."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from phalanx.server.localcluster import LocalCluster, cluster_yaml
from phalanx.slurm.shims import write_shims

REFERENCE = Path("/work/shared/slurm/reference/out")
if not REFERENCE.is_dir():
    REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "slurm" / "reference" / "out"


@dataclass(frozen=True)
class Capture:
    """One command as a shell ran it: what it printed and its exit status."""

    command: str
    stdout: str
    stderr: str
    rc: int


def reference(name: str) -> Capture:
    """The capture ``out/<name>.txt`` of the reference Slurm."""
    text = (REFERENCE / f"{name}.txt").read_text()
    m = re.fullmatch(
        r"\$ (.*?)\n--- stdout ---\n(.*?)--- stderr ---\n(.*?)--- rc=(-?\d+)\n?", text, re.S
    )
    assert m is not None, name
    return Capture(m.group(1), m.group(2), m.group(3), int(m.group(4)))


def normalized(text: str) -> str:
    """Job ids are the cluster's own: ``Submitted batch job N``, ``N`` alone on a line."""
    text = re.sub(r"Submitted batch job \d+", "Submitted batch job N", text)
    return re.sub(r"(?m)^\d+$", "N", text)


class Shell:
    """Runs command lines as a user would, with the shims first on PATH."""

    def __init__(self, cluster: LocalCluster, bin_dir: Path, workdir: Path) -> None:
        self.cluster = cluster
        self.bin = bin_dir
        self.workdir = workdir
        self.env = {
            "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(workdir),
            "PHALANX_STATE_DIR": str(cluster.state_dir),
        }

    def run(self, command: str, stdin: str = "") -> Capture:
        done = subprocess.run(
            command,
            shell=True,
            cwd=self.workdir,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return Capture(command, done.stdout, done.stderr, done.returncode)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    state = tmp_path_factory.mktemp("phalanx")
    config = cluster_yaml(16, 8, prefix="n").replace("- name: main", "- name: gpu")
    with LocalCluster(state, config) as local:
        yield local
    log = local.log_tail("controller", 200)
    assert "Traceback" not in log, log


@pytest.fixture(scope="module")
def shell(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Shell:
    bin_dir = tmp_path_factory.mktemp("bin")
    write_shims(bin_dir)
    workdir = tmp_path_factory.mktemp("work")
    workdir.chmod(0o755)
    return Shell(cluster, bin_dir, workdir)


# ------------------------------------------------------------------ the clients' cluster
@pytest.fixture(scope="module")
def phalanx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Two nodes of 8 GPUs and 32 CPUs in one default partition ``gpu``, as the reference;
    one per test module, for the tests that run real clients (srun, salloc, submitit, ...)."""
    state = tmp_path_factory.mktemp("phalanx")
    config = cluster_yaml(2, 8, 32).replace("- name: main", "- name: gpu")
    with LocalCluster(state, config) as local:
        yield local
    log = local.log_tail("controller", 200)
    assert "Traceback" not in log, log


def activate_shims(phalanx: LocalCluster, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shims first on PATH and the cluster's state directory, for this process and the
    clients it starts; no SLURM_* variables from outside; ``workdir`` the current directory."""
    bin_dir = workdir / "bin"
    write_shims(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}")
    monkeypatch.setenv("PHALANX_STATE_DIR", str(phalanx.state_dir))
    monkeypatch.delenv("PHALANX_URL", raising=False)
    for name in [k for k in os.environ if k.startswith("SLURM_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(workdir)
    workdir.chmod(0o755)
    return workdir


@pytest.fixture
def slurm_env(phalanx: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return activate_shims(phalanx, tmp_path, monkeypatch)
