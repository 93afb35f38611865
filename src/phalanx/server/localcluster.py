"""A whole Phalanx on this machine, as separate processes: for tests, benchmarks and demos.

The controller (``phalanx controller``) and one agent per node (``python -m phalanx.agent``)
run as real processes that talk HTTP, exactly as ``phalanx up`` starts them; the handle can
kill the controller (``kill -9``) and start it again on the same state directory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from phalanx.client.address import ControllerAddress
from phalanx.client.wirecall import ControllerUnreachable, WireCaller
from phalanx.errors import PhalanxError

__all__ = ["LocalCluster", "cluster_yaml"]


def cluster_yaml(
    nodes: int = 2,
    gpus: int = 8,
    cpus: int = 32,
    memory_gb: int = 64,
    prefix: str = "node",
    *,
    default_time: str | None = None,
) -> str:
    """A small emulated cluster with a ``high`` QOS that may preempt ``normal`` (requeue)."""
    names = f"{prefix}[1-{nodes}]" if nodes > 1 else f"{prefix}1"
    extra = f'\n    default_time: "{default_time}"' if default_time else ""
    return f"""name: local
nodes:
  - names: {names}
    gpus: {gpus}
    gpu_model: h100
    cpus: {cpus}
    memory: {memory_gb}G
partitions:
  - name: main
    nodes: ALL
    default: true{extra}
qos:
  - name: normal
  - name: high
    priority: 1000
    preempt: [normal]
    preempt_mode: requeue
    grace_time: "0:00:05"
"""


class LocalCluster:
    def __init__(
        self,
        state_dir: Path,
        config_text: str | None = None,
        *,
        policy: str = "phalanx",
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.config = self.state_dir / "cluster.yaml"
        self.config.write_text(config_text or cluster_yaml())
        self.policy = policy
        self.extra_args = extra_args
        self.env = dict(os.environ if env is None else env, PHALANX_STATE_DIR=str(state_dir))
        self.env.pop("PHALANX_URL", None)
        self.controller: subprocess.Popen[bytes] | None = None
        self.detached: int | None = None
        """The PID of a controller ``phalanx up --detach`` started (``up``)."""
        self.agents: dict[str, subprocess.Popen[bytes]] = {}
        self.caller = WireCaller(ControllerAddress(socket_path=str(self.socket)), timeout=30)

    @property
    def socket(self) -> Path:
        return self.state_dir / "controller.sock"

    @property
    def logs(self) -> Path:
        return self.state_dir / "log"

    def node_names(self) -> list[str]:
        from phalanx.config.clusterspec import cluster_from_yaml

        return [n.name for n in cluster_from_yaml(self.config.read_text()).nodes]

    # ------------------------------------------------------------------ processes
    def start(self, timeout: float = 60.0) -> LocalCluster:
        self.start_controller(timeout)
        for name in self.node_names():
            self.start_agent(name)
        self.wait_agents(timeout)
        return self

    def start_controller(self, timeout: float = 60.0) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        argv = [
            sys.executable,
            "-m",
            "phalanx",
            "controller",
            "--state-dir",
            str(self.state_dir),
            "--config",
            str(self.config),
            "--policy",
            self.policy,
            "--port",
            "0",
            "--log-level",
            "info",
            *self.extra_args,
        ]
        with open(self.logs / "controller.log", "ab") as out:
            self.controller = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=self.env
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.controller.poll() is not None:
                raise PhalanxError(f"the controller exited: {self.log_tail('controller')}")
            with contextlib.suppress(ControllerUnreachable):
                if self.caller.call("GET", "/v1/ping")[0] == 200:
                    return
            time.sleep(0.05)
        raise PhalanxError(f"the controller did not start: {self.log_tail('controller')}")

    def start_agent(self, name: str) -> None:
        argv = [
            sys.executable,
            "-m",
            "phalanx.agent",
            "--socket",
            str(self.socket),
            "--node",
            name,
            "--log-level",
            "INFO",
        ]
        with open(self.logs / f"agent-{name}.log", "ab") as out:
            self.agents[name] = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=self.env
            )

    def wait_agents(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        names = set(self.agents)
        while time.monotonic() < deadline:
            nodes = self.call("GET", "/v1/nodes")
            if all(n["agent"] and n["state"] != "down" for n in nodes if n["name"] in names):
                return
            time.sleep(0.05)
        raise PhalanxError("agents did not register: " + self.log_tail("controller"))

    def kill_controller(self) -> None:
        """``kill -9``: no chance to flush or close anything."""
        if self.detached is not None:
            os.kill(self.detached, signal.SIGKILL)
            _wait_gone(self.detached, 10)
            self.detached = None
            return
        assert self.controller is not None
        self.controller.send_signal(signal.SIGKILL)
        self.controller.wait()

    def up(self, timeout: float = 120.0) -> str:
        """Start the controller again as a user would: ``phalanx up --detach`` on this state
        directory (it keeps the agents still running). Return what it printed."""
        argv = [sys.executable, "-m", "phalanx", "up", "--detach", "--port", "0"]
        argv += ["--config", str(self.config), "--policy", self.policy, "--agents", "all"]
        done = subprocess.run(
            [*argv, *self.extra_args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise PhalanxError(f"phalanx up failed: {done.stderr.strip()}")
        self.detached = int((self.state_dir / "controller.pid").read_text())
        return done.stdout

    def stop(self) -> None:
        if self.detached is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.detached, signal.SIGTERM)
            _wait_gone(self.detached, 15)
        self._stop_routers()
        for proc in [*self.agents.values(), self.controller]:
            if proc is not None and proc.poll() is None:
                proc.terminate()
        for proc in [*self.agents.values(), self.controller]:
            if proc is None:
                continue
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _stop_routers(self) -> None:
        """The service router a ``phalanx up --detach`` (``up()``) started runs in a session
        of its own, as ``phalanx down`` finds it: stop it the same way (its pid file)."""
        from phalanx.server.statedir import alive, read_pids

        for pid in read_pids(self.state_dir / "router.pid"):
            if alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
                _wait_gone(pid, 15)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ API
    def call(self, method: str, path: str, **kw: Any) -> Any:
        return self.caller.call_ok(method, path, **kw)

    def submit(self, **request: Any) -> list[int]:
        ids: list[int] = self.call("POST", "/v1/jobs", body=request)["job_ids"][0]
        return ids

    def job(self, job_id: int) -> dict[str, Any]:
        job: dict[str, Any] = self.call("GET", f"/v1/jobs/{job_id}")
        return job

    def wait(
        self,
        job_ids: list[int],
        states: tuple[str, ...] = ("COMPLETED",),
        timeout: float = 60.0,
        *,
        final: bool = True,
    ) -> list[dict[str, Any]]:
        """Wait until every job is in one of ``states`` (or any final state, ``final``)."""
        finals = {
            "COMPLETED",
            "FAILED",
            "CANCELLED",
            "TIMEOUT",
            "PREEMPTED",
            "NODE_FAIL",
            "OUT_OF_MEMORY",
        }
        deadline = time.monotonic() + timeout
        while True:
            jobs = [self.job(i) for i in job_ids]
            done = [j["state"] in states or (final and j["state"] in finals) for j in jobs]
            if all(done) or time.monotonic() > deadline:
                return jobs
            time.sleep(0.05)

    def log_tail(self, name: str, lines: int = 20) -> str:
        path = self.logs / (f"{name}.log")
        with contextlib.suppress(OSError):
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        return ""


def _wait_gone(pid: int, timeout: float) -> None:
    """Until ``pid`` (not our child) is gone; SIGKILL after ``timeout``."""
    from phalanx.server.statedir import alive

    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + timeout
        time.sleep(0.05)
