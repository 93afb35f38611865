"""The agent's way to the controller that leads, when it is given several (a leader and its
standbys: ``--controller URL1,URL2``).

An httpx transport: a request that cannot connect goes to the next controller, and one a
standby answers 503 with ``leader`` goes there. Both are safe to send again -- nothing
reached a controller that acted on it. The controller that answered is kept for the next
calls. A call that reached the leader and was lost on the way back (a kill -9) is the
agent's loops' to retry, as against a single controller.
"""

from __future__ import annotations

import json

import httpx

__all__ = ["FailoverTransport"]


class FailoverTransport(httpx.AsyncBaseTransport):
    def __init__(self, urls: list[str], inner: httpx.AsyncBaseTransport | None = None) -> None:
        if not urls:
            raise ValueError("no controller URL")
        self.urls = [u.rstrip("/") for u in urls]
        self.current = self.urls[0]
        """The controller that answered last."""
        self._inner = inner if inner is not None else httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        tried: list[str] = []
        order = [self.current, *[u for u in self.urls if u != self.current]]
        last: httpx.Response | None = None
        error: httpx.ConnectError | None = None
        while order:
            url = order.pop(0)
            if url in tried:
                continue
            tried.append(url)
            request.url = _rebase(request.url, url)
            try:
                response = await self._inner.handle_async_request(request)
            except httpx.ConnectError as exc:
                error = exc
                continue
            if response.status_code != 503:
                self.current = url
                return response
            await response.aread()
            hint = _leader(response.content)
            if hint is not None and hint not in tried:
                order.insert(0, hint)
            last = response
        if last is not None:
            return last  # every controller stands by: the caller retries later
        assert error is not None
        raise error

    async def aclose(self) -> None:
        await self._inner.aclose()


def _rebase(url: httpx.URL, base: str) -> httpx.URL:
    target = httpx.URL(base)
    return url.copy_with(scheme=target.scheme, host=target.host, port=target.port)


def _leader(content: bytes) -> str | None:
    try:
        answer = json.loads(content)
    except ValueError:
        return None
    hint = answer.get("leader") if isinstance(answer, dict) else None
    return hint.rstrip("/") if isinstance(hint, str) and hint else None
