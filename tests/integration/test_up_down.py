"""`phalanx demo` (what `make run` runs), the client commands against it, `phalanx down`."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

PHALANX = [sys.executable, "-m", "phalanx"]


def _run(args: list[str], state: Path, db: str | None = None) -> subprocess.CompletedProcess[str]:
    """``phalanx ARGS`` on the state directory ``state`` (and the store at ``db``)."""
    env = dict(os.environ, PHALANX_STATE_DIR=str(state))
    if db is not None:
        env["PHALANX_DB"] = db
    env.pop("PHALANX_URL", None)
    return subprocess.run(
        [*PHALANX, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_demo_then_the_client_commands_then_down(tmp_path: Path, db_url: str) -> None:
    state = tmp_path / "state"
    demo = _run(["demo", "--port", "0"], state, db_url)
    try:
        assert demo.returncode == 0, demo.stderr
        assert "Phalanx is up: 4 node(s), 32 GPU(s), 4 agent(s)" in demo.stdout
        assert "phalanx jobs --all" in demo.stdout
        # The dashboard's sign-in link: it signs the browser in as an administrator.
        link = re.search(r"dashboard: (http://\S+/ui\?token=\S+)", demo.stdout)
        assert link is not None, demo.stdout
        with httpx.Client(follow_redirects=True, timeout=30) as web:
            page = web.get(link.group(1))
        assert page.status_code == 200 and str(page.url).endswith("/ui"), page.text
        assert 'id="node-node4"' in page.text and '<span class="tag">admin</span>' in page.text
        again = _run(["up", "--port", "0", "--detach"], state, db_url)
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


def _job_state(state: Path, job_id: int) -> str:
    from phalanx.client.address import ControllerAddress
    from phalanx.client.wirecall import WireCaller

    caller = WireCaller(ControllerAddress(socket_path=str(state / "controller.sock")), timeout=10)
    return str(caller.call_ok("GET", f"/v1/jobs/{job_id}")["state"])


def test_up_after_a_killed_controller_runs_each_job_once_and_down_stops_every_agent(
    tmp_path: Path, db_url: str
) -> None:
    from phalanx.server.localcluster import cluster_yaml
    from phalanx.server.statedir import StateDir

    state = tmp_path / "state"
    config = tmp_path / "cluster.yaml"
    config.write_text(cluster_yaml(2, 8))
    ran = tmp_path / "ran.txt"
    up = ["up", "--detach", "--port", "0", "--config", str(config), "--agents", "all"]
    try:
        first = _run(up, state, db_url)
        assert first.returncode == 0, first.stderr
        agents = StateDir(state).live_agents()
        assert sorted(agents) == ["node1", "node2"] and all(len(p) == 1 for p in agents.values())
        controller = int((state / "controller.pid").read_text())
        os.kill(controller, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and Path(f"/proc/{controller}").exists():
            time.sleep(0.05)
        second = _run(up, state, db_url)
        assert second.returncode == 0, second.stderr
        assert "kept    2 agent(s)" in second.stdout
        assert StateDir(state).live_agents() == agents  # the same agents, no second pair
        ids = []
        for _ in range(3):
            script = f"echo ran $SLURM_JOB_ID >> {ran}"
            sub = _run(["submit", "-D", str(tmp_path), "--", "bash", "-c", script], state)
            assert sub.returncode == 0, sub.stderr
            ids.append(int(sub.stdout.strip()))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            states = [_job_state(state, i) for i in ids]
            if all(s == "COMPLETED" for s in states):
                break
            time.sleep(0.2)
        assert states == ["COMPLETED"] * 3
        time.sleep(0.5)  # a second run, were there one, would have written by now
        lines = ran.read_text().splitlines()
        assert sorted(lines) == sorted(f"ran {i}" for i in ids), lines
    finally:
        down = _run(["down"], state)
    assert down.returncode == 0, down.stderr
    assert StateDir(state).live_agents() == {}
    assert not (state / "controller.pid").exists()
