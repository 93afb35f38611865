"""Where the controller listens, and the token that opens it, found from the environment.

The rule every client follows (the CLI, the Slurm shims, library users):

1. ``PHALANX_URL`` (``http://127.0.0.1:6817``) if set: TCP, with a bearer token taken from
   ``PHALANX_TOKEN`` or else from ``<state dir>/token`` when that file is readable. Several
   controllers (a leader and its standbys) are a comma list: ``http://ctl1:6817,http://ctl2:6817``;
   a call goes to whichever leads (``phalanx.client.wirecall``);
2. otherwise the Unix socket ``<state dir>/controller.sock``, where no token is needed
   because the controller reads the caller's uid from the socket (``SO_PEERCRED``).

The state directory is ``PHALANX_STATE_DIR`` or ``~/.local/state/phalanx``. Stdlib only:
the shims import this on every run.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

__all__ = [
    "DEFAULT_STATE_DIR",
    "SOCKET_NAME",
    "TOKEN_NAME",
    "ControllerAddress",
    "Tries",
    "find_controller",
    "state_dir",
]

DEFAULT_STATE_DIR = "~/.local/state/phalanx"
SOCKET_NAME = "controller.sock"
TOKEN_NAME = "token"


class ControllerAddress:
    """Exactly one of ``url`` (TCP) and ``socket_path`` (Unix socket) is set. (A plain
    class, not a dataclass: ``dataclasses`` imports ``inspect``, too slow for the shims.)"""

    __slots__ = ("socket_path", "token", "url")

    def __init__(
        self, url: str | None = None, socket_path: str | None = None, token: str | None = None
    ) -> None:
        self.url = url
        self.socket_path = socket_path
        self.token = token
        if (self.url is None) == (self.socket_path is None):
            raise ValueError("a controller address has exactly one of url and socket_path")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ControllerAddress):
            return NotImplemented
        return (self.url, self.socket_path, self.token) == (
            other.url,
            other.socket_path,
            other.token,
        )

    def __hash__(self) -> int:
        return hash((self.url, self.socket_path, self.token))

    def __repr__(self) -> str:
        return (
            f"ControllerAddress(url={self.url!r}, socket_path={self.socket_path!r}, "
            f"token={'...' if self.token else None})"
        )

    def describe(self) -> str:
        """Where the controller is expected, for error messages."""
        if self.socket_path is not None:
            return f"unix socket {self.socket_path}"
        return str(self.url)

    @property
    def urls(self) -> list[str]:
        """The controllers' URLs: ``url`` is one, or several separated by commas (a leader
        and its standbys, in any order)."""
        if self.url is None:
            return []
        return [u.strip().rstrip("/") for u in self.url.split(",") if u.strip()]


class Tries:
    """The controllers one call tries, in order: the one that answered last, then the
    others, then any leader a standby names (``follow``); each at most once. The one rule
    the CLI's client and the shims' wire caller share."""

    __slots__ = ("_order", "tried")

    def __init__(self, last: str | None, urls: list[str]) -> None:
        self._order = [u for u in [last, *urls] if u is not None]
        self.tried: set[str] = set()

    def __iter__(self) -> Tries:
        return self

    def __next__(self) -> str:
        while self._order:
            url = self._order.pop(0)
            if url not in self.tried:
                self.tried.add(url)
                return url
        raise StopIteration

    def follow(self, hint: str) -> bool:
        """Try ``hint`` (a standby's word for the leader) next, unless it was tried:
        whether it will be."""
        hint = hint.rstrip("/")
        if hint in self.tried:
            return False
        self._order.insert(0, hint)
        return True


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The controller's state directory as this caller sees it."""
    env = os.environ if environ is None else environ
    from pathlib import Path

    configured = env.get("PHALANX_STATE_DIR")
    if configured:
        return Path(configured).expanduser()
    if "HOME" in env:
        return Path(env["HOME"]) / ".local" / "state" / "phalanx"
    return Path(DEFAULT_STATE_DIR).expanduser()


def find_controller(environ: Mapping[str, str] | None = None) -> ControllerAddress:
    """The controller to talk to, by the rule in this module's docstring."""
    env = os.environ if environ is None else environ
    url = env.get("PHALANX_URL")
    if url:
        urls = ",".join(u.strip().rstrip("/") for u in url.split(",") if u.strip())
        return ControllerAddress(url=urls, token=_token(env, state_dir(env)))
    here = env.get("PHALANX_STATE_DIR") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".local", "state", "phalanx"
    )
    return ControllerAddress(socket_path=os.path.join(os.path.expanduser(here), SOCKET_NAME))


def _token(env: Mapping[str, str], here: Path) -> str | None:
    token = env.get("PHALANX_TOKEN")
    if token:
        return token.strip()
    try:
        text = (here / TOKEN_NAME).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        # Not readable is the normal case for a user on another host: the call goes out
        # without a token and the controller's 401 says what is missing.
        return None
    return text or None
