"""Watch: a stream of ``{"type": ..., "object": ...}`` JSON lines from a resourceVersion (the
store's event log replays what came after it; one that has left the window is 410 Expired),
or from now with every current object as ADDED; BOOKMARK events when asked."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from phalanx.kube.errors import BadRequest
from phalanx.kube.resources import Request, Resources
from phalanx.kube.store import Event
from phalanx.kube.tables import table
from phalanx.kube.wire import dumps

__all__ = ["BOOKMARK_EVERY_S", "open_watch"]

BOOKMARK_EVERY_S = 5.0
"""How often an idle watch that allows bookmarks gets one (kube-apiserver: about a minute; a
shorter period costs little here and lets tests see them)."""
_DEFAULT_TIMEOUT_S = 1800.0


def open_watch(
    api: Resources,
    req: Request,
    durable: Callable[[int], Awaitable[None]] | None = None,
) -> AsyncIterator[bytes]:
    """The watch of ``req``, its replay computed now (so that a bad or expired
    resourceVersion is an error answer, not a broken stream). ``durable(rv)``: awaited
    before an event is sent, so that a watcher sees only what is on disk."""
    kind = req.kind
    match = api.selector(req)
    query = req.query
    bookmarks = query.get("allowWatchBookmarks", "").lower() in ("1", "true")
    initial = query.get("sendInitialEvents", "").lower() in ("1", "true")
    try:
        timeout = float(query.get("timeoutSeconds") or _DEFAULT_TIMEOUT_S)
    except ValueError:
        raise BadRequest(f"invalid timeoutSeconds: {query.get('timeoutSeconds')!r}") from None
    rv_text = query.get("resourceVersion", "")
    if rv_text and not rv_text.isdecimal():
        raise BadRequest(f"invalid resource version: {rv_text!r}")

    def wanted(obj: dict[str, Any]) -> bool:
        if obj.get("kind") != kind.kind:
            return False
        if str(obj.get("apiVersion", "")).rpartition("/")[0] != kind.group:
            return False
        if req.namespace is not None and obj["metadata"].get("namespace") != req.namespace:
            return False
        if req.name is not None and obj["metadata"].get("name") != req.name:
            return False
        return match is None or match(obj)

    queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()

    def on_event(verb: str, obj: dict[str, Any]) -> None:
        if wanted(obj):
            queue.put_nowait((verb, obj))

    replay: list[tuple[str, dict[str, Any]]]
    store = api.store
    if rv_text in ("", "0") or initial:
        replay = [
            ("ADDED", o) for o in store.list(kind.resource, req.namespace, copy=False) if wanted(o)
        ]
    else:
        events: list[Event] = store.events_since(int(rv_text))
        replay = [(verb, obj) for _, verb, obj in events if wanted(obj)]
    start_rv = store.resource_version
    store.subscribe(on_event)
    return _stream(
        api, req, replay, queue, on_event, timeout, bookmarks, initial, start_rv, durable
    )


def _frame(api: Resources, req: Request, verb: str, obj: dict[str, Any]) -> bytes:
    if verb != "BOOKMARK":
        obj = req.as_served(obj)
        if not req.table:  # the object's JSON as its create's answer and lists have it
            return b'{"type":"%s","object":%s}\n' % (verb.encode(), api.store.json_of(obj))
    if req.table and verb != "BOOKMARK":
        obj = table(
            req.kind,
            [obj],
            api.clock(),
            include=req.query.get("includeObject", "Metadata"),
            resource_version=obj["metadata"].get("resourceVersion", ""),
        )
    return dumps({"type": verb, "object": obj}) + b"\n"


def _bookmark(req: Request, rv: int, *, initial_end: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"kind": req.kind.kind, "apiVersion": req.api_version, "metadata": meta}


async def _stream(
    api: Resources,
    req: Request,
    replay: list[tuple[str, dict[str, Any]]],
    queue: asyncio.Queue[tuple[str, dict[str, Any]]],
    on_event: Callable[[str, dict[str, Any]], None],
    timeout: float,
    bookmarks: bool,
    initial: bool,
    start_rv: int,
    durable: Callable[[int], Awaitable[None]] | None,
) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last_rv = start_rv
    try:
        if durable is not None:
            await durable(start_rv)
        for verb, obj in replay:
            yield _frame(api, req, verb, obj)
        if initial and bookmarks:
            yield _frame(api, req, "BOOKMARK", _bookmark(req, start_rv, initial_end=True))
        while True:
            left = deadline - loop.time()
            if left <= 0:
                return
            wait = min(left, BOOKMARK_EVERY_S) if bookmarks else left
            try:
                verb, obj = await asyncio.wait_for(queue.get(), wait)
            except TimeoutError:
                if bookmarks and loop.time() < deadline:
                    last_rv = api.store.resource_version
                    yield _frame(api, req, "BOOKMARK", _bookmark(req, last_rv))
                continue
            if durable is not None:
                await durable(int(obj["metadata"].get("resourceVersion") or 0))
            yield _frame(api, req, verb, obj)
    finally:
        with contextlib.suppress(Exception):
            api.store.unsubscribe(on_event)
