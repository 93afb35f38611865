"""``/v1/jobs/{job_id}/...``: what ``scontrol`` and ``scancel --signal`` do to a job
(hold, release, requeue, signal). Each answers the ids of the jobs it changed."""

from __future__ import annotations

from fastapi import APIRouter

from phalanx.api.routes.deps import Svc, Who
from phalanx.api.routes.errors import ERRORS
from phalanx.api.wire import ChangeResult, SignalRequest

__all__ = ["router"]

router = APIRouter()


@router.post("/v1/jobs/{job_id}/hold", response_model=ChangeResult, responses=ERRORS)
async def hold(job_id: int, who: Who, service: Svc) -> ChangeResult:
    return ChangeResult(changed=service.update(job_id, who, hold=True))


@router.post("/v1/jobs/{job_id}/release", response_model=ChangeResult, responses=ERRORS)
async def release(job_id: int, who: Who, service: Svc) -> ChangeResult:
    return ChangeResult(changed=service.update(job_id, who, hold=False))


@router.post("/v1/jobs/{job_id}/requeue", response_model=ChangeResult, responses=ERRORS)
async def requeue(job_id: int, who: Who, service: Svc) -> ChangeResult:
    return ChangeResult(changed=service.requeue(job_id, who))


@router.post("/v1/jobs/{job_id}/signal", response_model=ChangeResult, responses=ERRORS)
async def signal(job_id: int, req: SignalRequest, who: Who, service: Svc) -> ChangeResult:
    return ChangeResult(changed=service.signal(job_id, who, req.signal, req.target))
