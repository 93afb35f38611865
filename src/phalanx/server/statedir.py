"""The state directory: the database, the controller's socket, PID file, token and logs."""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

__all__ = ["StateDir", "agent_node", "alive", "default_state_dir", "read_pids"]


def default_state_dir() -> Path:
    env = os.environ.get("PHALANX_STATE_DIR")
    if env:
        return Path(env)
    return Path.home() / ".local" / "state" / "phalanx"


def read_pids(path: Path) -> list[int]:
    """The PIDs a PID file lists (none if it is missing or unreadable)."""
    try:
        return [int(w) for w in path.read_text().split()]
    except (OSError, ValueError):
        return []


def alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie (a child not yet reaped, in tests) counts as gone."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ")[-1][:1] != "Z"
    return True


def agent_node(pid: int, socket: Path, agents_dir: Path | None = None) -> str | None:
    """The node ``pid`` is the agent of, if it is a live Phalanx agent of the controller at
    ``socket`` -- or, started with ``--peers``, one whose credential file is in
    ``agents_dir`` (its command line says so) -- else None: a PID file may be stale and its
    PID reused by anything."""
    if not alive(pid):
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().decode(errors="replace").split("\0")
    except OSError:
        return None
    if "phalanx.agent" not in argv:
        return None
    token = _flag(argv, "--token-file")
    ours = _flag(argv, "--socket") == str(socket) or (
        agents_dir is not None and token is not None and Path(token).parent == agents_dir
    )
    return _flag(argv, "--node") if ours else None


def _parent(pid: int) -> int | None:
    """The parent of ``pid`` (``/proc/PID/stat``), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after it.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def _flag(argv: list[str], name: str) -> str | None:
    for i, word in enumerate(argv[:-1]):
        if word == name:
            return argv[i + 1]
    return None


@dataclass(frozen=True)
class StateDir:
    root: Path

    @property
    def database(self) -> Path:
        return self.root / "state.db"

    @property
    def socket(self) -> Path:
        return self.root / "controller.sock"

    @property
    def pid(self) -> Path:
        return self.root / "controller.pid"

    @property
    def agents_pid(self) -> Path:
        """Where older versions listed the agents they started (still read)."""
        return self.root / "agents.pid"

    @property
    def agents_dir(self) -> Path:
        return self.root / "agents"

    def agent_pid(self, node: str) -> Path:
        """The PID file of the agent started for ``node``."""
        return self.agents_dir / f"{node}.pid"

    def live_agents(self) -> dict[str, list[int]]:
        """node -> PIDs of the agents of this state directory still running: those the PID
        files name and any other process that is one (a PID file overwritten by a second
        ``phalanx up`` must not hide an agent), each checked by its command line."""
        candidates = set(read_pids(self.agents_pid))
        with contextlib.suppress(OSError):
            for path in self.agents_dir.glob("*.pid"):
                candidates.update(read_pids(path))
        with contextlib.suppress(OSError):
            candidates.update(int(p) for p in os.listdir("/proc") if p.isdecimal())
        found: dict[str, list[int]] = {}
        for pid in sorted(candidates):
            node = agent_node(pid, self.socket, self.agents_dir)
            if node is not None:
                found.setdefault(node, []).append(pid)
        # An agent's child between fork and exec (a task being launched) still shows the
        # agent's command line: it is not a second agent.
        out: dict[str, list[int]] = {}
        for node, pids in found.items():
            agents = [pid for pid in pids if _parent(pid) not in pids]
            if agents:
                out[node] = agents
        return out

    @property
    def token(self) -> Path:
        return self.root / "token"

    @property
    def port(self) -> Path:
        return self.root / "controller.port"

    @property
    def logs(self) -> Path:
        return self.root / "log"

    def running_controller(self) -> int | None:
        """The PID of the controller running from this directory, if one is."""
        pids = [p for p in read_pids(self.pid) if alive(p)]
        return pids[0] if pids else None

    def make(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.logs.mkdir(exist_ok=True)
        self.agents_dir.mkdir(exist_ok=True)

    def read_or_make_token(self) -> str:
        """The administrators' API token (for TCP clients and remote agents), made once."""
        try:
            return self.token.read_text().strip()
        except FileNotFoundError:
            token = secrets.token_urlsafe(32)
            fd = os.open(self.token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(token + "\n")
            return token
