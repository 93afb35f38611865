"""The shims: executables that start lean and run phalanx.slurm.<cmd>; phalanx shims DIR."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from phalanx.cli.main import main as phalanx_main
from phalanx.slurm import SERVED
from phalanx.slurm.shims import COMMANDS, NATIVE, PYTHON_DIR, package_root, shim_text, write_shims

HEAVY = ("pydantic", "httpx", "numpy", "fastapi", "phalanx.domain", "phalanx.api", "yaml")


def run(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PHALANX_STATE_DIR": "/nonexistent"}
    return subprocess.run(
        [str(path), *args], capture_output=True, text=True, env=env, timeout=30, check=False
    )


def python_shim(path: Path) -> bool:
    return path.read_text().splitlines()[0] == f"#!{sys.executable} -IS"


def test_python_shims_only_when_asked(tmp_path: Path) -> None:
    shims = write_shims(tmp_path / "bin", native=False)
    assert [p.name for p in shims.paths] == list(COMMANDS)
    assert not shims.native
    for path in shims.paths:
        assert os.access(path, os.X_OK)
        assert python_shim(path)
    assert sorted(p.name for p in (tmp_path / "bin").iterdir()) == sorted([*COMMANDS, PYTHON_DIR])


def test_served_commands_are_links_to_the_native_shim(tmp_path: Path) -> None:
    shims = write_shims(tmp_path / "bin")
    assert shims.native, shims.why_not  # this machine has a C compiler
    assert [p.name for p in shims.paths] == list(COMMANDS)
    for path in shims.paths:
        assert os.access(path, os.X_OK)
        if path.name in SERVED:
            assert os.readlink(path) == NATIVE
        else:  # srun, salloc: long-lived, relaying a terminal
            assert python_shim(path)
        # Every command has its Python self for the native shim to fall back on.
        assert python_shim(tmp_path / "bin" / PYTHON_DIR / path.name)


def test_without_a_compiler_the_shims_are_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    shims = write_shims(tmp_path / "bin")
    assert not shims.native
    assert "no-such-cc" in shims.why_not
    assert all(python_shim(p) for p in shims.paths)


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_a_shim_runs_its_command(tmp_path: Path, native: bool) -> None:
    # No controller, no command server: the native shim runs its Python self.
    [sbatch, scancel, *_] = write_shims(tmp_path, native=native).paths
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
