"""What operators and monitors call, without a token: ``/v1/ping`` (alive, and which
controller answers) and ``/metrics`` (Prometheus text)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from phalanx.api.metrics import Metrics
from phalanx.api.routes.deps import Svc

__all__ = ["router"]

router = APIRouter()


@router.get("/v1/ping")
async def ping(service: Svc) -> dict[str, Any]:
    # A controller that answers here leads: a standby's door (``phalanx.api.gate``)
    # answers the ping itself.
    return {"ok": True, "controller_id": service.id, "role": "leader"}


@router.get("/metrics")
async def prometheus(request: Request) -> Response:
    metrics: Metrics = request.app.state.metrics
    return Response(metrics.render(), media_type="text/plain; version=0.0.4")
