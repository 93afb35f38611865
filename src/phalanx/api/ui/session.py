"""Who looks at the dashboard: a bearer token (as the REST API), the Unix socket's peer, or a
browser's session cookie given once for a valid token.

A session is a random id kept here (not a signed value): closing the controller forgets every
session, and a token taken out of the token file ends its sessions at the next request. The
cookie is ``HttpOnly`` and ``SameSite=Strict``; a state-changing request over a cookie must
also carry the session's CSRF token and, where the browser sends one, a same-origin
``Origin`` (``check_csrf``).
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from phalanx.api.routes.access import Access, Unauthorized
from phalanx.domain.caller import Caller
from phalanx.errors import NotAllowed

__all__ = [
    "COOKIE",
    "NeedSignIn",
    "Session",
    "Sessions",
    "Viewer",
    "ViewerDep",
    "check_csrf",
    "viewer",
]

COOKIE = "phalanx_ui"
TTL_S = 12 * 3600.0
MAX_SESSIONS = 10_000
"""Beyond this, the oldest session is forgotten: only valid tokens open sessions, but a
script signing in in a loop must not grow the controller without bound."""


class NeedSignIn(Exception):
    """No valid credential: a page redirects to the sign-in form, anything else gets 401."""


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    token: str
    """The API token the browser signed in with (its user is looked up at each request)."""
    csrf: str
    expires: float
    """``time.monotonic()`` after which the session is gone."""


class Sessions:
    """Sessions by id, oldest first. Touched by the event loop's thread only."""

    def __init__(self, ttl_s: float = TTL_S, limit: int = MAX_SESSIONS) -> None:
        self.ttl_s = ttl_s
        self.limit = limit
        self._by_id: OrderedDict[str, Session] = OrderedDict()

    def open(self, token: str) -> Session:
        session = Session(
            secrets.token_urlsafe(32),
            token,
            secrets.token_urlsafe(24),
            time.monotonic() + self.ttl_s,
        )
        self._by_id[session.id] = session
        while len(self._by_id) > self.limit:
            self._by_id.popitem(last=False)
        return session

    def get(self, session_id: str) -> Session | None:
        session = self._by_id.get(session_id)
        if session is not None and session.expires < time.monotonic():
            del self._by_id[session_id]
            return None
        return session

    def close(self, session_id: str) -> None:
        self._by_id.pop(session_id, None)

    def __len__(self) -> int:
        return len(self._by_id)


@dataclass(frozen=True, slots=True)
class Viewer:
    """The caller, and the session (None for a bearer token or a socket peer, whose requests
    carry no ambient credential and so need no CSRF token)."""

    caller: Caller
    session: Session | None

    @property
    def csrf(self) -> str:
        return self.session.csrf if self.session is not None else ""


async def viewer(request: Request) -> Viewer:
    """The viewer of ``request``; ``NeedSignIn`` without a valid credential."""
    access: Access = request.app.state.access
    sessions: Sessions = request.app.state.ui_sessions
    if "phalanx.peer" in request.scope or request.headers.get("authorization"):
        try:
            who = access.caller(request)
        except Unauthorized:
            raise NeedSignIn() from None
        if who.node is not None:  # an agent's credential serves the agent protocol only
            raise NeedSignIn()
        return Viewer(who, None)
    session = sessions.get(request.cookies.get(COOKIE, ""))
    if session is None:
        raise NeedSignIn()
    try:
        return Viewer(access.by_token(session.token), session)
    except Unauthorized:
        sessions.close(session.id)
        raise NeedSignIn() from None


ViewerDep = Annotated[Viewer, Depends(viewer)]


def check_csrf(request: Request, who: Viewer, form_token: str | None) -> None:
    """``NotAllowed`` for a cookie-borne request that is not from this dashboard: its CSRF
    token (the ``X-CSRF-Token`` header or the form's ``csrf`` field) must be the session's,
    and its ``Origin``, when sent, this server's."""
    if who.session is None:
        return
    given = request.headers.get("x-csrf-token") or form_token or ""
    if not secrets.compare_digest(given, who.session.csrf):
        raise NotAllowed("the request did not come from this dashboard (CSRF token)")
    origin = request.headers.get("origin")
    if origin is not None:
        host = request.headers.get("host", "")
        if origin not in (f"http://{host}", f"https://{host}"):
            raise NotAllowed(f"the request did not come from this dashboard (Origin {origin})")
