"""Job steps (``srun`` in an allocation): start, show (waiting for the end), list, kill."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from phalanx.api.convert import step_info, step_spec
from phalanx.api.routes.deps import Svc, Who, job_ids
from phalanx.api.routes.errors import ERRORS
from phalanx.api.service import StepView
from phalanx.api.wire import StepInfo, StepList, StepRequest

__all__ = ["router"]

router = APIRouter()


def _info(view: StepView) -> StepInfo:
    return StepInfo.model_validate(step_info(view.record()))


@router.post("/v1/jobs/{job_id}/steps", status_code=201, response_model=StepInfo, responses=ERRORS)
async def start_step(job_id: int, req: StepRequest, who: Who, service: Svc) -> StepInfo:
    return _info(service.start_step(job_id, who, step_spec(req)))


@router.get("/v1/jobs/{job_id}/steps/{step_no}", response_model=StepInfo, responses=ERRORS)
async def step(
    job_id: int,
    step_no: int,
    who: Who,
    service: Svc,
    wait: Annotated[float, Query(ge=0, le=60)] = 0,
) -> StepInfo:
    return _info(await service.step_info(job_id, step_no, wait))


@router.get("/v1/steps", response_model=StepList, responses=ERRORS)
async def running_steps(who: Who, service: Svc, ids: str | None = None) -> StepList:
    """The steps of the jobs running now (``ids``: of those jobs only)."""
    asked = job_ids(ids)
    id_list = [i for i in asked if isinstance(i, int)] if asked is not None else None
    return StepList(steps=[_info(view) for view in service.running_steps(id_list)])


@router.delete("/v1/jobs/{job_id}/steps/{step_no}", response_model=StepInfo, responses=ERRORS)
async def kill_step(job_id: int, step_no: int, who: Who, service: Svc) -> StepInfo:
    service.kill_step(job_id, step_no, who)
    return _info(await service.step_info(job_id, step_no, 0))
