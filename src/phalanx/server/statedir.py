"""The state directory: the database, the controller's socket, PID file, token and logs."""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

__all__ = ["StateDir", "alive", "default_state_dir", "read_pids"]


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
        return self.root / "agents.pid"

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
