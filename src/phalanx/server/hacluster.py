"""Several controllers on one PostgreSQL store, with agents that know them all: a leader and
its standbys on this machine, as separate processes, for tests and benchmarks.

Each controller has its own state directory and TCP port; they share the store (``--db``),
the cluster definition and the users' tokens. Agents and clients are given every URL
(``--controller URL1,URL2``, ``PHALANX_URL``) and follow the leader. ``kill`` is a kill -9;
``start`` brings a controller back (as a standby, if another leads by then).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from phalanx.client.address import ControllerAddress
from phalanx.client.wirecall import WireCaller
from phalanx.errors import PhalanxError

__all__ = ["HACluster"]

TOKEN = "ha-token"


class HACluster:
    def __init__(
        self,
        root: Path,
        db_url: str,
        config_text: str,
        *,
        controllers: int = 2,
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.db_url = db_url
        self.config = self.root / "cluster.yaml"
        self.config.write_text(config_text)
        self.tokens = self.root / "tokens"
        self.tokens.write_text(f"{TOKEN} {_user()}\n")
        (self.root / "token").write_text(TOKEN + "\n")
        self.extra_args = extra_args
        self.env = dict(os.environ if env is None else env)
        self.env.pop("PHALANX_URL", None)
        self.env.pop("PHALANX_DB", None)
        self.ports = [_free_port() for _ in range(controllers)]
        self.urls = [f"http://127.0.0.1:{port}" for port in self.ports]
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.agents: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def url_list(self) -> str:
        return ",".join(self.urls)

    def caller(self, timeout: float = 30.0) -> WireCaller:
        """A client given every controller, as ``PHALANX_URL=URL1,URL2`` gives it."""
        return WireCaller(ControllerAddress(url=self.url_list, token=TOKEN), timeout=timeout)

    def log(self, name: str) -> Path:
        return self.root / f"{name}.log"

    # ------------------------------------------------------------------ processes
    def start(self, i: int) -> None:
        """Start controller ``i`` (it leads if no one does, else stands by)."""
        state = self.root / f"controller{i}"
        argv = [
            sys.executable,
            "-m",
            "phalanx",
            "controller",
            "--state-dir",
            str(state),
            "--db",
            self.db_url,
            "--config",
            str(self.config),
            "--port",
            str(self.ports[i]),
            "--tokens",
            str(self.tokens),
            "--no-command-server",
            "--log-level",
            "info",
            *self.extra_args,
        ]
        with open(self.log(f"controller{i}"), "ab") as out:
            self.procs[i] = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=self.env
            )

    def start_agent(self, node: str, *args: str) -> None:
        argv = [
            sys.executable,
            "-m",
            "phalanx.agent",
            "--node",
            node,
            "--controller",
            self.url_list,
            "--token-file",
            str(self.root / "token"),
            *args,
        ]
        with open(self.log(f"agent-{node}"), "ab") as out:
            self.agents[node] = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=self.env
            )

    def kill(self, i: int) -> None:
        """kill -9 controller ``i`` and reap it."""
        proc = self.procs.pop(i)
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def stop(self) -> None:
        for proc in [*self.agents.values(), *self.procs.values()]:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        for proc in [*self.agents.values(), *self.procs.values()]:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.agents.clear()
        self.procs.clear()

    def __enter__(self) -> HACluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ roles
    def ping(self, i: int) -> dict[str, Any] | None:
        """Controller ``i``'s own answer to a ping (its role), without following a leader;
        None if it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.urls[i]}/v1/ping", timeout=5) as resp:
                answer = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            answer = json.loads(exc.read() or b"null")
        except (OSError, ValueError):
            return None
        return answer if isinstance(answer, dict) else None

    def role(self, i: int) -> str | None:
        answer = self.ping(i)
        return None if answer is None else str(answer.get("role"))

    def wait_role(self, i: int, role: str, timeout: float = 60.0) -> float:
        """Wait until controller ``i`` has ``role``; return the seconds it took."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.role(i) == role:
                return time.monotonic() - t0
            proc = self.procs.get(i)
            if proc is not None and proc.poll() is not None:
                raise PhalanxError(f"controller {i} exited: {self.tail(f'controller{i}')}")
            time.sleep(0.02)
        raise PhalanxError(
            f"controller {i} is not {role} after {timeout:g} s: {self.tail(f'controller{i}')}"
        )

    def leader(self) -> int | None:
        for i in self.procs:
            if self.role(i) == "leader":
                return i
        return None

    def wait_agents(self, count: int, timeout: float = 60.0) -> None:
        caller = self.caller()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            nodes = caller.call_ok("GET", "/v1/nodes")
            up = [n for n in nodes if n["agent"] and n["state"] != "down"]
            if len(up) >= count:
                return
            time.sleep(0.1)
        raise PhalanxError(f"the agents did not register within {timeout:g} s")

    def tail(self, name: str, lines: int = 30) -> str:
        try:
            text = self.log(name).read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name
