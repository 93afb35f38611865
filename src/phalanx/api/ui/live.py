"""``/ui/live/...``: server-sent event streams (``text/event-stream``) of the dashboard's live
panels, swapped in by htmx's SSE extension.

A stream renders its panel every ``EVERY_S`` and sends it only when it changed (a comment
line keeps an idle stream open through proxies); renders are shared for a second between
the streams asking the same panel, so ten open browsers cost one render. A stream ends when
its browser goes (Starlette notices the disconnect and cancels the generator).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from phalanx.api.routes.deps import Svc
from phalanx.api.ui.render import (
    efficiency_fragment,
    job_fragment,
    overview_fragment,
    queue_fragment,
)
from phalanx.api.ui.series import Series
from phalanx.api.ui.session import ViewerDep
from phalanx.api.ui.views import QueueFilter

__all__ = ["EVERY_S", "event", "router"]

router = APIRouter(include_in_schema=False)

EVERY_S = 1.0
KEEPALIVE_S = 15.0


def event(name: str, html: str) -> str:
    """One SSE message: ``event: name`` and the HTML as ``data:`` lines."""
    lines = "".join(f"data: {line}\n" for line in html.splitlines() or [""])
    return f"event: {name}\n{lines}\n"


def _shared(request: Request, key: str, render: Callable[[], str]) -> str:
    cache: dict[str, tuple[float, str]] = request.app.state.ui_cache
    now = time.monotonic()
    hit = cache.get(key)
    if hit is not None and now - hit[0] < EVERY_S:
        return hit[1]
    html = render()
    if len(cache) > 256:  # keys carry filters: forget old ones rather than grow
        cache.clear()
    cache[key] = (now, html)
    return html


async def _stream(
    request: Request, name: str, key: str, render: Callable[[], str]
) -> AsyncIterator[str]:
    last = None
    quiet = 0.0
    yield "retry: 2000\n\n"
    while not await request.is_disconnected():
        html = _shared(request, key, render)
        if html != last:
            yield event(name, html)
            last, quiet = html, 0.0
        elif quiet >= KEEPALIVE_S:
            yield ": keep-alive\n\n"
            quiet = 0.0
        await asyncio.sleep(EVERY_S)
        quiet += EVERY_S


def _respond(stream: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(
        stream,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.get("/ui/live/overview")
async def overview(request: Request, who: ViewerDep, service: Svc) -> StreamingResponse:
    # The key names the viewer's role: administrators' fragments carry buttons.
    key = f"overview:{who.caller.admin}:{who.csrf}"
    return _respond(_stream(request, "overview", key, lambda: overview_fragment(service, who)))


@router.get("/ui/live/queue")
async def queue(
    request: Request,
    who: ViewerDep,
    service: Svc,
    user: str = "",
    account: str = "",
    queue: str = "",
    partition: str = "",
) -> StreamingResponse:
    wanted = QueueFilter(user, account, queue, partition)
    key = f"queue:{who.caller.admin}:{who.csrf}:{wanted.query()}"
    return _respond(_stream(request, "queue", key, lambda: queue_fragment(service, who, wanted)))


@router.get("/ui/live/efficiency")
async def efficiency(request: Request, who: ViewerDep, service: Svc) -> StreamingResponse:
    series: Series = request.app.state.ui_series
    series.start()
    return _respond(
        _stream(request, "efficiency", "efficiency", lambda: efficiency_fragment(service, series))
    )


@router.get("/ui/live/jobs/{job_id}")
async def job(job_id: int, request: Request, who: ViewerDep, service: Svc) -> StreamingResponse:
    service.job(job_id)  # NotFound: 404 before the stream starts
    key = f"job:{job_id}:{who.caller.admin}:{who.csrf}"
    return _respond(
        _stream(request, "job", key, lambda: job_fragment(service, who, service.job(job_id)))
    )
