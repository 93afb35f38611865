"""The shims: executables that start lean and run phalanx.slurm.<cmd>; phalanx shims DIR."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from phalanx.cli.main import main as phalanx_main
from phalanx.slurm.shims import COMMANDS, package_root, shim_text, write_shims

HEAVY = ("pydantic", "httpx", "numpy", "fastapi", "phalanx.domain", "phalanx.api", "yaml")


def run(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PHALANX_STATE_DIR": "/nonexistent"}
    return subprocess.run(
        [str(path), *args], capture_output=True, text=True, env=env, timeout=30, check=False
    )


def test_one_executable_per_command(tmp_path: Path) -> None:
    written = write_shims(tmp_path / "bin")
    assert [p.name for p in written] == list(COMMANDS)
    for path in written:
        assert os.access(path, os.X_OK)
        first = path.read_text().splitlines()[0]
        assert first == f"#!{sys.executable} -IS"
    assert sorted(p.name for p in (tmp_path / "bin").iterdir()) == sorted(COMMANDS)


def test_a_shim_runs_its_command(tmp_path: Path) -> None:
    [sbatch, scancel, *_] = write_shims(tmp_path)
    assert run(sbatch, "--version").stdout == "slurm 22.05.8\n"
    done = run(sbatch, "--wrap=true")
    assert (done.returncode, done.stderr) == (
        1,
        "sbatch: error: Batch job submission failed: "
        "Unable to contact slurm controller (connect failure)\n",
    )
    assert run(scancel).stderr == "scancel: error: No job identification provided\n"


def test_a_command_not_written_yet_says_so(tmp_path: Path) -> None:
    path = tmp_path / "snothing"
    path.write_text(shim_text("snothing"))
    path.chmod(0o755)
    done = run(path)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "snothing: not provided by Phalanx yet\n",
    )


@pytest.mark.parametrize("command", ["sbatch", "scancel"])
def test_a_shim_imports_nothing_heavy(command: str) -> None:
    code = (
        f"import sys; sys.path.insert(0, {package_root()!r}); "
        f"import phalanx.slurm.{command}; print(' '.join(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-IS", "-c", code], capture_output=True, text=True, check=True
    )
    loaded = done.stdout.split()
    assert not [m for m in loaded if m.startswith(HEAVY)]
    assert "site" not in loaded


def test_phalanx_shims_writes_them_and_says_how_to_use_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert phalanx_main(["shims", str(tmp_path / "slurm-bin")]) == 0
    out = capsys.readouterr().out
    assert f"export PATH={tmp_path / 'slurm-bin'}:$PATH" in out
    assert (tmp_path / "slurm-bin" / "sbatch").exists()
