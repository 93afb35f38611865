"""What the Slurm-command tests share besides fixtures: the reference captures, a shell with
the shims on PATH, and putting the shims on this process's PATH. (A module of its own, not the
conftest: test modules import it by a name no other test folder uses.)"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from phalanx.server.localcluster import LocalCluster
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
