"""``phalanx controller|up --slurm-conf``: a bad file is one clear error; a good one runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PHALANX = [sys.executable, "-m", "phalanx"]
REF = Path(__file__).parents[1] / "config" / "data" / "slurm-ref"


def _run(args: list[str], state: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PHALANX_STATE_DIR=str(state))
    env.pop("PHALANX_URL", None)
    return subprocess.run(
        [*PHALANX, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_a_bad_slurm_conf_exits_2_naming_file_line_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.conf"
    bad.write_text("ClusterName=x\nNodeName=n[1-2] RealMemory=lots\n")
    done = _run(["controller", "--slurm-conf", str(bad), "--port", "0"], tmp_path / "state")
    assert done.returncode == 2
    assert f"{bad}:2, field 'RealMemory'" in done.stderr and "Traceback" not in done.stderr
    both = _run(["controller", "--slurm-conf", str(bad), "--config", str(bad)], tmp_path)
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_up_with_a_slurm_conf_then_nodes_then_down(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    for name in ("topology.conf", "gres.conf"):
        (etc / name).write_text((REF / name).read_text())
    # The reference slurm.conf with its nodes moved to an Include, to read that path too.
    lines = (REF / "slurm.conf").read_text().splitlines(keepends=True)
    (etc / "nodes.conf").write_text("".join(x for x in lines if x.startswith("NodeName=")))
    (etc / "slurm.conf").write_text(
        "".join(x for x in lines if not x.startswith("NodeName=")) + "Include nodes.conf\n"
    )
    state = tmp_path / "state"
    conf = str(etc / "slurm.conf")
    up = _run(
        ["up", "--slurm-conf", conf, "--detach", "--port", "0", "--state-dir", str(state)], state
    )
    try:
        assert up.returncode == 0, up.stderr
        assert "4 node(s), 32 GPU(s), 4 agent(s)" in up.stdout
        nodes = _run(["nodes"], state)
        assert nodes.returncode == 0, nodes.stderr
        for name in ("n01", "n02", "n03", "n04"):
            assert name in nodes.stdout
    finally:
        down = _run(["down", "--state-dir", str(state)], state)
    assert down.returncode == 0 and "stopped" in down.stdout, down.stderr
