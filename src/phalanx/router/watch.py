"""The router's view of the API: list, then watch, Services and EndpointSlices in every
namespace, as kube-proxy does. A watch that ends or fails is resumed from the last
resourceVersion seen; one the server no longer has (410 Expired, or an ``ERROR`` event) lists
again. Bookmarks are asked for, so a quiet resource keeps a recent resourceVersion.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Callable
from typing import Any

import aiohttp

__all__ = ["ENDPOINTSLICES", "SERVICES", "Expired", "Watcher"]

log = logging.getLogger("phalanx.router.watch")

SERVICES = "/api/v1/services"
ENDPOINTSLICES = "/apis/discovery.k8s.io/v1/endpointslices"
RETRY_S = 1.0
WATCH_S = 300
"""``timeoutSeconds`` of each watch (the server ends it; it is resumed)."""


class Expired(Exception):
    """The resourceVersion to resume from is gone: list again."""


class Watcher:
    """``run()`` keeps ``on_list(items)`` and ``on_event(type, object)`` fed for one
    collection until cancelled. ``synced`` is set after the first list."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        server: str | Callable[[], str],
        token: str,
        path: str,
        on_list: Callable[[list[dict[str, Any]]], None],
        on_event: Callable[[str, dict[str, Any]], None],
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.session = session
        self.server = server
        self.path = path
        self.headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self.on_list = on_list
        self.on_event = on_event
        self.ssl = ssl_context
        self.synced = asyncio.Event()
        self.resource_version = ""

    @property
    def url(self) -> str:
        """Asked again on each attempt: a restarted controller may serve on another port."""
        server = self.server() if callable(self.server) else self.server
        return server.rstrip("/") + self.path

    async def run(self) -> None:
        while True:
            try:
                if not self.resource_version:
                    await self._list()
                await self._watch()
            except Expired:
                self.resource_version = ""
            except (aiohttp.ClientError, TimeoutError, ValueError) as e:
                log.warning("watching %s: %s", self.url, e)
                await asyncio.sleep(RETRY_S)

    async def _list(self) -> None:
        async with self.session.get(
            self.url, headers=self.headers, ssl=self.ssl if self.ssl is not None else True
        ) as r:
            if r.status != 200:
                raise aiohttp.ClientResponseError(
                    r.request_info, (), status=r.status, message=await r.text()
                )
            body = await r.json()
        self.resource_version = str((body.get("metadata") or {}).get("resourceVersion", ""))
        self.on_list(list(body.get("items") or []))
        self.synced.set()

    async def _watch(self) -> None:
        params = {
            "watch": "true",
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(WATCH_S),
        }
        async with self.session.get(
            self.url,
            headers=self.headers,
            params=params,
            ssl=self.ssl if self.ssl is not None else True,
            timeout=aiohttp.ClientTimeout(total=None, sock_read=WATCH_S + 30),
        ) as r:
            if r.status == 410:
                raise Expired
            if r.status != 200:
                raise aiohttp.ClientResponseError(
                    r.request_info, (), status=r.status, message=await r.text()
                )
            buffer = b""
            async for chunk in r.content.iter_any():
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        self._line(json.loads(line))

    def _line(self, event: dict[str, Any]) -> None:
        kind = str(event.get("type"))
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Expired
            raise ValueError(f"watch error: {obj.get('message')}")
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv:
            self.resource_version = str(rv)
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self.on_event(kind, obj)
