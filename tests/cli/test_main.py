"""The ``phalanx`` command shell: subcommands load lazily, help and usage errors behave."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from phalanx.cli.main import COMMANDS, main


def test_help_imports_no_subcommand_and_no_heavy_library() -> None:
    probe = (
        "import sys\n"
        "from phalanx.cli.main import main\n"
        "status = main(['--help'])\n"
        "heavy = [m for m in ('numpy', 'matplotlib', 'rich', 'phalanx.sim', "
        "'phalanx.cli.simulate') if m in sys.modules]\n"
        "print('HEAVY', heavy, status)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert "HEAVY [] 0" in done.stdout
    for name in COMMANDS:
        assert name in done.stdout


def test_subcommand_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--trace", "--generate", "--cluster", "--nodes", "--policy", "--json"):
        assert option in out


def test_no_or_unknown_command_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["frobnicate"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_python_m_phalanx_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "phalanx", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.startswith("phalanx ")


@pytest.mark.parametrize(
    ("argv", "env", "field"),
    [
        (["controller", "--db", "mysql://h/db"], None, "--db"),
        (["up", "--detach"], "state.db", "PHALANX_DB"),
    ],
)
def test_a_state_store_url_of_another_kind_exits_2_naming_where_it_came_from(
    argv: list[str],
    env: str | None,
    field: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PHALANX_STATE_DIR", str(tmp_path))
    if env is None:
        monkeypatch.delenv("PHALANX_DB", raising=False)
    else:
        monkeypatch.setenv("PHALANX_DB", env)
    assert main([*argv, "--port", "0", "--no-command-server"]) == 2
    err = capsys.readouterr().err
    assert field in err and "sqlite:///PATH" in err and "Traceback" not in err
