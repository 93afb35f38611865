"""What ``sprio``, ``sshare`` and ``sacct`` read: pending jobs' priority factors, the
fair-share tree, and finished jobs."""

from __future__ import annotations

import json

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from phalanx.api.associations import association_rows, qos_rows
from phalanx.api.convert import acct_record, share_info
from phalanx.api.routes.deps import Svc, Who, job_ids
from phalanx.api.wire import AccountingRequest, AcctRecord, PriorityInfo, ShareInfo

__all__ = ["router"]

router = APIRouter()


@router.get("/v1/priority", response_model=list[PriorityInfo])
async def priority(who: Who, service: Svc) -> Response:
    return JSONResponse(
        [
            {
                "job_id": j.id,
                "user": j.spec.user,
                "account": j.account,
                "partition": j.partition,
                "priority": float(j.priority),
                "factors": {k: float(v) for k, v in j.factors.items()},
            }
            for j in service.priorities()
        ]
    )


@router.get("/v1/fairshare", response_model=list[ShareInfo])
async def fairshare(who: Who, service: Svc) -> list[ShareInfo]:
    return [share_info(row) for row in service.fairshare()]


@router.get("/v1/associations")
async def associations(who: Who, service: Svc) -> Response:
    """What ``sacctmgr show assoc`` and ``show qos`` print (``api.associations``)."""
    cluster = service.cluster
    return JSONResponse({"associations": association_rows(cluster), "qos": qos_rows(cluster)})


@router.post("/v1/associations")
async def change_associations(change: AccountingRequest, who: Who, service: Svc) -> Response:
    """``sacctmgr add|modify|delete account|user|qos``: the lines sacctmgr prints."""
    lines = service.change_accounting(
        who,
        change.verb,
        change.entity,
        change.names,
        [tuple(p) for p in change.where],  # type: ignore[misc]
        [tuple(p) for p in change.settings],  # type: ignore[misc]
    )
    return JSONResponse({"lines": lines})


@router.get("/v1/accounting", response_model=list[AcctRecord])
async def accounting(
    who: Who,
    service: Svc,
    user: str | None = None,
    since: int | None = None,
    until: int | None = None,
    ids: str | None = None,
) -> Response:
    wanted = job_ids(ids)
    found = service.finished(user=user, since=since, until=until, ids=wanted)
    cluster = service.cluster
    rows = [acct_record(j, cluster) for j in found]
    # Jobs the controller forgot (MinJobAge) are only in the store's accounting; a job
    # still in memory is as it is now (a requeued one may have changed since it ended).
    older = service.archived(user=user, since=since, until=until, ids=wanted)
    if older:
        parsed = [json.loads(record) for record in older]
        held = service.jobs(finished=True, ids=[int(row["job_id"]) for row in parsed])
        in_memory = {j.id for j in held}
        rows += [row for row in parsed if int(row["job_id"]) not in in_memory]
        rows.sort(key=lambda row: int(row["job_id"]))
    return JSONResponse(rows)
