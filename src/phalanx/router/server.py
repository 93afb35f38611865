"""The router process: watchers feeding the route table, a listener per served address, and
the admin listener (``/metrics``, ``/services``, ``/healthz``).

Listeners follow the table: after each change (coalesced), sockets are opened for new
addresses and closed for gone ones. An address that cannot be bound (a port taken by another
program) is logged and tried again on the next change.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web

from phalanx.router.metrics import WINDOW_S, prometheus
from phalanx.router.proxy import Proxy
from phalanx.router.table import PortKey, RouteTable
from phalanx.router.watch import ENDPOINTSLICES, SERVICES, Watcher

__all__ = ["Router"]

log = logging.getLogger("phalanx.router")


class Router:
    """One router: ``start()`` (watch, listen, serve the admin port), ``stop()``."""

    def __init__(
        self,
        *,
        server: str | Callable[[], str],
        token: str,
        ssl_context: ssl.SSLContext | None,
        admin_host: str = "127.0.0.1",
        admin_port: int = 0,
        node_address: str = "0.0.0.0",
        hold_timeout: float = 60.0,
        max_held: int = 1000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.table = RouteTable(clock, node_address=node_address, max_held=max_held)
        self.proxy = Proxy(self.table, hold_timeout=hold_timeout, clock=clock)
        self.server, self.token, self.ssl = server, token, ssl_context
        self.admin_host, self.admin_port = admin_host, admin_port
        self.sites: dict[tuple[str, int], web.TCPSite] = {}
        self._dirty = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._runner: web.ServerRunner | None = None
        self._admin: web.AppRunner | None = None
        self._api: aiohttp.ClientSession | None = None
        self.watchers: list[Watcher] = []

    async def start(self) -> int:
        """Start everything; the admin port (bound) is returned once the first lists are in
        and the listeners for them are open."""
        self.table.changed = self._dirty.set
        self._runner = web.ServerRunner(
            web.Server(self.proxy.handle, access_log=None),
            handle_signals=False,
            shutdown_timeout=1.0,
        )
        await self._runner.setup()
        self._api = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        self.watchers = [
            Watcher(
                self._api,
                self.server,
                self.token,
                SERVICES,
                self.table.replace_services,
                self.table.service_event,
                self.ssl,
            ),
            Watcher(
                self._api,
                self.server,
                self.token,
                ENDPOINTSLICES,
                self.table.replace_slices,
                self.table.slice_event,
                self.ssl,
            ),
        ]
        self._tasks = [asyncio.create_task(w.run()) for w in self.watchers]
        await asyncio.gather(*(w.synced.wait() for w in self.watchers))
        await self._sync_listeners()
        self._tasks.append(asyncio.create_task(self._listen_loop()))
        return await self._start_admin()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for runner in (self._admin, self._runner):
            if runner is not None:
                await runner.cleanup()
        await self.proxy.close()
        if self._api is not None:
            await self._api.close()

    # -- listeners -------------------------------------------------------------------------

    async def _listen_loop(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            await self._sync_listeners()

    async def _sync_listeners(self) -> None:
        assert self._runner is not None
        wanted = self.table.listeners()
        self.proxy.routes = wanted
        for address in [a for a in self.sites if a not in wanted]:
            site = self.sites.pop(address)
            await site.stop()
            log.info("stopped listening on %s:%d", *address)
        for address, key in wanted.items():
            if address in self.sites:
                continue
            site = web.TCPSite(self._runner, address[0], address[1], reuse_address=True)
            try:
                await site.start()
            except OSError as e:
                why = str(e)
                if e.errno == errno.EACCES and address[1] < 1024:
                    why += " (ports under 1024 need root or CAP_NET_BIND_SERVICE)"
                log.warning(
                    "service %s/%s: cannot listen on %s:%d: %s", key[0], key[1], *address, why
                )
                continue
            self.sites[address] = site
            log.info("service %s/%s port %r on %s:%d", key[0], key[1], key[2], *address)

    def where(self, key: PortKey) -> list[tuple[str, int]]:
        """The addresses ``key`` is served on now."""
        return [a for a, k in self.proxy.routes.items() if k == key and a in self.sites]

    # -- admin -----------------------------------------------------------------------------

    async def _start_admin(self) -> int:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/services", self._services)
        app.router.add_get("/services/{namespace}/{name}", self._service)
        app.router.add_get("/healthz", self._ok)
        self._admin = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._admin.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.admin_host, self.admin_port))
        await web.SockSite(self._admin, sock).start()
        return int(sock.getsockname()[1])

    async def _ok(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _metrics(self, request: web.Request) -> web.Response:
        text = prometheus(self.table.stats.values(), self.clock())
        return web.Response(text=text, content_type="text/plain", charset="utf-8")

    def _window(self, request: web.Request) -> int:
        try:
            window = int(request.query.get("window", "10"))
        except ValueError as e:
            raise web.HTTPBadRequest(text="window: seconds, an integer\n") from e
        if not 1 <= window <= WINDOW_S:
            raise web.HTTPBadRequest(text=f"window: 1 to {WINDOW_S} seconds\n")
        return window

    def _snapshot(self, key: tuple[str, str], window: int) -> dict[str, Any]:
        now = self.clock()
        pools = [(pk[2], pool) for pk, pool in sorted(self.table.pools.items()) if pk[:2] == key]
        ready = sum(pool.ready_count(now) for _, pool in pools)
        body = self.table.stats[key].snapshot(now, window, ready)
        body["endpoints"] = [
            {"port_name": name, **e.snapshot(now)} for name, pool in pools for e in pool.endpoints
        ]
        return body

    async def _services(self, request: web.Request) -> web.Response:
        window = self._window(request)
        body = {
            "at": time.time(),
            "services": [self._snapshot(k, window) for k in sorted(self.table.stats)],
        }
        return web.Response(text=json.dumps(body), content_type="application/json")

    async def _service(self, request: web.Request) -> web.Response:
        key = (request.match_info["namespace"], request.match_info["name"])
        if key not in self.table.stats:
            raise web.HTTPNotFound(text=f"no service {key[0]}/{key[1]}\n")
        body = self._snapshot(key, self._window(request))
        return web.Response(text=json.dumps(body), content_type="application/json")
