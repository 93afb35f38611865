"""The reverse proxy: one request in, forwarded to an endpoint of its Service port, the
response streamed back.

For each request: find the Service port by the address it came in on; count it in flight;
choose an endpoint (``Pool.choose``); forward over a pooled keep-alive connection (the
request's body is read first when it is small, so the request can be sent again; a large or
chunked one is streamed); stream the response back as it comes. An endpoint that refuses the
connection (or does not accept it within ``connect_timeout``) is marked down at once and the
request goes to another: nothing was sent, so any method may be retried. A connection that
breaks after the request was sent and before any response is retried only for idempotent
methods with a replayable body. With no usable endpoint the request is held (``Pool``'s
hold) until one is ready, until ``hold_timeout`` (then 503), or refused at once with 503
when the hold is full.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from phalanx.router.backends import Endpoint, HoldFull, Pool
from phalanx.router.metrics import ServiceStats
from phalanx.router.table import PortKey, RouteTable
from phalanx.router.upstream import Broken, ConnectFailed, Response, Upstream

__all__ = ["Proxy"]

log = logging.getLogger("phalanx.router")

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})
REPLAYABLE_BODY = 1 << 20
"""Bodies up to this size (with a Content-Length) are read before sending, so that a request
can go to another endpoint."""


WHOLE_RESPONSE = 64 << 10
"""Responses up to this size (with a Content-Length) are read whole and sent in one piece;
longer ones, and those without a length, are streamed as they come."""
_SKIP_WHOLE = HOP_BY_HOP | frozenset({"content-length"})


def _copy_headers(upstream: Response, response: web.StreamResponse, skip: frozenset[str]) -> None:
    for name, value in upstream.headers:
        if name.lower() not in skip:
            response.headers.add(name, value)


_SKIP_REQUEST = HOP_BY_HOP | frozenset({"content-length", "expect", "x-forwarded-for"})


def _forward_headers(request: web.BaseRequest) -> list[tuple[str, str]]:
    headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _SKIP_REQUEST]
    peer = request.remote or ""
    previous = request.headers.get("X-Forwarded-For")
    headers.append(("X-Forwarded-For", f"{previous}, {peer}" if previous else peer))
    return headers


def _text(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=message + "\n")


class Proxy:
    """The request handler (``handle``) of every Service listener."""

    def __init__(
        self,
        table: RouteTable,
        *,
        hold_timeout: float = 60.0,
        connect_timeout: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.table = table
        self.hold_timeout = hold_timeout
        self.clock = clock
        self.routes: dict[tuple[str, int], PortKey] = {}
        """(listening host, port) -> Service port; kept by the listeners."""
        self.upstream = Upstream(connect_timeout)

    async def close(self) -> None:
        self.upstream.close()

    def _route(self, request: web.BaseRequest) -> PortKey | None:
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        if not sockname:
            return None
        host, port = sockname[0], sockname[1]
        return self.routes.get((host, port)) or self.routes.get(("0.0.0.0", port))

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        key = self._route(request)
        pool = self.table.pools.get(key) if key is not None else None
        stats = self.table.stats.get(key[:2]) if key is not None else None
        if key is None or pool is None or stats is None:
            return _text(404, "no service is served at this address")
        start = self.clock()
        stats.arrived(start)
        code = 502
        try:
            response = await self._forward(request, key, pool, stats, start)
            code = response.status
            return response
        except asyncio.CancelledError:
            code = 499  # the client went away (nginx's name for it)
            raise
        finally:
            now = self.clock()
            stats.finished(now, code, now - start)

    async def _body(self, request: web.BaseRequest) -> Any:
        """bytes (replayable), a stream, or None."""
        length = request.content_length
        if length is not None and length <= REPLAYABLE_BODY:
            return await request.read() if length else None
        if request.body_exists:
            return request.content.iter_any()
        return None

    async def _forward(
        self,
        request: web.BaseRequest,
        key: PortKey,
        pool: Pool,
        stats: ServiceStats,
        start: float,
    ) -> web.StreamResponse:
        body = await self._body(request)
        headers = _forward_headers(request)
        replayable = request.method in IDEMPOTENT and (body is None or isinstance(body, bytes))
        tried: set[int] = set()
        deadline = start + self.hold_timeout
        while True:
            now = self.clock()
            endpoint = pool.choose(now, frozenset(tried))
            if endpoint is None:
                if now >= deadline:
                    return _text(503, f"no ready endpoint for service {key[0]}/{key[1]}")
                wait = deadline - now
                up = pool.next_up(now)
                if up is not None:
                    wait = min(wait, max(0.001, up - now))
                stats.held += 1
                try:
                    await pool.wait_change(wait)
                except HoldFull:
                    return _text(503, f"too many requests held for service {key[0]}/{key[1]}")
                finally:
                    stats.held -= 1
                tried.clear()
                continue
            outcome = await self._try(request, endpoint, pool, headers, body, replayable)
            if isinstance(outcome, web.StreamResponse):
                return outcome
            tried.add(id(endpoint))
            if not outcome:
                return _text(502, f"the endpoint of service {key[0]}/{key[1]} failed")

    async def _try(
        self,
        request: web.BaseRequest,
        endpoint: Endpoint,
        pool: Pool,
        headers: list[tuple[str, str]],
        body: Any,
        replayable: bool,
    ) -> web.StreamResponse | bool:
        """The response, or whether another endpoint may be tried (True) or not (False)."""
        host, port = endpoint.host, endpoint.port
        upstream: Response | None = None
        started = False
        try:
            upstream = await self.upstream.request(
                host,
                port,
                request.method,
                request.raw_path,
                headers,
                body,
                None if isinstance(body, bytes) else request.content_length,
                ref=endpoint.ref,
            )
            length = upstream.length
            if upstream.complete or (length is not None and length <= WHOLE_RESPONSE):
                # One write to the client, headers and body together: on loopback each
                # write costs the writer the reader's TCP processing too.
                whole = web.Response(
                    status=upstream.status, reason=upstream.reason, body=await upstream.read()
                )
                _copy_headers(upstream, whole, _SKIP_WHOLE)
                if request.method == "HEAD" and length is not None:
                    whole.headers["Content-Length"] = str(length)
                pool.release(endpoint, ok=True)
                return whole
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            _copy_headers(upstream, response, HOP_BY_HOP)
            started = True
            await response.prepare(request)
            async for chunk in upstream.chunks():
                await response.write(chunk)
            await response.write_eof()
            pool.release(endpoint, ok=True)
            return response
        except ConnectFailed:
            pool.release(endpoint, ok=False)
            pool.mark_down(endpoint, self.clock())
            log.info("endpoint %s:%d refused a connection: marked down", host, port)
            return True
        except Broken as e:
            pool.release(endpoint, ok=False)
            if started or e.started:
                raise  # the response was under way: the client's connection ends with it
            return replayable
        except BaseException:
            pool.release(endpoint, ok=False)
            raise
        finally:
            if upstream is not None:
                self.upstream.release(host, port, upstream, endpoint.ref)
