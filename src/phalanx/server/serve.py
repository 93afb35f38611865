"""The controller process: serve the API on a Unix socket (peer credentials) and on
127.0.0.1 (token); lead (recover from the journal, run the control loop) or, while another
controller on the same PostgreSQL store leads, stand by (``phalanx.server.roles``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import uvicorn

from phalanx.api.convert import acct_record
from phalanx.api.gate import Gate
from phalanx.api.peer import peer_protocol
from phalanx.api.routes import Access, create_app
from phalanx.api.ui import attach_serving
from phalanx.domain.cluster import Cluster
from phalanx.errors import PhalanxError
from phalanx.live.controller import Controller
from phalanx.live.journal import JournalError
from phalanx.live.store import Store, open_journal, open_store, sqlite_url
from phalanx.policies.catalog import profile
from phalanx.server.roles import Roles
from phalanx.server.statedir import StateDir

if TYPE_CHECKING:  # imported at run time only by controllers that serve the Kubernetes API
    from phalanx.kube.store import ObjectStore
    from phalanx.server.kubeworkloads import Workloads

__all__ = ["ControllerOptions", "serve"]

log = logging.getLogger("phalanx.controller")


@dataclass
class ControllerOptions:
    state: StateDir
    cluster: Cluster
    policy: str = "phalanx"
    host: str = "127.0.0.1"
    port: int = 6817
    admins: frozenset[str] = frozenset()
    epilog_ms: int = 0
    dead_after_ms: int = 60_000
    tokens: dict[str, str] = field(default_factory=dict)
    advertise: str | None = None
    """This controller's URL as clients and agents reach it (told by a standby); default
    ``http://HOST:PORT``."""
    db: str | None = None
    """The state store's URL (``phalanx.live.store``); None: ``state.db`` in the state
    directory."""
    agent_tokens: dict[str, str] = field(default_factory=dict)
    """token -> node: agents on other hosts, each with its own node's credential."""
    hpa_sync_ms: int = 15_000
    """``--horizontal-pod-autoscaler-sync-period``."""
    kube_port: int | None = None
    """The Kubernetes API's TLS port (0: any free one, written to ``kube.port``); None: not
    served."""
    queue_objects: tuple[dict[str, Any], ...] = ()
    """The queue objects of ``--queues`` (or the cluster YAML's ``queues:``) as documents:
    created in the Kubernetes API's store where absent once this controller leads."""


class _Server(uvicorn.Server):
    """uvicorn's server, which also ends the agents' long polls when told to stop."""

    def __init__(self, config: uvicorn.Config, controller: Controller) -> None:
        super().__init__(config)
        self.controller = controller

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.controller.stop()
        super().handle_exit(sig, frame)


def _unix_socket(path: Path) -> socket.socket:
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISSOCK(path.lstat().st_mode):
            path.unlink()  # left by a controller that was killed
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    # Anyone may connect: who they are comes from the kernel (SO_PEERCRED), not the mode.
    os.chmod(path, 0o666)
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def _tcp_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


DB_WAIT_S = 60.0
"""How long a controller waits for its PostgreSQL store at start (a database restarting, or
started after it): then it gives up (exit status 2)."""


async def _open_store(url: str) -> Store:
    deadline = time.monotonic() + DB_WAIT_S
    while True:
        try:
            return open_store(url)
        except JournalError as exc:
            if url.startswith("sqlite") or time.monotonic() > deadline:
                raise
            log.warning("waiting for the state store: %s", exc)
            await asyncio.sleep(1.0)


async def serve(opts: ControllerOptions) -> None:
    state = opts.state
    state.make()
    token = state.read_or_make_token()
    owner = os.geteuid()
    import pwd

    tokens = {token: pwd.getpwuid(owner).pw_name, **opts.tokens}
    url = opts.db or sqlite_url(state.database)
    store = await _open_store(url)
    sockets = [_unix_socket(state.socket), _tcp_socket(opts.host, opts.port)]
    port = sockets[1].getsockname()[1]
    state.port.write_text(f"{port}\n")
    leadership = store.leadership(opts.advertise or f"http://{opts.host}:{port}")
    fence = store.fence
    controller = Controller(
        opts.cluster,
        profile(opts.policy),
        store.journal,
        epilog_ms=opts.epilog_ms,
        dead_after=opts.dead_after_ms,
        epochs=store.epochs,
        accounting=store.accounting,
        record=lambda job: json.dumps(acct_record(job, opts.cluster)),
        reopen=lambda: open_journal(url, fence.epoch if fence is not None else 0),
    )
    access = Access(
        tokens=tokens, admins=opts.admins, owner_uid=owner, agent_tokens=opts.agent_tokens
    )
    api = create_app(controller, access)
    gate = Gate(api, controller.id)
    config = uvicorn.Config(
        gate,
        http=peer_protocol(),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_keep_alive=30,
        # Agents' long polls would otherwise hold a shutdown for a heartbeat (10 s).
        timeout_graceful_shutdown=2,
    )
    server = _Server(config, controller)
    kube = None
    if opts.kube_port is not None:
        # Imported here: controllers without the Kubernetes API do not load it.
        from phalanx.server.kubeserve import kube_server

        kube = kube_server(
            state,
            db_url=url,
            host=opts.host,
            port=opts.kube_port,
            tokens=tokens,
            admins=lambda name: name in opts.admins or name == tokens[token],
            is_open=gate.open,
            advertise=opts.advertise,
        )
    state.pid.write_text(f"{os.getpid()}\n")
    roles = Roles(controller, store, leadership, gate, server)
    role_task = asyncio.create_task(roles.run())
    role_task.add_done_callback(lambda _: setattr(server, "should_exit", True))
    kube_task = asyncio.create_task(kube.run()) if kube is not None else None
    workloads = None
    if kube is not None:
        from phalanx.server.kubeworkloads import Workloads

        workloads = Workloads(
            kube.app.store,
            controller,
            state,
            tokens[token],
            hpa_sync_ms=opts.hpa_sync_ms,
            pace=kube.pace,
        )
        workloads.start()
        attach_serving(api, workloads.view)
        lead_task = asyncio.create_task(_when_leading(roles, kube.app.store, workloads, opts))
    try:
        await server.serve(sockets=sockets)
    finally:
        if workloads is not None:
            lead_task.cancel()
            await workloads.stop()
        if kube is not None and kube_task is not None:
            kube.stop()
            with contextlib.suppress(Exception):
                await kube_task
        controller.stop()
        await roles.stop(role_task)
        if roles.leading:
            controller.save_snapshot()  # the next start replays nothing
        leadership.close()
        store.close()
        for path in (state.pid, state.socket, state.root / "kube.port"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    if roles.start_again:
        roles.step_down()


async def _when_leading(
    roles: Roles, store: ObjectStore, workloads: Workloads, opts: ControllerOptions
) -> None:
    """Once this controller leads: its object store read again from the database (a
    standby's is as old as its start: the leader before it wrote there), then the queue
    objects feed the engine."""
    while not roles.leading:
        await asyncio.sleep(0.05)
    changed = store.reload()
    if changed:
        log.info("kube objects read again on taking the lead: %d changed", changed)
    workloads.lead(opts.queue_objects)


def run(opts: ControllerOptions) -> int:
    try:
        import uvloop

        uvloop.run(serve(opts))
    except PhalanxError as exc:
        log.error("%s", exc)
        return 2
    return 0
