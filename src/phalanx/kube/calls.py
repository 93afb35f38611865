"""One HTTP request to the Kubernetes API, read straight from its ASGI scope: what the app
needs of it and no more (Starlette's ``Request`` builds header, URL and state objects for
every request; a Job's create is about a millisecond in all, and they were a tenth of it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

__all__ = ["Call", "ClientGone"]


class ClientGone(Exception):
    """The client disconnected before its request's body had arrived: nothing to answer."""


class Call:
    """``method``; ``path`` (percent-decoded, as the scope has it); ``headers`` (names in
    lower case, the first of repeated ones, as Starlette's ``Headers.get``); ``query`` (the
    last value of a repeated name, as ``dict`` of Starlette's ``QueryParams``); ``body()``;
    ``shows_store``: set when the answer shows the object store (it then waits until what
    it shows is durable)."""

    __slots__ = ("_body", "_receive", "headers", "method", "path", "query_string", "shows_store")

    def __init__(self, scope: Any, receive: Callable[[], Awaitable[Any]]) -> None:
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.query_string: bytes = scope.get("query_string", b"")
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
        self.headers = headers
        self.shows_store = False
        self._receive = receive
        self._body: bytes | None = None

    @property
    def query(self) -> dict[str, str]:
        if not self.query_string:
            return {}
        return dict(parse_qsl(self.query_string.decode("latin-1"), keep_blank_values=True))

    async def body(self) -> bytes:
        """The whole body (``ClientGone`` if the client left first)."""
        if self._body is None:
            chunks = []
            while True:
                message = await self._receive()
                if message["type"] == "http.disconnect":
                    raise ClientGone()
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    break
            self._body = b"".join(chunks)
        return self._body
