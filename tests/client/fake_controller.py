"""A fake controller for client tests: the REST API of ``phalanx.api.wire`` over an in-memory
dict, served by uvicorn in a thread on a Unix socket and on 127.0.0.1 at once.

It schedules nothing: tests put jobs in the state they need with ``add_job``. Submitted jobs
stay PENDING (reason ``Priority``) and belong to ``USER``; cancelling another user's job is
refused with 403, like the real controller's ownership check. Over TCP every call needs
``Authorization: Bearer <token>``; over the socket none does (the real controller reads
``SO_PEERCRED`` there).
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from phalanx.api.wire import (
    AcctRecord,
    BatchSubmit,
    CancelResult,
    ErrorBody,
    JobInfo,
    JobList,
    JobRequest,
    NodeInfo,
    PartitionInfo,
    SubmitResult,
)

__all__ = ["TOKEN", "USER", "FakeController", "Served", "serve"]

USER = "alice"
"""Who the fake takes every caller to be."""
TOKEN = "s3cret-token"
CONTROLLER_ID = "fake-1"
# A Unix socket path must fit in sun_path (108 bytes on Linux).
_MAX_SOCKET_PATH = 100


class Refused(Exception):
    def __init__(self, status: int, error: str, field: str | None = None) -> None:
        super().__init__(error)
        self.status = status
        self.body = ErrorBody(error=error, field=field)


@dataclass
class FakeController:
    """The controller's state; tests read and change it directly."""

    partitions: list[PartitionInfo] = field(
        default_factory=lambda: [
            PartitionInfo(
                name="gpu",
                nodes=["n1", "n2"],
                default=True,
                max_time_ms=None,
                default_time_ms=3_600_000,
                priority_tier=1,
            ),
            PartitionInfo(
                name="debug",
                nodes=["n1"],
                default=False,
                max_time_ms=1_800_000,
                default_time_ms=None,
                priority_tier=2,
            ),
        ]
    )
    nodes: list[NodeInfo] = field(
        default_factory=lambda: [
            NodeInfo(
                name="n1",
                state="mixed",
                gpus=8,
                gpus_alloc=4,
                gpu_model="h100",
                cpus=64,
                cpus_alloc=16,
                memory_mb=1_048_576,
                leaf="leaf0",
                partitions=["gpu", "debug"],
                agent=True,
            ),
            NodeInfo(
                name="n2",
                state="idle",
                gpus=8,
                gpus_alloc=0,
                gpu_model="h100",
                cpus=64,
                cpus_alloc=0,
                memory_mb=512_000,
                leaf="leaf1",
                partitions=["gpu"],
                agent=False,
            ),
        ]
    )
    jobs: dict[int, JobInfo] = field(default_factory=dict)
    requests: list[JobRequest] = field(default_factory=list)
    store_full: bool = False
    """When set, submissions get 507 as from a full state store."""
    next_id: int = 100

    def add_job(self, **overrides: Any) -> JobInfo:
        """A job in whatever state the test needs (defaults: a pending one of ``USER``)."""
        job_id = overrides.pop("job_id", None) or self._take_id()
        values: dict[str, Any] = {
            "job_id": job_id,
            "name": "train",
            "user": USER,
            "account": "ml",
            "partition": "gpu",
            "qos": "normal",
            "state": "PENDING",
            "reason": "Priority",
            "priority": 1000.0,
            "nodes_requested": 1,
            "tasks": 1,
            "gpus": 0.0,
            "cpus": 1,
            "time_limit_ms": 3_600_000,
            "submit": _now_ms(),
        }
        values.update(overrides)
        job = JobInfo(**values)
        self.jobs[job.job_id] = job
        return job

    def submit(self, request: JobRequest) -> list[int]:
        if self.store_full:
            raise Refused(507, "state store full: submissions refused")
        known = {p.name for p in self.partitions}
        if request.partition is not None and request.partition not in known:
            raise Refused(400, f"no partition {request.partition!r}", "partition")
        self.requests.append(request)
        tasks = _array_tasks(request.array)
        if tasks is None:
            return [self._job_of(request, None, None).job_id]
        first = self.next_id
        return [self._job_of(request, first, task).job_id for task in tasks]

    def _job_of(self, request: JobRequest, array_id: int | None, task: int | None) -> JobInfo:
        return self.add_job(
            name=request.name or request.command[0],
            partition=request.partition or "gpu",
            account=request.account or "ml",
            nodes_requested=int(request.nodes.split("-")[0]),
            tasks=int(request.nodes.split("-")[0]) * request.ntasks_per_node,
            gpus=float(request.gpus_per_task * request.ntasks_per_node),
            command=request.command,
            workdir=request.workdir or "",
            comment=request.comment,
            array_job_id=array_id,
            array_task_id=task,
            state="PENDING",
            reason="JobHeldUser" if request.hold else "Priority",
        )

    def cancel(self, job_id: int) -> list[int]:
        targets = [job for job in self.jobs.values() if job_id in (job.job_id, job.array_job_id)]
        if not targets:
            raise Refused(404, f"no job {job_id}")
        if any(job.user != USER for job in targets):
            raise Refused(403, f"job {job_id} belongs to another user")
        now = _now_ms()
        for job in targets:
            self.jobs[job.job_id] = job.model_copy(update={"state": "CANCELLED", "end": now})
        return [job.job_id for job in targets]

    def _take_id(self) -> int:
        while self.next_id in self.jobs:
            self.next_id += 1
        self.next_id += 1
        return self.next_id - 1


def _array_tasks(spec: str | None) -> list[int] | None:
    if spec is None:
        return None
    tasks: list[int] = []
    for part in spec.split("%")[0].split(","):
        low, _, high = part.partition("-")
        tasks.extend(range(int(low), int(high or low) + 1))
    return tasks


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _split(text: str | None) -> set[str] | None:
    return None if text is None else {p for p in text.split(",") if p}


def make_app(fake: FakeController) -> FastAPI:
    """The REST API over ``fake``."""
    app = FastAPI()

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused) -> JSONResponse:
        return JSONResponse(exc.body.model_dump(), status_code=exc.status)

    @app.middleware("http")
    async def authenticate(request: Request, call_next: Any) -> Any:
        # uvicorn gives no client address on a Unix socket: that is the trusted path.
        bearer = request.headers.get("authorization")
        if request.client is not None and bearer != f"Bearer {TOKEN}":
            body = ErrorBody(error="missing or wrong bearer token").model_dump()
            return JSONResponse(body, status_code=401)
        return await call_next(request)

    @app.get("/v1/ping")
    def ping() -> dict[str, Any]:
        return {"ok": True, "controller_id": CONTROLLER_ID}

    @app.post("/v1/jobs", status_code=201)
    def submit(request: JobRequest) -> SubmitResult:
        return SubmitResult(job_ids=[fake.submit(request)])

    @app.post("/v1/jobs/batch", status_code=201)
    def submit_batch(batch: BatchSubmit) -> SubmitResult:
        return SubmitResult(job_ids=[fake.submit(r) for r in batch.jobs])

    @app.get("/v1/jobs")
    def jobs(
        all: bool = False,
        state: str | None = None,
        user: str | None = None,
        partition: str | None = None,
        ids: str | None = None,
    ) -> JobList:
        states, wanted = _split(state), _split(ids)
        found = [
            job
            for job in fake.jobs.values()
            if (all or job.end is None)
            and (states is None or job.state in states)
            and (user is None or job.user == user)
            and (partition is None or job.partition == partition)
            and (wanted is None or str(job.job_id) in wanted)
        ]
        return JobList(jobs=found)

    @app.get("/v1/jobs/{job_id}")
    def job(job_id: int) -> JobInfo:
        if job_id not in fake.jobs:
            raise Refused(404, f"no job {job_id}")
        return fake.jobs[job_id]

    @app.delete("/v1/jobs/{job_id}")
    def cancel(job_id: int) -> CancelResult:
        return CancelResult(cancelled=fake.cancel(job_id))

    @app.get("/v1/nodes")
    def nodes() -> list[NodeInfo]:
        return fake.nodes

    @app.get("/v1/partitions")
    def partitions() -> list[PartitionInfo]:
        return fake.partitions

    @app.get("/v1/accounting")
    def accounting(
        user: str | None = None,
        since: int | None = None,
        until: int | None = None,
        ids: str | None = None,
    ) -> list[AcctRecord]:
        wanted = _split(ids)
        return [
            AcctRecord(**job.model_dump(include=set(AcctRecord.model_fields)))
            for job in fake.jobs.values()
            if job.end is not None
            and (user is None or job.user == user)
            and (since is None or job.end >= since)
            and (until is None or job.end < until)
            and (wanted is None or str(job.job_id) in wanted)
        ]

    return app


@dataclass(frozen=True)
class Served:
    """Where a running fake listens."""

    fake: FakeController
    state_dir: Path
    socket_path: Path
    url: str


@contextmanager
def serve(fake: FakeController, state_dir: Path) -> Iterator[Served]:
    """Serve ``fake`` on ``<state_dir>/controller.sock`` and on 127.0.0.1 (a free port)
    until the block ends. A ``state_dir`` too long for a socket path is swapped for a short
    temporary one."""
    with tempfile.TemporaryDirectory(prefix="phx-") as short:
        if len(str(state_dir / "controller.sock")) > _MAX_SOCKET_PATH:
            state_dir = Path(short)
        socket_path = state_dir / "controller.sock"
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind(str(socket_path))
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", 0))
        port = tcp.getsockname()[1]
        config = uvicorn.Config(
            make_app(fake), log_level="warning", access_log=False, lifespan="off"
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [unix, tcp]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the fake controller did not start")
            time.sleep(0.005)
        try:
            yield Served(fake, state_dir, socket_path, f"http://127.0.0.1:{port}")
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            if socket_path.exists():
                os.unlink(socket_path)
