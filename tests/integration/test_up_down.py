"""`phalanx demo` (what `make run` runs), the client commands against it, `phalanx down`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

PHALANX = [sys.executable, "-m", "phalanx"]


def _run(args: list[str], state: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PHALANX_STATE_DIR=str(state))
    env.pop("PHALANX_URL", None)
    return subprocess.run(
        [*PHALANX, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_demo_then_the_client_commands_then_down(tmp_path: Path) -> None:
    state = tmp_path / "state"
    demo = _run(["demo", "--port", "0"], state)
    try:
        assert demo.returncode == 0, demo.stderr
        assert "Phalanx is up: 4 node(s), 32 GPU(s), 4 agent(s)" in demo.stdout
        assert "phalanx jobs --all" in demo.stdout
        again = _run(["up", "--port", "0", "--detach"], state)
        assert again.returncode == 1 and "already runs" in again.stderr
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            jobs = _run(["jobs", "--all"], state)
            assert jobs.returncode == 0, jobs.stderr
            if "COMPLETED" in jobs.stdout and "RUNNING" in jobs.stdout:
                break
            time.sleep(0.5)
        assert "gang" in jobs.stdout and "2_[" not in jobs.stdout  # tasks one per line
        nodes = _run(["nodes"], state)
        assert nodes.returncode == 0 and "node4" in nodes.stdout
        submitted = _run(["submit", "--", "true"], state)
        assert submitted.returncode == 0 and submitted.stdout.strip().isdigit()
        bad = _run(["submit", "-t", "whenever", "--", "true"], state)
        assert bad.returncode == 2 and "time" in bad.stderr and "Traceback" not in bad.stderr
    finally:
        down = _run(["down"], state)
    assert down.returncode == 0 and "stopped" in down.stdout
    assert not (state / "controller.pid").exists()
    assert _run(["jobs"], state).returncode == 1  # nobody answers now
