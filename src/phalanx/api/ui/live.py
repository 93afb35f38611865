"""``/ui/live/...``: server-sent event streams (``text/event-stream``) of the dashboard's live
panels, swapped in by htmx's SSE extension.

A stream renders its panel every ``EVERY_S`` (longer where a render is slow: at most
``BUSY_SHARE`` of the event loop's time goes to one panel) and sends it only when it
changed (a comment line keeps an idle stream open through proxies); renders are shared
between
the streams asking the same panel as the same role (a panel depends on whether its viewer
is an administrator, and on nothing else of the viewer), so ten open browsers cost one or
two renders. A pushed panel carries no CSRF token in its forms: they are posted by htmx,
which sends the page's token as a header. A stream ends when its browser goes (Starlette
notices the disconnect and cancels the generator).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from phalanx.api.routes.deps import Svc
from phalanx.api.ui.render import (
    accounts_fragment,
    efficiency_fragment,
    job_fragment,
    overview_fragment,
    queue_fragment,
    serving_fragment,
)
from phalanx.api.ui.series import Series
from phalanx.api.ui.session import Viewer, ViewerDep
from phalanx.api.ui.views import QueueFilter

__all__ = ["EVERY_S", "event", "router"]

router = APIRouter(include_in_schema=False)

EVERY_S = 1.0
KEEPALIVE_S = 15.0
BUSY_SHARE = 0.1
"""A panel that takes ``r`` s to render is rendered again after ``r / BUSY_SHARE`` s at
the soonest: the controller's loop must keep answering agents and clients."""


def event(name: str, html: str) -> str:
    """One SSE message: ``event: name`` and the HTML as ``data:`` lines."""
    lines = "".join(f"data: {line}\n" for line in html.splitlines() or [""])
    return f"event: {name}\n{lines}\n"


def _shared(request: Request, key: str, render: Callable[[], str]) -> tuple[str, float]:
    """The panel, rendered now or by another stream lately; and how long to wait before
    asking again."""
    cache: dict[str, tuple[float, float, str]] = request.app.state.ui_cache
    now = time.monotonic()
    hit = cache.get(key)
    if hit is not None and now - hit[0] < hit[1]:
        return hit[2], hit[1] - (now - hit[0])
    html = render()
    wait = max(EVERY_S, (time.monotonic() - now) / BUSY_SHARE)
    if len(cache) > 256:  # keys carry filters: forget old ones rather than grow
        cache.clear()
    cache[key] = (now, wait, html)
    return html, wait


async def _stream(
    request: Request, name: str, key: str, render: Callable[[], str]
) -> AsyncIterator[str]:
    last = None
    quiet = 0.0
    yield "retry: 2000\n\n"
    while not await request.is_disconnected():
        html, wait = _shared(request, key, render)
        if html != last:
            yield event(name, html)
            last, quiet = html, 0.0
        elif quiet >= KEEPALIVE_S:
            yield ": keep-alive\n\n"
            quiet = 0.0
        await asyncio.sleep(wait)
        quiet += wait


def _role(who: Viewer) -> tuple[str, Viewer]:
    """The cache key part and the viewer a shared render uses: the role, no session."""
    return ("admin" if who.caller.admin else "user"), Viewer(who.caller, None)


def _respond(stream: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(
        stream,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.get("/ui/live/overview")
async def overview(request: Request, who: ViewerDep, service: Svc) -> StreamingResponse:
    role, shared = _role(who)
    return _respond(
        _stream(request, "overview", f"overview:{role}", lambda: overview_fragment(service, shared))
    )


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
    role, shared = _role(who)
    key = f"queue:{role}:{wanted.query()}"
    return _respond(_stream(request, "queue", key, lambda: queue_fragment(service, shared, wanted)))


@router.get("/ui/live/efficiency")
async def efficiency(request: Request, who: ViewerDep, service: Svc) -> StreamingResponse:
    series: Series = request.app.state.ui_series
    series.start()
    return _respond(
        _stream(request, "efficiency", "efficiency", lambda: efficiency_fragment(service, series))
    )


@router.get("/ui/live/accounts")
async def accounts(request: Request, who: ViewerDep, service: Svc) -> StreamingResponse:
    series: Series = request.app.state.ui_series
    series.start()
    return _respond(
        _stream(request, "accounts", "accounts", lambda: accounts_fragment(service, series))
    )


@router.get("/ui/live/serving")
async def serving(request: Request, who: ViewerDep) -> StreamingResponse:
    series: Series = request.app.state.ui_series
    series.start()
    source = request.app.state.ui_serving
    return _respond(
        _stream(request, "serving", "serving", lambda: serving_fragment(source, series))
    )


@router.get("/ui/live/jobs/{job_id}")
async def job(job_id: int, request: Request, who: ViewerDep, service: Svc) -> StreamingResponse:
    service.job(job_id)  # NotFound: 404 before the stream starts
    role, shared = _role(who)
    return _respond(
        _stream(
            request,
            "job",
            f"job:{job_id}:{role}",
            lambda: job_fragment(service, shared, service.job(job_id)),
        )
    )
