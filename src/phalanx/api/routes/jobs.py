"""``/v1/jobs``: submit (one, a batch, ``--test-only``), list, show, cancel and change jobs.

The listings are the hot paths (``squeue`` polls them): their rows are built by
``phalanx.api.convert`` as plain dicts and lists and encoded once, without a pydantic model
per job; ``response_model`` only documents them.
"""

from __future__ import annotations

import json
import pwd
from typing import Annotated, Any

from fastapi import APIRouter, Header
from fastapi.responses import JSONResponse, Response

from phalanx.api.convert import JOB_FIELDS, job_info, job_table, to_spec
from phalanx.api.routes.deps import Svc, Who, job_ids, states
from phalanx.api.routes.errors import ERRORS
from phalanx.api.service import Service
from phalanx.api.wire import (
    BatchSubmit,
    CancelResult,
    ChangeResult,
    JobInfo,
    JobList,
    JobRequest,
    JobTable,
    JobUpdate,
    SubmitResult,
    WillRun,
)
from phalanx.domain.caller import Caller
from phalanx.domain.jobspec import MAX_TIME, JobSpec
from phalanx.domain.time import parse_duration
from phalanx.engine.timers import DEFAULT_TIME_LIMIT
from phalanx.errors import InputError

__all__ = ["router"]

IdempotencyKey = Annotated[
    str | None,
    Header(
        min_length=1,
        max_length=200,
        description="a key of the client's choosing: the same request sent again with it "
        "(after a lost answer, or a failover) gets the first one's job ids, and no second job",
    ),
]
"""The ``Idempotency-Key`` header of a submission."""

router = APIRouter()

_ENCODE = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, separators=(",", ":"), check_circular=False
).encode


def _home(who: Caller) -> str | None:
    try:
        return pwd.getpwnam(who.name).pw_dir
    except KeyError:
        return None


def _specs(service: Service, requests: list[JobRequest], who: Caller) -> list[JobSpec]:
    """The requests as specs the service accepts; the first bad one raises ``InputError``
    naming its field (``jobs.<i>.<field>`` in a batch)."""
    home = _home(who)
    out = []
    for i, req in enumerate(requests):
        try:
            spec = to_spec(req, who, home)
            service.check(spec)
            out.append(spec)
        except InputError as exc:
            if len(requests) > 1:
                exc.field = f"jobs.{i}.{exc.field}" if exc.field else f"jobs.{i}"
                exc.args = (exc._render(),)
            raise
    return out


@router.post("/v1/jobs", status_code=201, response_model=SubmitResult, responses=ERRORS)
async def submit(
    req: JobRequest, who: Who, service: Svc, idempotency_key: IdempotencyKey = None
) -> SubmitResult:
    return SubmitResult(job_ids=service.submit(_specs(service, [req], who), idempotency_key or ""))


@router.post("/v1/jobs/test", response_model=WillRun, responses=ERRORS)
async def will_run(req: JobRequest, who: Who, service: Svc) -> WillRun:
    found = service.will_run(_specs(service, [req], who)[0])
    return WillRun(
        job_id=found.job_id,
        start=found.start,
        nodes=list(found.nodes),
        cpus=found.cpus,
        partition=found.partition,
    )


@router.post("/v1/jobs/batch", status_code=201, response_model=SubmitResult, responses=ERRORS)
async def submit_batch(
    batch: BatchSubmit, who: Who, service: Svc, idempotency_key: IdempotencyKey = None
) -> Response:
    # Written directly: a batch of 100,000 ids is not worth a response model's validation.
    ids = service.submit(_specs(service, batch.jobs, who), idempotency_key or "")
    return JSONResponse({"job_ids": ids}, status_code=201)


@router.get("/v1/jobs", response_model=JobList)
async def jobs(
    who: Who,
    service: Svc,
    all: bool = False,
    state: str | None = None,
    user: str | None = None,
    partition: str | None = None,
    ids: str | None = None,
) -> Response:
    found = service.jobs(
        finished=all, states=states(state), user=user, partition=partition, ids=job_ids(ids)
    )
    cluster = service.cluster
    return JSONResponse({"jobs": [job_info(j, cluster) for j in found]})


@router.get("/v1/jobs/table", response_model=JobTable, responses=ERRORS)
async def jobs_table(
    who: Who,
    service: Svc,
    fields: str | None = None,
    all: bool = False,
    state: str | None = None,
    user: str | None = None,
    partition: str | None = None,
    ids: str | None = None,
) -> Response:
    """``GET /v1/jobs`` (the same filters) as rows of ``fields`` (comma-separated
    ``JobInfo`` names; default all)."""
    asked = [f for f in fields.split(",") if f] if fields else JOB_FIELDS
    names = list(dict.fromkeys(asked))
    found = service.jobs(
        finished=all, states=states(state), user=user, partition=partition, ids=job_ids(ids)
    )
    body: dict[str, Any] = {"fields": names, "rows": job_table(found, names, service.cluster)}
    # As JSONResponse writes it, without its per-call encoder set-up.
    return Response(_ENCODE(body).encode(), media_type="application/json")


@router.get("/v1/jobs/{job_id}", response_model=JobInfo, responses=ERRORS)
async def job(job_id: int, who: Who, service: Svc) -> Response:
    return JSONResponse(job_info(service.job(job_id), service.cluster))


@router.delete("/v1/jobs/{job_id}", response_model=CancelResult, responses=ERRORS)
async def cancel(job_id: int, who: Who, service: Svc) -> CancelResult:
    return CancelResult(cancelled=service.cancel(job_id, who))


MAX_PRIORITY = 4_294_967_294
"""Slurm's largest job priority (uint32, less NO_VAL). NaN and infinities are refused with
it (Python's JSON reader takes NaN and Infinity)."""


@router.patch("/v1/jobs/{job_id}", response_model=ChangeResult, responses=ERRORS)
async def update(job_id: int, change: JobUpdate, who: Who, service: Svc) -> ChangeResult:
    limit = parse_duration(change.time) if change.time is not None else None
    if change.time is not None and limit is None:
        limit = DEFAULT_TIME_LIMIT  # UNLIMITED
    if limit is None and change.priority is None:
        raise InputError("nothing to change: give time or priority", field="time")
    # Unchecked, TimeLimit=10^30 minutes was taken and then broke every 'scontrol show job'
    # (its end past any time_t); the request's own bounds are the submission's.
    if limit is not None and limit > MAX_TIME:
        raise InputError("time limit beyond 31,700 years", field="time")
    if change.priority is not None and not 0 <= change.priority <= MAX_PRIORITY:
        raise InputError(f"priority must be between 0 and {MAX_PRIORITY}", field="priority")
    return ChangeResult(
        changed=service.update(job_id, who, time_limit=limit, priority=change.priority)
    )
