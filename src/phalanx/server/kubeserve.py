"""The Kubernetes API of a controller: its TLS port (``--kube-port``), certificates, and
tokens (the controller's, ``--tokens``, and those ``phalanx kubeconfig --user`` issued into
``kube-tokens`` in the state directory, re-read when that file changes).

Imported only by a controller that serves the Kubernetes API, so that other commands stay
fast."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import uvicorn

from phalanx.kube.groupcommit import GroupCommit
from phalanx.kube.kubeconfig import read_tokens
from phalanx.kube.pace import Pace
from phalanx.kube.server import KubeApp, User, create_app
from phalanx.kube.store import ObjectStore
from phalanx.kube.tls import ensure_certificates
from phalanx.live.kubeobjects import open_objects
from phalanx.server.statedir import StateDir

__all__ = ["KubeServer", "KubeTokens", "kube_server"]

log = logging.getLogger("phalanx.kube")

AUTHENTICATED = "system:authenticated"
MASTERS = "system:masters"


class KubeTokens(Mapping[str, User]):
    """Bearer token -> (user, groups): ``fixed`` tokens, then the state directory's
    ``kube-tokens`` file (re-read when its mtime moves). Administrators are in
    ``system:masters``."""

    def __init__(self, fixed: Mapping[str, str], path: Path, admins: Callable[[str], bool]):
        self.fixed = dict(fixed)
        self.path = path
        self.admins = admins
        self._mtime: float | None = None
        self._issued: dict[str, str] = {}

    def _user(self, name: str) -> User:
        groups = (AUTHENTICATED, MASTERS) if self.admins(name) else (AUTHENTICATED,)
        return (name, groups)

    def _refresh(self) -> None:
        try:
            mtime = self.path.stat().st_mtime
        except FileNotFoundError:
            mtime = None
        if mtime != self._mtime:
            self._mtime = mtime
            self._issued = read_tokens(self.path)

    def __getitem__(self, token: str) -> User:
        name = self.fixed.get(token)
        if name is None:
            self._refresh()
            name = self._issued[token]
        return self._user(name)

    def __iter__(self) -> Iterator[str]:
        self._refresh()
        return iter({**self._issued, **self.fixed})

    def __len__(self) -> int:
        return len(list(iter(self)))


def _tcp_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


class KubeServer:
    """The kube app's uvicorn server on its own TLS socket, run beside the controller's."""

    def __init__(
        self, app: KubeApp, config: uvicorn.Config, sock: socket.socket, commits: GroupCommit
    ) -> None:
        self.app = app
        self.pace = Pace(asyncio.get_running_loop())
        """The pace of the controllers behind this API (``phalanx.kube.pace``)."""
        app.on_request = self.pace.request
        self.server = uvicorn.Server(config)
        self.sock = sock
        self.port: int = sock.getsockname()[1]
        self.commits = commits

    async def run(self) -> None:
        committing = asyncio.create_task(self.commits.run())
        try:
            # uvicorn's serve() would take over the process's signal handlers from the main
            # server's; this one stops when the controller tells it to (should_exit).
            await self.server._serve(sockets=[self.sock])
        finally:
            self.commits.stop()
            await committing

    def stop(self) -> None:
        self.server.should_exit = True


def kube_server(
    state: StateDir,
    *,
    db_url: str,
    host: str,
    port: int,
    tokens: Mapping[str, str],
    admins: Callable[[str], bool],
    is_open: Callable[[], bool],
    advertise: str | None = None,
) -> KubeServer:
    """Bind the kube port (``port``; 0: any free one, written to ``kube.port``), make or
    reuse the certificates, open the object store in the controller's database."""
    hosts = [host] if host not in ("0.0.0.0", "::") else []
    if advertise:
        from urllib.parse import urlsplit

        name = urlsplit(advertise).hostname
        if name:
            hosts.append(name)
    certs = ensure_certificates(state.root, hosts)
    store = ObjectStore(open_objects(db_url))
    commits = GroupCommit(store)
    app = create_app(
        store,
        KubeTokens(tokens, state.root / "kube-tokens", admins),
        is_open=is_open,
        durable=commits.until,
    )
    sock = _tcp_socket(host, port)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        # Clients talk to this port directly (no proxy's X-Forwarded-* to trust); and
        # kube-apiserver names no server. Each of these is a step for every request.
        proxy_headers=False,
        server_header=False,
        timeout_keep_alive=30,
        timeout_graceful_shutdown=2,
        ssl_certfile=str(certs.cert),
        ssl_keyfile=str(certs.key),
    )
    server = KubeServer(app, config, sock, commits)
    (state.root / "kube.port").write_text(f"{server.port}\n")
    return server
