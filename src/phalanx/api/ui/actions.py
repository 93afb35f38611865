"""What administrators do from the dashboard: cancel, hold or release a job; drain or resume
a node. Users see no buttons, and a request from one is refused here (403) whatever sent it;
a cookie-borne request must also pass ``check_csrf``.

Each answers htmx with a line for the page's message area, and a plain form post with a
redirect back to the page it came from.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import escape

from phalanx.api.routes.deps import Svc
from phalanx.api.ui.session import Viewer, ViewerDep, check_csrf
from phalanx.errors import InputError, NotAllowed

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

_MAX_FORM = 16 * 1024


async def _form(request: Request, who: Viewer) -> dict[str, str]:
    """The form's fields, once the caller is known to be an administrator and the request
    to come from this dashboard."""
    if not who.caller.admin:
        raise NotAllowed(f"{who.caller.name} is not an administrator")
    body = await request.body()
    if len(body) > _MAX_FORM:
        raise InputError("the form is too large")
    form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", errors="replace")).items()}
    check_csrf(request, who, form.get("csrf"))
    return form


def _done(request: Request, message: str, back: str) -> Response:
    if "hx-request" in request.headers:
        return HTMLResponse(f'<span class="ok">{escape(message)}</span>')
    return RedirectResponse(back, status_code=303)


@router.post("/ui/jobs/{job_id}/cancel")
async def cancel(job_id: int, request: Request, who: ViewerDep, service: Svc) -> Response:
    await _form(request, who)
    done = service.cancel(job_id, who.caller)
    return _done(
        request, f"cancelled {', '.join(map(str, done)) or 'nothing'}", f"/ui/jobs/{job_id}"
    )


@router.post("/ui/jobs/{job_id}/hold")
async def hold(job_id: int, request: Request, who: ViewerDep, service: Svc) -> Response:
    await _form(request, who)
    done = service.update(job_id, who.caller, hold=True)
    return _done(request, f"held {', '.join(map(str, done)) or 'nothing'}", f"/ui/jobs/{job_id}")


@router.post("/ui/jobs/{job_id}/release")
async def release(job_id: int, request: Request, who: ViewerDep, service: Svc) -> Response:
    await _form(request, who)
    done = service.update(job_id, who.caller, hold=False)
    return _done(
        request, f"released {', '.join(map(str, done)) or 'nothing'}", f"/ui/jobs/{job_id}"
    )


@router.post("/ui/nodes/{name}/drain")
async def drain(name: str, request: Request, who: ViewerDep, service: Svc) -> Response:
    form = await _form(request, who)
    reason = form.get("reason", "").strip()
    if not reason:
        raise InputError("a drain needs a reason", field="reason")
    service.update_nodes([name], "drain", reason, who.caller)
    return _done(request, f"{name} draining: {reason}", "/ui")


@router.post("/ui/nodes/{name}/resume")
async def resume(name: str, request: Request, who: ViewerDep, service: Svc) -> Response:
    await _form(request, who)
    service.update_nodes([name], "resume", "", who.caller)
    return _done(request, f"{name} resumed", "/ui")
