"""The door of a controller that does not lead: every call answered 503 with where the
leader is -- until it takes over. ``/v1/ping`` says which role it has (``starting``,
``standby``, ``deposed``) with the 503, so a monitor tells a live standby from a dead one.

An ASGI wrapper around the API (``create_app``), so that one server runs from the start and
a takeover only opens the door: agents and clients retrying meanwhile are answered at once.
"""

from __future__ import annotations

import math
import time
from typing import Any

from fastapi.responses import JSONResponse

from phalanx.api.routes.errors import not_leader

__all__ = ["Gate"]


class Gate:
    def __init__(self, app: Any, controller_id: str) -> None:
        self.app = app
        self.controller_id = controller_id
        self.leading = False
        self.role = "starting"
        """``starting`` (recovering), ``standby``, ``leader``, or ``deposed`` (stepping
        down)."""
        self.leader: str | None = None
        """The leader's URL, as last read from the store."""
        self.lease_until = math.inf
        """``time.monotonic()`` until which the lead is confirmed (``phalanx.server.roles``
        moves it on at each check); past it, a leader answers as a standby does."""

    def lead(self) -> None:
        self.leading = True
        self.role = "leader"

    def close(self, role: str = "deposed") -> None:
        """Answer 503 from now on (a deposed leader steps down)."""
        self.leading = False
        self.role = role

    def open(self) -> bool:
        """Whether calls go through: this controller leads, its lead confirmed lately."""
        return self.leading and time.monotonic() <= self.lease_until

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self.open():
            await self.app(scope, receive, send)
            return
        if scope["path"] == "/v1/ping":
            answer = JSONResponse(
                {
                    "ok": False,
                    "controller_id": self.controller_id,
                    "role": self.role if not self.leading else "unconfirmed",
                    "leader": self.leader,
                },
                status_code=503,
            )
        else:
            where = f"; the leader is at {self.leader}" if self.leader else ""
            role = self.role if not self.leading else "its lead is not confirmed"
            answer = not_leader(f"this controller does not lead ({role}){where}", self.leader)
        await answer(scope, receive, send)
