"""``/ui`` pages: what every signed-in user may read, and the sign-in itself."""

from __future__ import annotations

import asyncio
import os
from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from phalanx.api.routes.access import Access, Unauthorized
from phalanx.api.routes.deps import Svc
from phalanx.api.ui.outputs import output_paths, tail
from phalanx.api.ui.render import (
    ENV,
    accounts_fragment,
    efficiency_fragment,
    job_fragment,
    overview_fragment,
    page,
    queue_fragment,
    serving_fragment,
)
from phalanx.api.ui.series import Series
from phalanx.api.ui.session import COOKIE, Sessions, ViewerDep, check_csrf, viewer
from phalanx.api.ui.simreport import read_report
from phalanx.api.ui.views import QueueFilter
from phalanx.errors import InputError, NotAllowed

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

_HEADERS = {
    # No other site may frame the dashboard (clickjacking of its buttons), nor learn its
    # addresses (a session's page in a Referer).
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class _Html(HTMLResponse):
    def __init__(self, content: str, status_code: int = 200) -> None:
        super().__init__(content, status_code=status_code, headers=_HEADERS)


_MAX_FORM = 64 * 1024
MAX_REPORT = 32 * 1024 * 1024
"""The largest simulation report accepted (a JSON of every policy is a few hundred KB)."""


def _series(request: Request) -> Series:
    series: Series = request.app.state.ui_series
    series.start()  # sampling begins when someone first looks
    return series


def _safe_next(target: str | None) -> str:
    """Only a path of this dashboard: never another site (an open redirect)."""
    if target and target.startswith("/ui") and not target.startswith("//"):
        return target
    return "/ui"


def _signed_in(request: Request, token: str, target: str) -> Response:
    access: Access = request.app.state.access
    access.by_token(token)  # Unauthorized for an unknown token
    sessions: Sessions = request.app.state.ui_sessions
    session = sessions.open(token)
    answer = RedirectResponse(_safe_next(target), status_code=303)
    answer.set_cookie(
        COOKIE,
        session.id,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/ui",
        max_age=int(sessions.ttl_s),
    )
    return answer


def _login_form(error: str = "", target: str = "/ui", status: int = 200) -> HTMLResponse:
    html = ENV.get_template("login.html").render(error=error, next=_safe_next(target))
    return _Html(html, status_code=status)


@router.get("/ui/login", response_class=HTMLResponse)
async def login_form(next: str = "/ui") -> HTMLResponse:
    return _login_form(target=next)


@router.post("/ui/login")
async def login(request: Request) -> Response:
    body = await request.body()
    if len(body) > _MAX_FORM:
        return _login_form("the form is too large", status=413)
    form = parse_qs(body.decode("utf-8", errors="replace"))
    token = (form.get("token") or [""])[0].strip()
    target = (form.get("next") or ["/ui"])[0]
    try:
        return _signed_in(request, token, target)
    except Unauthorized:
        return _login_form("unknown token", target, status=401)


@router.post("/ui/logout")
async def logout(request: Request, who: ViewerDep) -> Response:
    form = parse_qs((await request.body())[:_MAX_FORM].decode("utf-8", errors="replace"))
    check_csrf(request, who, (form.get("csrf") or [""])[0])
    if who.session is not None:
        sessions: Sessions = request.app.state.ui_sessions
        sessions.close(who.session.id)
    answer = RedirectResponse("/ui/login", status_code=303)
    answer.delete_cookie(COOKIE, path="/ui")
    return answer


@router.get("/ui", response_class=HTMLResponse)
async def overview(request: Request, service: Svc, token: str | None = None) -> Response:
    """The cluster map. ``?token=...`` signs a browser in (then redirects here without it)."""
    if token is not None:
        try:
            return _signed_in(request, token, "/ui")
        except Unauthorized:
            return _login_form("unknown token", status=401)
    who = await viewer(request)
    _series(request)
    return _Html(page("overview", who, service, panel=overview_fragment(service, who)))


@router.get("/ui/queue", response_class=HTMLResponse)
async def queue(
    request: Request,
    who: ViewerDep,
    service: Svc,
    user: str = "",
    account: str = "",
    queue: str = "",
    partition: str = "",
) -> HTMLResponse:
    _series(request)
    wanted = QueueFilter(user, account, queue, partition)
    return _Html(
        page(
            "queue",
            who,
            service,
            wanted=wanted,
            panel=queue_fragment(service, who, wanted),
            partitions=sorted(service.cluster.partitions),
        )
    )


@router.get("/ui/accounts", response_class=HTMLResponse)
async def accounts(request: Request, who: ViewerDep, service: Svc) -> HTMLResponse:
    series = _series(request)
    return _Html(page("accounts", who, service, panel=accounts_fragment(service, series)))


@router.get("/ui/efficiency", response_class=HTMLResponse)
async def efficiency(request: Request, who: ViewerDep, service: Svc) -> HTMLResponse:
    series = _series(request)
    return _Html(page("efficiency", who, service, panel=efficiency_fragment(service, series)))


@router.get("/ui/serving", response_class=HTMLResponse)
async def serving(request: Request, who: ViewerDep, service: Svc) -> HTMLResponse:
    panel = serving_fragment(request.app.state.ui_serving, _series(request))
    return _Html(page("serving", who, service, panel=panel))


@router.get("/ui/jobs/{job_id}", response_class=HTMLResponse)
async def job(job_id: int, who: ViewerDep, service: Svc) -> HTMLResponse:
    found = service.job(job_id)  # NotFound: 404
    outputs: dict[str, tuple[str, str]] = {}
    caller = who.caller
    if caller.admin or caller.name == found.spec.user:
        cluster = service.cluster
        first = cluster.nodes[found.alloc.nodes[0]].name if found.alloc else ""
        for kind, path in output_paths(found, first).items():
            owner = None if caller.admin else found.spec.user
            outputs[kind] = (path, await asyncio.to_thread(tail, path, owner))
    return _Html(
        page(
            "job",
            who,
            service,
            job=found,
            panel=job_fragment(service, who, found),
            outputs=outputs,
        )
    )


@router.get("/ui/sim", response_class=HTMLResponse)
async def simulation(
    who: ViewerDep,
    service: Svc,
    path: Annotated[str | None, Query(max_length=4096)] = None,
) -> HTMLResponse:
    """The form; with ``path`` (administrators only: a file the controller reads), the
    report of that file."""
    report = error = None
    if path:
        if not who.caller.admin:
            raise NotAllowed("only an administrator may load a file on the controller's host")
        try:
            if not os.path.isabs(path):
                raise InputError("give an absolute path", field="path")
            text = await asyncio.to_thread(_read_limited, path)
            report = read_report(text, source=path)
        except InputError as exc:
            error = str(exc)
    status = 422 if error else 200
    return _Html(
        page("sim", who, service, report=report, error=error, path=path or ""),
        status_code=status,
    )


def _read_limited(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_REPORT + 1)
    except OSError as exc:
        raise InputError(f"cannot read it: {exc.strerror}", source=path) from None
    if len(data) > MAX_REPORT:
        raise InputError(f"larger than {MAX_REPORT} bytes", source=path)
    return data


@router.post("/ui/sim", response_class=HTMLResponse)
async def simulation_upload(request: Request, who: ViewerDep, service: Svc) -> HTMLResponse:
    """A report uploaded as the request's body (the page's script posts the chosen file):
    the report's fragment, or the error (422)."""
    check_csrf(request, who, None)
    body = await request.body()
    name = request.headers.get("x-file-name", "upload")[:200]
    try:
        if len(body) > MAX_REPORT:
            raise InputError(f"larger than {MAX_REPORT} bytes", source=name)
        report = read_report(body, source=name)
    except InputError as exc:
        return _Html(
            ENV.get_template("_sim.html").render(report=None, error=str(exc)), status_code=422
        )
    return _Html(ENV.get_template("_sim.html").render(report=report, error=None))


@router.get("/ui/fragments/accounts", response_class=HTMLResponse)
async def accounts_panel(request: Request, who: ViewerDep, service: Svc) -> HTMLResponse:
    """The accounts panel alone (the page refreshes it every few seconds)."""
    return _Html(accounts_fragment(service, _series(request)))
