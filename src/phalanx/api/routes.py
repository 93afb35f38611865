"""The REST API (FastAPI, ``/v1``) over the service port, with who-is-asking and errors.

Callers are known from the Unix socket's peer credentials (``phalanx.api.peer``) or, over
TCP, from a bearer token. Bad input is answered 4xx with ``ErrorBody`` (the field named);
nothing a user sends can crash the controller.
"""

from __future__ import annotations

import json
import pwd
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from phalanx.api.convert import (
    JOB_FIELDS,
    acct_record,
    job_info,
    job_table,
    step_info,
    to_spec,
)
from phalanx.api.metrics import Metrics
from phalanx.api.service import Service, StepView
from phalanx.api.wire import (
    AcctRecord,
    AgentCommands,
    AgentHello,
    AgentReports,
    AgentWelcome,
    BatchSubmit,
    CancelResult,
    ChangeResult,
    ErrorBody,
    JobInfo,
    JobList,
    JobRequest,
    JobTable,
    JobUpdate,
    NodeInfo,
    PartitionInfo,
    PriorityInfo,
    Refusal,
    ReportsAck,
    ShareInfo,
    SignalRequest,
    StepInfo,
    StepList,
    StepRequest,
    SubmitResult,
    WillRun,
)
from phalanx.domain.caller import Caller
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import parse_duration
from phalanx.engine.engine import DEFAULT_TIME_LIMIT
from phalanx.errors import (
    Conflict,
    Fenced,
    InputError,
    NotAllowed,
    NotFound,
    PhalanxError,
    StateStoreError,
)
from phalanx.protocol.agent import BOOT_ID_PATTERN, EPOCH_MAX, NODE_PATTERN

__all__ = ["Access", "create_app"]

HEARTBEAT_S = 10.0
_ENCODE = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, separators=(",", ":"), check_circular=False
).encode
_ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorBody} for code in (403, 404, 422)}
_AGENT_ERRORS: dict[int | str, dict[str, Any]] = {
    **_ERRORS,
    409: {"model": Refusal, "description": "an agent incarnation that does not hold the node"},
    507: {"model": ErrorBody, "description": "the state database cannot take the new epoch"},
}


class Access:
    """Who may do what: peers by uid, TCP callers by token."""

    def __init__(
        self,
        *,
        tokens: Mapping[str, str] | None = None,
        admins: frozenset[str] = frozenset(),
        owner_uid: int = 0,
    ) -> None:
        self.tokens = dict(tokens or {})
        """token -> user name."""
        self.admins = admins
        self.owner_uid = owner_uid

    def caller(self, request: Request) -> Caller:
        peer = request.scope.get("phalanx.peer")
        if peer is not None:
            uid = int(peer[1])
            try:
                name = pwd.getpwuid(uid).pw_name
            except KeyError:
                name = str(uid)
            return Caller(uid, name, uid in (0, self.owner_uid) or name in self.admins)
        auth = request.headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        user = self.tokens.get(token) if scheme.lower() == "bearer" else None
        if user is None:
            raise _Unauthorized()
        try:
            uid = pwd.getpwnam(user).pw_uid
        except KeyError:
            uid = -1
        return Caller(uid, user, uid in (0, self.owner_uid) or user in self.admins)


class _Unauthorized(PhalanxError):
    pass


def _caller(request: Request) -> Caller:
    access: Access = request.app.state.access
    return access.caller(request)


def _admin(request: Request) -> Caller:
    who = _caller(request)
    if not who.admin:
        raise NotAllowed(f"{who.name} is not an administrator")
    return who


# Module level: FastAPI resolves the (string) annotations in this module's namespace.
Who = Annotated[Caller, Depends(_caller)]
Admin = Annotated[Caller, Depends(_admin)]


def _error(status: int, message: str, field: str | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "field": field}, status_code=status)


def create_app(service: Service, access: Access | None = None) -> FastAPI:
    access = access or Access()
    app = FastAPI(title="Phalanx", version="1", openapi_url="/openapi.json")
    metrics = Metrics(service)

    app.state.access = access
    # Every handler is ``async def``: FastAPI would run a plain ``def`` in a thread pool, and
    # the engine, the journal and the fleet must only be touched by the event loop's thread.

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")]
        field = ".".join(loc) or None
        message = str(first.get("msg", "invalid request"))
        return JSONResponse(
            {
                "error": f"{field}: {message}" if field else message,
                "field": field,
                "detail": jsonable_errors(exc),
            },
            status_code=422,
        )

    @app.exception_handler(InputError)
    async def _bad(request: Request, exc: InputError) -> JSONResponse:
        return _error(422, str(exc), exc.field)

    @app.exception_handler(NotFound)
    async def _missing(request: Request, exc: NotFound) -> JSONResponse:
        return _error(404, str(exc))

    @app.exception_handler(Conflict)
    async def _conflict(request: Request, exc: Conflict) -> JSONResponse:
        if isinstance(exc, Fenced):  # an agent's call: the reason tells it what to do
            body = Refusal(error=str(exc), reason=exc.reason, epoch=exc.epoch)  # type: ignore[arg-type]
            return JSONResponse(body.model_dump(), status_code=409)
        return _error(409, str(exc))

    @app.exception_handler(NotAllowed)
    async def _forbidden(request: Request, exc: NotAllowed) -> JSONResponse:
        return _error(403, str(exc))

    @app.exception_handler(_Unauthorized)
    async def _unauthorized(request: Request, exc: _Unauthorized) -> JSONResponse:
        return _error(401, "a valid API token is needed over TCP (Authorization: Bearer ...)")

    @app.exception_handler(StateStoreError)
    async def _full(request: Request, exc: StateStoreError) -> JSONResponse:
        return _error(507, f"submissions refused: {exc}")

    def _home(who: Caller) -> str | None:
        try:
            return pwd.getpwnam(who.name).pw_dir
        except KeyError:
            return None

    def _specs(requests: list[JobRequest], who: Caller) -> list[JobSpec]:
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

    # ------------------------------------------------------------------ jobs
    @app.post("/v1/jobs", status_code=201, response_model=SubmitResult, responses=_ERRORS)
    async def submit(req: JobRequest, who: Who) -> dict[str, Any]:
        return {"job_ids": service.submit(_specs([req], who))}

    @app.post("/v1/jobs/test", response_model=WillRun, responses=_ERRORS)
    async def will_run(req: JobRequest, who: Who) -> dict[str, Any]:
        return service.will_run(_specs([req], who)[0])

    @app.post("/v1/jobs/batch", status_code=201, response_model=SubmitResult, responses=_ERRORS)
    async def submit_batch(batch: BatchSubmit, who: Who) -> Response:
        ids = service.submit(_specs(batch.jobs, who))
        return JSONResponse({"job_ids": ids}, status_code=201)

    @app.get("/v1/jobs", response_model=JobList)
    async def jobs(
        who: Who,
        all: bool = False,
        state: str | None = None,
        user: str | None = None,
        partition: str | None = None,
        ids: str | None = None,
    ) -> Response:
        id_list = _ints(ids, "ids") if ids else None
        states = [s for s in state.split(",") if s] if state else None
        found = service.jobs(
            finished=all, states=states, user=user, partition=partition, ids=id_list
        )
        cluster = service.cluster
        return JSONResponse({"jobs": [job_info(j, cluster) for j in found]})

    @app.get("/v1/jobs/table", response_model=JobTable, responses=_ERRORS)
    async def jobs_table(
        who: Who,
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
        id_list = _ints(ids, "ids") if ids else None
        states = [s for s in state.split(",") if s] if state else None
        found = service.jobs(
            finished=all, states=states, user=user, partition=partition, ids=id_list
        )
        body = {"fields": names, "rows": job_table(found, names, service.cluster)}
        # As JSONResponse writes it, without its per-call encoder set-up.
        return Response(_ENCODE(body).encode(), media_type="application/json")

    @app.get("/v1/jobs/{job_id}", response_model=JobInfo, responses=_ERRORS)
    async def job(job_id: int, who: Who) -> Response:
        return JSONResponse(job_info(service.job(job_id), service.cluster))

    @app.delete("/v1/jobs/{job_id}", response_model=CancelResult, responses=_ERRORS)
    async def cancel(job_id: int, who: Who) -> dict[str, Any]:
        return {"cancelled": service.cancel(job_id, who)}

    @app.post("/v1/jobs/{job_id}/hold", response_model=ChangeResult, responses=_ERRORS)
    async def hold(job_id: int, who: Who) -> dict[str, Any]:
        return {"changed": service.update(job_id, who, hold=True)}

    @app.post("/v1/jobs/{job_id}/release", response_model=ChangeResult, responses=_ERRORS)
    async def release(job_id: int, who: Who) -> dict[str, Any]:
        return {"changed": service.update(job_id, who, hold=False)}

    @app.post("/v1/jobs/{job_id}/requeue", response_model=ChangeResult, responses=_ERRORS)
    async def requeue(job_id: int, who: Who) -> dict[str, Any]:
        return {"changed": service.requeue(job_id, who)}

    @app.post("/v1/jobs/{job_id}/signal", response_model=ChangeResult, responses=_ERRORS)
    async def signal(job_id: int, req: SignalRequest, who: Who) -> dict[str, Any]:
        return {"changed": service.signal(job_id, who, req.signal, req.target)}

    @app.patch("/v1/jobs/{job_id}", response_model=ChangeResult, responses=_ERRORS)
    async def update(job_id: int, change: JobUpdate, who: Who) -> dict[str, Any]:
        limit = parse_duration(change.time) if change.time is not None else None
        if change.time is not None and limit is None:
            limit = DEFAULT_TIME_LIMIT  # UNLIMITED
        if limit is None and change.priority is None:
            raise InputError("nothing to change: give time or priority", field="time")
        return {"changed": service.update(job_id, who, time_limit=limit, priority=change.priority)}

    def _step(view: StepView) -> dict[str, Any]:
        return step_info(view.record())

    @app.post(
        "/v1/jobs/{job_id}/steps", status_code=201, response_model=StepInfo, responses=_ERRORS
    )
    async def start_step(job_id: int, req: StepRequest, who: Who) -> dict[str, Any]:
        return _step(service.start_step(job_id, who, req.model_dump()))

    @app.get("/v1/jobs/{job_id}/steps/{step_no}", response_model=StepInfo, responses=_ERRORS)
    async def step(
        job_id: int,
        step_no: int,
        who: Who,
        wait: Annotated[float, Query(ge=0, le=60)] = 0,
    ) -> dict[str, Any]:
        return _step(await service.step_info(job_id, step_no, wait))

    @app.get("/v1/steps", response_model=StepList, responses=_ERRORS)
    async def running_steps(who: Who, ids: str | None = None) -> dict[str, Any]:
        """The steps of the jobs running now (``ids``: of those jobs only)."""
        id_list = [int(i) for i in _ints(ids, "ids") if isinstance(i, int)] if ids else None
        return {"steps": [_step(view) for view in service.running_steps(id_list)]}

    @app.delete("/v1/jobs/{job_id}/steps/{step_no}", response_model=StepInfo, responses=_ERRORS)
    async def kill_step(job_id: int, step_no: int, who: Who) -> dict[str, Any]:
        service.kill_step(job_id, step_no, who)
        return _step(await service.step_info(job_id, step_no, 0))

    @app.get("/v1/priority", response_model=list[PriorityInfo])
    async def priority(who: Who) -> Response:
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

    @app.get("/v1/fairshare", response_model=list[ShareInfo])
    async def fairshare(who: Who) -> list[dict[str, Any]]:
        return service.fairshare()

    @app.get("/v1/accounting", response_model=list[AcctRecord])
    async def accounting(
        who: Who,
        user: str | None = None,
        since: int | None = None,
        until: int | None = None,
        ids: str | None = None,
    ) -> Response:
        id_list = _ints(ids, "ids") if ids else None
        found = service.finished(user=user, since=since, until=until, ids=id_list)
        cluster = service.cluster
        return JSONResponse([acct_record(j, cluster) for j in found])

    # ------------------------------------------------------------------ cluster
    @app.get("/v1/nodes", response_model=list[NodeInfo])
    async def nodes(who: Who) -> list[dict[str, Any]]:
        cluster = service.cluster
        usage = service.node_usage()
        mem = service.node_mem_alloc()
        member: dict[int, list[str]] = {}
        for part in cluster.partitions.values():
            for i in part.nodes:
                member.setdefault(i, []).append(part.name)
        out = []
        for node in cluster.nodes:
            gpus, cpus = usage[node.index]
            down = service.node_down(node.name)
            state = "down" if down else ("allocated" if gpus or cpus else "idle")
            if not down and 0 < gpus < node.gpus:
                state = "mixed"
            out.append(
                {
                    "name": node.name,
                    "state": state,
                    "gpus": node.gpus,
                    "gpus_alloc": gpus,
                    "gpu_model": node.gpu_model,
                    "cpus": node.cpus,
                    "cpus_alloc": cpus,
                    "memory_mb": node.memory_mb,
                    "leaf": cluster.leaves[node.leaf].name,
                    "partitions": member.get(node.index, []),
                    "agent": service.agent_registered(node.name),
                    "reason": "Not responding" if down else "",
                    "mem_alloc_mb": mem[node.index],
                    **service.node_facts(node.name),
                }
            )
        return out

    @app.get("/v1/partitions", response_model=list[PartitionInfo])
    async def partitions(who: Who) -> list[dict[str, Any]]:
        cluster = service.cluster
        return [
            {
                "name": p.name,
                "nodes": [cluster.nodes[i].name for i in p.nodes],
                "default": p.default,
                "max_time_ms": p.max_time,
                "default_time_ms": p.default_time,
                "priority_tier": p.priority_tier,
            }
            for p in cluster.partitions.values()
        ]

    @app.get("/v1/ping")
    async def ping() -> dict[str, Any]:
        return {"ok": True, "controller_id": service.id}

    @app.get("/metrics")
    async def prometheus() -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    # ------------------------------------------------------------------ agents
    @app.post("/v1/agents/register", response_model=AgentWelcome, responses=_AGENT_ERRORS)
    async def register(hello: AgentHello, who: Admin) -> AgentWelcome:
        epoch, acked = service.register(hello)
        return AgentWelcome(
            controller_id=service.id,
            node=hello.node,
            epoch=epoch,
            heartbeat_s=HEARTBEAT_S,
            acked=[list(k) for k in acked],
        )

    @app.get("/v1/agents/{node}/commands", response_model=AgentCommands, responses=_AGENT_ERRORS)
    async def commands(
        node: Annotated[str, Path(pattern=NODE_PATTERN)],
        who: Admin,
        boot_id: Annotated[str, Query(pattern=BOOT_ID_PATTERN)],
        epoch: Annotated[int, Query(ge=1, le=EPOCH_MAX)],
        after: Annotated[int, Query(ge=0)] = 0,
        wait: Annotated[float, Query(ge=0, le=60)] = HEARTBEAT_S,
        cpu_load: Annotated[float | None, Query(ge=0)] = None,
        free_mem_mb: Annotated[int | None, Query(ge=0)] = None,
    ) -> AgentCommands:
        health = {"cpu_load": cpu_load, "free_mem_mb": free_mem_mb}
        out = await service.commands(node, boot_id, epoch, after, wait, health)
        return AgentCommands(controller_id=service.id, epoch=epoch, commands=out)

    @app.post("/v1/agents/{node}/reports", response_model=ReportsAck, responses=_AGENT_ERRORS)
    async def reports(
        node: Annotated[str, Path(pattern=NODE_PATTERN)], body: AgentReports, who: Admin
    ) -> ReportsAck:
        acked = service.reports(node, body)
        return ReportsAck(acked=[list(k) for k in acked])

    return app


def _ints(text: str, field: str) -> list[int | tuple[int, int]]:
    """Job ids, and ``A_T`` for task T of array A (Slurm's array task ids)."""
    out: list[int | tuple[int, int]] = []
    for part in text.split(","):
        job, _, task = part.strip().partition("_")
        if not job.isdigit() or (task and not task.isdigit()):
            raise InputError(f"not a job id: {part.strip()!r}", field=field)
        out.append((int(job), int(task)) if task else int(job))
    return out


def jsonable_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    return [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))}
        for e in exc.errors()
    ]
