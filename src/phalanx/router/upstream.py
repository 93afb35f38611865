"""The router's HTTP/1.1 client to endpoints: keep-alive connections kept per endpoint, the
request written in one piece (or its body streamed, chunked), the response parsed with
httptools and handed over as it comes.

Lean on purpose: a general client (aiohttp's) spent more than half of the router's CPU per
request on work a proxy does not need (cookies, redirects, tracing, URL objects).

Errors say whether the request may have reached the endpoint: ``ConnectFailed`` (refused, or
not accepted within the connect timeout: nothing was sent) and ``Broken`` (the connection
ended before the response was complete; ``started`` says whether any of the response came).
A connection goes back to its endpoint's idle list only when its response was read to the
end and both sides keep it alive.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterable
from typing import Any, cast

import httptools

__all__ = ["Broken", "ConnectFailed", "Response", "Upstream"]

READ_HIGH = 1 << 20
"""Bytes of a response buffered before reading from the endpoint pauses."""
IDLE_PER_ENDPOINT = 256


class ConnectFailed(Exception):
    """No connection: the request was not sent."""


class Broken(Exception):
    """The connection ended before the response was complete."""

    def __init__(self, message: str, started: bool) -> None:
        super().__init__(message)
        self.started = started


class _Connection(asyncio.Protocol):
    """One keep-alive connection and the response being read on it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.response: Response | None = None

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are asyncio.Transport in behaviour, not by inheritance
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None:
            self.close()  # bytes nobody asked for: this connection cannot be trusted
            return
        try:
            response.parser.feed_data(data)
        except httptools.HttpParserError as e:
            response.fail(Broken(f"bad response: {e}", response.head.done()))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.response is not None and not self.response.complete:
            self.response.fail(
                Broken("the endpoint closed the connection", self.response.head.done())
            )

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class Response:
    """The response to one request: ``status``, ``reason``, ``headers`` once ``head`` is
    done; the body through ``chunks()`` or ``read()``; ``length`` from Content-Length."""

    def __init__(self, conn: _Connection, head_only: bool) -> None:
        self.conn = conn
        self.head_only = head_only
        self.parser = httptools.HttpResponseParser(self)
        self.head: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.status = 0
        self.reason = ""
        self.headers: list[tuple[str, str]] = []
        self.length: int | None = None
        self.complete = False
        self.keep_alive = False
        self._body: deque[bytes] = deque()
        self._buffered = 0
        self._paused = False
        self._wake: asyncio.Future[None] | None = None
        self._error: Exception | None = None

    # -- httptools callbacks ---------------------------------------------------------------

    def on_status(self, status: bytes) -> None:
        self.reason += status.decode("latin-1")

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        if 100 <= self.status < 200:  # an interim response: the real one follows
            self.headers.clear()
            self.reason = ""
            return
        for name, value in self.headers:
            if name.lower() == "content-length" and value.isdecimal():
                self.length = int(value)
        self.keep_alive = bool(self.parser.should_keep_alive())
        if not self.head.done():
            self.head.set_result(None)
        if self.head_only or self.status in (204, 304):
            self._finish()

    def on_body(self, body: bytes) -> None:
        self._body.append(body)
        self._buffered += len(body)
        if self._buffered > READ_HIGH and self.conn.transport is not None and not self._paused:
            self._paused = True
            self.conn.transport.pause_reading()
        self._notify()

    def on_message_complete(self) -> None:
        if self.status >= 200:
            self._finish()

    # -- state -----------------------------------------------------------------------------

    def _finish(self) -> None:
        if self.complete:
            return
        self.complete = True
        if self.head_only:
            self.keep_alive = False  # the parser would wait for a body that never comes
        self._notify()

    def _notify(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def fail(self, error: Exception) -> None:
        self._error = error
        if not self.head.done():
            self.head.set_exception(error)
        self._notify()

    async def chunks(self) -> Any:
        """The body, piece by piece as it arrives."""
        while True:
            if self._body:
                piece = self._body.popleft()
                self._buffered -= len(piece)
                if self._paused and self._buffered < READ_HIGH // 2:
                    self._paused = False
                    if self.conn.transport is not None:
                        self.conn.transport.resume_reading()
                yield piece
                continue
            if self.complete:
                return
            if self._error is not None:
                raise self._error
            self._wake = asyncio.get_running_loop().create_future()
            await self._wake
            self._wake = None

    async def read(self) -> bytes:
        return b"".join([piece async for piece in self.chunks()])


class Upstream:
    """Connections to endpoints, kept alive between requests, pooled per endpoint: its
    address, port and ``ref`` (the pod). Pods on the host's network may share one
    address:port (``SO_REUSEPORT``), the kernel handing each new connection to one of them;
    a pool per address:port would keep every request on the connections opened before a
    scale-out, all to the old pods, and new pods would get nothing."""

    def __init__(self, connect_timeout: float = 2.0) -> None:
        self.connect_timeout = connect_timeout
        self.idle: dict[tuple[str, int, str], list[_Connection]] = {}

    async def _connection(self, host: str, port: int, ref: str) -> _Connection:
        idle = self.idle.get((host, port, ref))
        while idle:
            conn = idle.pop()
            if not conn.closed and conn.transport is not None and not conn.transport.is_closing():
                return conn
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(_Connection, host, port), self.connect_timeout
            )
        except (OSError, TimeoutError) as e:
            raise ConnectFailed(f"{host}:{port}: {e or 'connect timed out'}") from e
        return conn

    async def request(
        self,
        host: str,
        port: int,
        method: str,
        target: str,
        headers: list[tuple[str, str]],
        body: bytes | AsyncIterable[bytes] | None,
        length: int | None = None,
        ref: str = "",
    ) -> Response:
        """Send the request; the response once its head (status, headers) is in. A streamed
        ``body`` goes as it is when its ``length`` is known, else chunked. ``ref``: which
        endpoint at ``host:port`` (class docstring)."""
        conn = await self._connection(host, port, ref)
        response = Response(conn, head_only=method == "HEAD")
        conn.response = response
        lines = [f"{method} {target} HTTP/1.1"]
        lines += [f"{name}: {value}" for name, value in headers]
        chunked = body is not None and not isinstance(body, bytes) and length is None
        if chunked:
            lines.append("Transfer-Encoding: chunked")
        elif length is not None:
            lines.append(f"Content-Length: {length}")
        elif isinstance(body, bytes) and body:
            lines.append(f"Content-Length: {len(body)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        assert conn.transport is not None
        if body is not None and not isinstance(body, bytes):
            conn.transport.write(head)
            async for piece in body:
                conn.transport.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            if chunked:
                conn.transport.write(b"0\r\n\r\n")
        else:
            conn.transport.write(head + body if body else head)
        await response.head
        return response

    def release(self, host: str, port: int, response: Response, ref: str = "") -> None:
        """Done with ``response``: its connection is kept if it may be reused, else closed."""
        conn = response.conn
        conn.response = None
        if response.complete and response.keep_alive and not conn.closed:
            key = (host, port, ref)
            if key not in self.idle:
                self._sweep()
            idle = self.idle.setdefault(key, [])
            if len(idle) < IDLE_PER_ENDPOINT:
                idle.append(conn)
                return
        conn.close()

    def _sweep(self) -> None:
        """Forget the pools whose connections have all closed: pods come and go, each with a
        pool of its own, and a gone pod's connections are closed by its end."""
        for key, idle in list(self.idle.items()):
            if all(conn.closed for conn in idle):
                del self.idle[key]

    def close(self) -> None:
        for idle in self.idle.values():
            for conn in idle:
                with contextlib.suppress(Exception):
                    conn.close()
        self.idle.clear()
