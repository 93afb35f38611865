"""What travels over HTTP: pydantic models for the REST API (the agent protocol's are in
``phalanx.protocol.agent``, shared with the agent, and named here too).

Requests are validated here, at the wire; the domain never sees pydantic. Durations are
Slurm strings in requests (``"1:00:00"``, ``"30"`` minutes) and integer milliseconds in
answers; instants are milliseconds since the Unix epoch.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# The agent protocol lives where the agent may import it too; named here for API users.
from phalanx.protocol.agent import (
    AgentCommand,
    AgentCommands,
    AgentHello,
    AgentReports,
    AgentWelcome,
    Refusal,
    ReportsAck,
    RunReport,
    TaskSpec,
    Usage,
)

__all__ = [
    "AccountingRequest",
    "AcctRecord",
    "AgentCommand",
    "AgentCommands",
    "AgentHello",
    "AgentReports",
    "AgentWelcome",
    "BatchSubmit",
    "CancelResult",
    "ChangeResult",
    "ErrorBody",
    "JobInfo",
    "JobList",
    "JobRequest",
    "JobTable",
    "JobUpdate",
    "NodeInfo",
    "NodeUpdateRequest",
    "PartitionInfo",
    "PriorityInfo",
    "Refusal",
    "ReportsAck",
    "RunReport",
    "ShareInfo",
    "SignalRequest",
    "StepInfo",
    "StepList",
    "StepRequest",
    "SubmitResult",
    "TaskSpec",
    "Usage",
    "WillRun",
]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JobRequest(_Wire):
    """One job to submit: ``nodes`` x ``ntasks_per_node`` tasks that start together."""

    command: list[str] = Field(min_length=1, description="argv of every task; no shell")
    name: str | None = None
    workdir: str | None = Field(None, description="submit directory; the caller's cwd")
    nodes: str = Field("1", description="N or min-max")
    ntasks_per_node: int = Field(1, ge=1)
    gpus_per_task: int = Field(0, ge=0)
    gpu_model: str | None = None
    cpus_per_task: int = Field(1, ge=1)
    mem: str | None = Field(None, description="per node, Slurm units: 4G, 500M")
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time: str | None = Field(None, description="Slurm time: 30, 1:00:00, 2-12")
    output: str | None = None
    error: str | None = None
    open_mode: Literal["truncate", "append"] = "append"
    environment: dict[str, str] = Field(default_factory=dict)
    array: str | None = Field(None, description="0-15%4, 1,3,5")
    dependency: str | None = Field(None, description="afterok:12,afterany:13")
    signal: str | None = Field(None, description="[B:]SIG[@secs]")
    requeue: bool = True
    hold: bool = False
    batch: bool = Field(False, description="a batch script: run once, on the first node")
    exclusive: bool = False
    elastic: bool = Field(
        False,
        description="Phalanx's own: the job may be grown up to its maximum node count and "
        "shrunk to its minimum while it runs (sbatch --elastic)",
    )
    constraint: list[str] = Field(default_factory=list)
    switches: int | None = Field(None, ge=1)
    switches_wait: str | None = None
    begin: int | None = Field(None, description="earliest start, ms since the epoch")
    nice: int = 0
    comment: str = ""
    checkpoint_interval: str | None = None
    checkpoint_on_signal: bool = Field(
        False, description="the job saves a checkpoint on SIGTERM and resumes from it"
    )


class StepRequest(_Wire):
    """``srun`` in an allocation: a step's tasks over (part of) the job's nodes."""

    command: list[str] = Field(min_length=1)
    ntasks: int | None = Field(None, ge=1)
    nodes: int | None = Field(None, ge=1)
    ntasks_per_node: int | None = Field(None, ge=1)
    environment: dict[str, str] | None = None
    workdir: str | None = None
    output: str | None = Field(None, description="per-task pattern (%t); None: the job's")
    error: str | None = None


class StepInfo(_Wire):
    """A step (``srun`` in an allocation); ``exit_code`` is its tasks' highest, ``signal``
    the highest signal that ended one."""

    job_id: int
    step_id: int
    state: str
    tasks: int
    nodes: list[str]
    exit_code: int
    signal: int
    reason: str = ""
    usage: Usage | None = Field(default=None, description="its tasks, once all have ended and told")
    name: str = Field("", description="the base name of the program it runs")
    nodelist: str = Field("", description="``nodes`` as a host list")
    cpus: int = Field(0, description="over all its nodes")
    gpus: float = Field(0.0, description="over all its nodes")
    mem_mb: int = Field(0, description="per node, as a job's")
    start: int | None = None
    end: int | None = Field(default=None, description="None while it runs")


class StepList(_Wire):
    """``GET /v1/steps``: the steps of the jobs running now, by job and step number (an
    ended job's are its record's ``steps``)."""

    steps: list[StepInfo]


class WillRun(_Wire):
    """``sbatch --test-only``: what would happen, were the job submitted now."""

    job_id: int = Field(description="the id it would get")
    start: int
    nodes: list[str]
    cpus: int
    partition: str


class BatchSubmit(_Wire):
    jobs: list[JobRequest] = Field(min_length=1, max_length=100_000)


class SubmitResult(_Wire):
    job_ids: list[list[int]] = Field(description="per request: its job ids (array tasks)")


class JobInfo(_Wire):
    job_id: int
    array_job_id: int | None = None
    array_task_id: int | None = None
    name: str
    user: str
    account: str
    partition: str
    qos: str
    state: str
    reason: str
    reason_message: str = Field(
        "",
        description="while pending: why, in the terms of the plugin that gave the reason "
        "(a ClusterQueue's quota: 'ClusterQueue team-a uses 64 GPUs of its nominal 64 GPUs "
        "..., cohort c has none to lend'); empty if the reason says all",
    )
    priority: float
    nodes_requested: int
    tasks: int
    gpus: float
    cpus: int
    time_limit_ms: int
    submit: int
    start: int | None = None
    end: int | None = None
    expected_start: int | None = None
    nodelist: str = ""
    exit_code: int = 0
    signal: int = 0
    restarts: int = 0
    command: list[str] = Field(default_factory=list)
    workdir: str = ""
    comment: str = ""
    mem_mb: int = Field(0, description="memory per node asked for (0: none)")
    ntasks_per_node: int = 1
    cpus_per_task: int = 1
    gpus_per_task: int = 0
    gpu_model: str | None = None
    array_throttle: int | None = None
    begin: int | None = None
    dependency: str = ""
    unlimited: bool = Field(False, description="no time limit was asked for or set")
    features: list[str] = Field(default_factory=list)
    exclusive: bool = False
    elastic: bool = False
    requeue: bool = True
    output: str | None = None
    error: str | None = None
    usage: Usage | None = Field(
        default=None,
        description="the job's own tasks (the batch script, or every task of a job that is "
        "not one) in the last run that ended; None: not measured, or running",
    )
    steps_usage: Usage | None = Field(
        default=None, description="the steps (srun in the allocation) of that run, together"
    )
    steps: list[StepInfo] = Field(
        default_factory=list,
        description="the steps of that run (a running run's: ``GET /v1/steps``)",
    )


class JobUpdate(_Wire):
    """``scontrol update``: what to change (at least one field)."""

    time: str | None = Field(None, description="new time limit, Slurm time")
    priority: float | None = Field(None, description="a fixed priority (administrators)")


class SignalRequest(_Wire):
    signal: int = Field(ge=1, le=64, description="signal number (SIGUSR1 is 10)")
    target: Literal["steps", "batch", "all"] = Field(
        "steps",
        description="as scancel: the steps (a job that is not a batch script: its tasks), "
        "the batch script (-b), or both (-f)",
    )


class AccountingRequest(_Wire):
    """``POST /v1/associations``: a ``sacctmgr add|modify|delete`` as typed."""

    verb: Literal["add", "modify", "delete"]
    entity: Literal["account", "user", "qos"]
    names: list[str]
    where: list[tuple[str, str]] = []
    settings: list[tuple[str, str]] = []


class NodeUpdateRequest(_Wire):
    """``scontrol update NodeName=... State=... Reason=...`` (administrators)."""

    nodes: list[str] = Field(min_length=1, description="node names")
    state: Literal["drain", "down", "resume", "undrain"] = Field(
        description="drain: no new jobs, running ones go on; down: out of service, its jobs "
        "end as on a node failure; resume or undrain: back in service"
    )
    reason: str = Field("", max_length=1024, description="required to drain or down")
    kill: bool = Field(
        False, description="drain only: end the node's jobs now, as a fatal GPU fault does"
    )


class PriorityInfo(_Wire):
    job_id: int
    user: str
    account: str
    partition: str
    priority: float
    factors: dict[str, float]


class ShareInfo(_Wire):
    account: str
    parent: str | None
    raw_shares: int
    norm_shares: float
    raw_usage: float = Field(description="decayed GPU-seconds")
    effective_usage: float
    fairshare: float


class JobList(_Wire):
    jobs: list[JobInfo]


class JobTable(_Wire):
    """``GET /v1/jobs/table``: the jobs of ``GET /v1/jobs`` as rows of the ``JobInfo`` fields
    asked for, in the order asked, each once (what the Slurm commands read: far less to
    encode and decode than whole records)."""

    fields: list[str]
    rows: list[list[Any]]


class CancelResult(_Wire):
    cancelled: list[int]


class ChangeResult(_Wire):
    changed: list[int]


class NodeInfo(_Wire):
    name: str
    state: str
    gpus: int
    gpus_alloc: float
    gpu_model: str
    cpus: int
    cpus_alloc: int
    memory_mb: int
    leaf: str
    partitions: list[str]
    agent: bool = Field(description="an agent is connected")
    reason: str = ""
    reason_user: str | None = Field(
        default=None, description="who drained or downed it (an administrator, a health check)"
    )
    reason_time: int | None = Field(default=None, description="when, ms since the epoch")
    mem_alloc_mb: int = Field(default=0, description="memory held by jobs")
    address: str | None = Field(default=None, description="where its agent registered from")
    arch: str | None = None
    os: str | None = None
    boot_time: int | None = Field(default=None, description="ms since the epoch")
    agent_start: int | None = Field(
        default=None, description="when its agent registered, ms since the epoch"
    )
    cpu_load: float | None = Field(default=None, description="one-minute load average")
    free_mem_mb: int | None = Field(default=None, description="memory available to new work")


class PartitionInfo(_Wire):
    name: str
    nodes: list[str]
    default: bool
    max_time_ms: int | None
    default_time_ms: int | None
    priority_tier: int


class AcctRecord(_Wire):
    job_id: int
    array_job_id: int | None = None
    array_task_id: int | None = None
    name: str
    user: str
    account: str
    partition: str
    state: str
    exit_code: int
    signal: int
    submit: int
    start: int | None
    end: int | None
    nodelist: str
    gpus: float
    cpus: int
    restarts: int
    mem_mb: int = Field(0, description="per node")
    nodes_requested: int = 1
    usage: Usage | None = None
    steps_usage: Usage | None = None
    steps: list[StepInfo] = Field(default_factory=list)


class ErrorBody(_Wire):
    error: str
    field: str | None = None
