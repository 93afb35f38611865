"""Who is on the other end of a Unix socket: the kernel's peer credentials (SO_PEERCRED).

uvicorn builds the ASGI scope itself, so the credentials are read when the connection is
made and added to every request's scope of that connection (``scope["phalanx.peer"]``).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["PeerCredentials", "peer_protocol"]

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]
_CRED = struct.Struct("3i")


class _WithPeer:
    """An ASGI app that tags each request with its connection's (pid, uid, gid)."""

    def __init__(self, app: ASGIApp, peer: tuple[int, int, int]) -> None:
        self.app = app
        self.peer = peer

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        scope["phalanx.peer"] = self.peer
        await self.app(scope, receive, send)


def _peer_of(transport: Any) -> tuple[int, int, int] | None:
    sock = transport.get_extra_info("socket")
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size)
    pid, uid, gid = _CRED.unpack(raw)
    return pid, uid, gid


def peer_protocol(base: type[Any] = H11Protocol) -> type[Any]:
    """A subclass of uvicorn's HTTP protocol ``base`` that reads SO_PEERCRED."""

    class PeerCredentials(base):  # type: ignore[misc]
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            peer = _peer_of(transport)
            if peer is not None:
                app: ASGIApp = getattr(self, "app")  # noqa: B009 (set by uvicorn)
                self.app = _WithPeer(app, peer)

    return PeerCredentials


PeerCredentials = peer_protocol()
