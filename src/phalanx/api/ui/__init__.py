"""The web dashboard at ``/ui``: server-rendered pages (Jinja2) with htmx, live panels over
server-sent events, and administrators' actions, on the controller's HTTP port.

``pages`` (what users read), ``live`` (the event streams), ``actions`` (what administrators
do: cancel, hold, release, drain, resume), ``session`` (who is looking: a bearer token, or a
session cookie for a browser that signed in once with its token), ``views`` and ``render``
(what the pages show, read from the service port, and from the serving port
``phalanx.api.serving`` where the controller serves workloads), ``series`` (the recent past,
sampled), ``simreport`` (a ``phalanx simulate --json`` document compared), ``charts``
(inline SVG). Static assets (htmx and its SSE extension, vendored; the CSS) are package
data served under ``/ui/static``: no CDN at run time.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from phalanx.api.serving import ServingSource
from phalanx.api.ui import actions, live, pages
from phalanx.api.ui.series import Series
from phalanx.api.ui.session import NeedSignIn, Sessions

__all__ = ["attach_serving", "install"]

STATIC = Path(__file__).parent / "static"


async def _sign_in(request: Request, exc: NeedSignIn) -> Response:
    # A page opened in the browser goes to the form; htmx, streams and forms get 401.
    wants_page = (
        request.method == "GET"
        and "hx-request" not in request.headers
        and "text/event-stream" not in request.headers.get("accept", "")
    )
    if wants_page:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/ui/login?next={quote(target, safe='')}", status_code=303)
    return PlainTextResponse("sign in first: a valid API token is needed", status_code=401)


def install(app: FastAPI) -> None:
    """Serve the dashboard from ``app`` (its service and access in ``app.state``)."""
    app.state.ui_sessions = Sessions()
    app.state.ui_series = Series(app.state.service)
    app.state.ui_cache = {}
    app.state.ui_serving = None
    app.add_exception_handler(NeedSignIn, _sign_in)  # type: ignore[arg-type]
    for module in (pages, live, actions):
        app.include_router(module.router)
    app.mount("/ui/static", StaticFiles(directory=STATIC), name="ui-static")


def attach_serving(app: FastAPI, source: ServingSource) -> None:
    """Show ``source``'s workloads on the serving page (and sample them over time)."""
    app.state.ui_serving = source
    app.state.ui_series.serving = source
