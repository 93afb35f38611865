"""Values no Slurm command can use are refused with Slurm's message and exit status, never a
traceback: Unicode digits that ``str.isdigit`` takes and ``int`` refuses (``²``), field
widths too wide to build in memory, node lists that are none. All are refused before the
controller is asked, so no cluster runs here (the state directory does not exist)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    ("argv", "message", "status"),
    [
        (["scancel", "²"], "Invalid job id ²", 1),
        (["scancel", "1_²"], "Invalid job id", 1),
        (["scancel", "-s", "²", "1"], "Invalid job signal: ²", 1),
        (["squeue", "-j", "²"], "Invalid job id: ²", 1),
        (["sprio", "-j", "²"], "Invalid job id: ²", 1),
        (["sacct", "-j", "²"], "Invalid job id: ²", 1),
        (["sacct", "-o", "jobid%99999999999"], "Invalid field width", 1),
        (["sshare", "-o", "account%9999999999"], "Invalid field width", 1),
        (["sbatch", "-n", "²", "--wrap", "true"], 'Invalid numeric value "²" for --ntasks.', 1),
        (["sbatch", "-N", "²", "--wrap", "true"], '"²" is not a valid node count', 255),
        (["sbatch", "--switches=²", "--wrap", "true"], "Invalid --switches specification", 255),
        (["scontrol", "show", "job", "²"], "Invalid job id specified", 1),
        # A node list that is none: hostlist's ConfigError went up as a traceback.
        (["squeue", "-w", "n[1-"], "'n[1-' invalid entry for --nodelist", 1),
        (["sinfo", "-n", "n[1-"], "'n[1-' invalid entry for --nodes", 1),
        (["sacct", "-N", "n[1-"], "'n[1-' invalid entry for --nodelist", 1),
        (["scancel", "-w", "n[1-"], "'n[1-' invalid entry for --nodelist", 1),
        (
            ["scontrol", "update", "NodeName=n[1-", "State=drain", "Reason=x"],
            "slurm_update error: Invalid node name specified",
            1,
        ),
    ],
)
def test_refused_with_slurms_message(
    argv: list[str],
    message: str,
    status: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PHALANX_STATE_DIR", str(tmp_path / "none"))
    monkeypatch.delenv("PHALANX_URL", raising=False)
    command = importlib.import_module(f"phalanx.slurm.{argv[0]}")
    assert command.main(argv[1:]) == status
    assert message in capsys.readouterr().err


def test_a_format_too_wide_is_a_bad_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PHALANX_STATE_DIR", str(tmp_path / "none"))
    monkeypatch.delenv("PHALANX_URL", raising=False)
    squeue = importlib.import_module("phalanx.slurm.squeue")
    squeue.main(["-o", "%999999999i"])
    assert "Invalid job format specification: %999999999i (width over" in capsys.readouterr().err
