"""The agent protocol: registration, long-polled commands, end reports, and refusals.

Every incarnation of a node's agent (one process, named by its ``boot_id``) holds an
*epoch*, handed out by the controller at registration: monotonic per node and kept in the
state database, so no controller, restarted or not, hands one out twice. Polls and reports
carry the epoch and boot id; every command carries the epoch it is meant for. The
controller refuses a stale epoch with 409 and ``reason: "fenced"``: that agent kills its
tasks and exits. Only one incarnation acts for a node at a time (architecture rule 6).

Refusal reasons (409, ``Refusal``):

    fenced        another incarnation holds the node with a newer epoch: stop and exit
    held          a live agent holds the node: this newcomer is not wanted, exit
    unregistered  this controller does not know the agent (it restarted): register again
"""

from __future__ import annotations

from typing import Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BOOT_ID_PATTERN",
    "EPOCH_MAX",
    "NODE_PATTERN",
    "AgentCommand",
    "AgentCommands",
    "AgentFault",
    "AgentHello",
    "AgentReports",
    "AgentWelcome",
    "ContainerReport",
    "ContainerState",
    "HealthConfig",
    "NodeFacts",
    "ProbeSpec",
    "ProbesSpec",
    "Refusal",
    "RefusalReason",
    "ReportsAck",
    "RunReport",
    "TaskSpec",
    "Usage",
]

NODE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
"""A node name as Slurm allows it in a hostlist (no spaces, commas or brackets)."""
BOOT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
"""An agent incarnation's id: non-empty, printable, short (the agent uses 32 hex digits)."""

EPOCH_MAX = 2**62
"""Epochs stay far below SQLite's integer limit, whatever a caller claims to have held."""

RefusalReason = Literal["fenced", "held", "unregistered"]


class NodeFacts(TypedDict, total=False):
    """What a node's agent told of its machine (its hello; ``cpu_load`` and ``free_mem_mb``
    as of its last poll), with where and when it registered: ``NodeInfo``'s fields of the
    same names. A key is absent when the agent did not say."""

    address: str
    arch: str
    os: str
    boot_time: int
    """ms since the epoch."""
    agent_start: int | None
    """When the incarnation first registered, ms since the epoch."""
    cpu_load: float
    free_mem_mb: int


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Usage(_Wire):
    """What processes used, as the kernel counts it when they end: CPU time in user and in
    kernel mode (summed over tasks), and the largest resident set size of one task."""

    user_ms: int = Field(ge=0)
    system_ms: int = Field(ge=0)
    max_rss_kb: int = Field(ge=0, description="KiB")


class RunReport(_Wire):
    """What an agent knows of one run of a job on its node."""

    job_id: int = Field(ge=0)
    run: int = Field(ge=0)
    state: Literal["running", "exited", "failed", "lost"]
    """``lost``: the agent killed it because it could not reach its controller for longer
    than its lease (``AgentWelcome.lease_s``): it ends as on a node failure."""
    exit_code: int = 0
    signal: int = 0
    reason: str = ""
    at: int = Field(default=0, description="when it ended, ms since the epoch (0: now)")
    usage: Usage | None = Field(
        default=None,
        description="what its tasks on this node used (an ended run; None: not measured)",
    )


class AgentHello(_Wire):
    """A registration: this node, this incarnation, what it runs and what ended unacked."""

    node: str = Field(pattern=NODE_PATTERN)
    address: str = Field(default="127.0.0.1", min_length=1, max_length=255)
    boot_id: str = Field(pattern=BOOT_ID_PATTERN)
    epoch: int = Field(
        default=0,
        ge=0,
        le=EPOCH_MAX,
        description="the epoch this incarnation held (0: a new incarnation)",
    )
    cpus: int = Field(ge=0)
    memory_mb: int = Field(ge=0)
    gpus: int = Field(ge=0)
    gpu_model: str | None = None
    runs: list[RunReport] = Field(default_factory=list)
    arch: str | None = None
    os: str | None = None
    boot_time: int | None = Field(default=None, description="ms since the epoch")
    cpu_load: float | None = Field(default=None, ge=0)
    free_mem_mb: int | None = Field(default=None, ge=0)


class HealthConfig(_Wire):
    """What the agent checks of its node (the cluster's ``health_check``)."""

    program: str | None = Field(default=None, description="HealthCheckProgram")
    interval_s: float = Field(default=0.0, ge=0, description="HealthCheckInterval; 0: no program")
    fatal_xids: list[int] = Field(default_factory=list, description="Xids that requeue at once")
    gpus: bool = Field(default=True, description="probe the GPUs through NVML")
    gpu_interval_s: float = Field(default=30.0, gt=0, description="between GPU probes")


class AgentWelcome(_Wire):
    controller_id: str
    node: str
    epoch: int = Field(ge=1, description="this incarnation's epoch: carry it on every call")
    heartbeat_s: float
    health: HealthConfig = Field(default_factory=HealthConfig)
    lease_s: float = Field(
        default=0.0,
        ge=0,
        description="kill every task when no call has reached the controller for this long "
        "(0: never); shorter than the controller's --dead-after, so a node cut off stops "
        "its jobs before they are requeued elsewhere",
    )
    acked: list[list[int]] = Field(
        default_factory=list, description="[job_id, run] of ended runs now journaled: forget them"
    )


class ReportsAck(_Wire):
    acked: list[list[int]] = Field(
        description="[job_id, run] of ended runs now journaled; keep the others and send again"
    )


class ProbeSpec(_Wire):
    """One probe as the agent runs it (``phalanx.domain.probes.Probe``; the host filled in)."""

    kind: Literal["httpGet", "tcpSocket", "exec"]
    port: int = Field(default=0, ge=0, le=65535)
    host: str = Field(default="", description="empty: the agent's own address (the pod's)")
    path: str = "/"
    scheme: Literal["HTTP", "HTTPS"] = "HTTP"
    headers: list[list[str]] = Field(default_factory=list, description="[name, value] pairs")
    command: list[str] = Field(default_factory=list, description="exec: argv")
    initial_delay_s: float = Field(default=0.0, ge=0)
    period_s: float = Field(default=10.0, gt=0)
    timeout_s: float = Field(default=1.0, gt=0)
    success_threshold: int = Field(default=1, ge=1)
    failure_threshold: int = Field(default=3, ge=1)


class ProbesSpec(_Wire):
    startup: ProbeSpec | None = None
    liveness: ProbeSpec | None = None
    readiness: ProbeSpec | None = None
    grace_s: float = Field(default=30.0, ge=0, description="SIGTERM to SIGKILL when a probe kills")


class TaskSpec(_Wire):
    argv: list[str]
    cwd: str
    env: dict[str, str]
    stdout: str
    stderr: str | None = Field(default=None, description="None: with stdout")
    open_mode: Literal["truncate", "append"] = "append"
    uid: int | None = None
    gid: int | None = None
    rank: int
    restart: Literal["Always", "OnFailure", "Never"] = Field(
        default="Never",
        description="a pod's restartPolicy: the agent restarts the process in place (Always; "
        "OnFailure after a non-zero exit) with the kubelet's back-off; the run then ends only "
        "when killed",
    )
    probes: ProbesSpec | None = None


class AgentCommand(_Wire):
    """One command for one incarnation: ``epoch`` names it; any other ignores the command."""

    seq: int = 0
    epoch: int = 0
    kind: Literal["launch", "signal", "kill"]
    job_id: int
    run: int
    signal: int = 0
    tasks: list[TaskSpec] = Field(default_factory=list)
    cpus: int = 0
    memory_mb: int = 0


class AgentCommands(_Wire):
    controller_id: str
    epoch: int = Field(default=0, description="the epoch the commands are for")
    commands: list[AgentCommand]


class ContainerState(_Wire):
    """Kubernetes' ``ContainerState``: exactly one of running, waiting, terminated is set
    (times in ms since the epoch)."""

    kind: Literal["running", "waiting", "terminated"]
    started_at: int = 0
    finished_at: int = 0
    exit_code: int = 0
    signal: int = 0
    reason: str = ""
    message: str = ""


class ContainerReport(_Wire):
    """How one task that restarts in place or is probed (a pod's container) is doing, as the
    kubelet reports it in ``containerStatuses``; soft state, never journaled."""

    job_id: int = Field(ge=0)
    run: int = Field(ge=0)
    rank: int = Field(ge=0)
    ready: bool
    started: bool
    restart_count: int = Field(ge=0)
    state: ContainerState
    last_state: ContainerState | None = None
    cpu_millicores: int | None = Field(
        default=None, ge=0, description="CPU use over the last interval (None: not measured yet)"
    )
    probe_message: str = Field(
        default="", description="the last probe failure, as the kubelet words it (an event)"
    )


class AgentReports(_Wire):
    """Ended runs; with ``inventory``, also every run the agent still has (``running``), as
    of the command ``after`` (the last it carried out): the controller ends the runs it
    believes are there that the agent has not got."""

    boot_id: str = Field(pattern=BOOT_ID_PATTERN)
    epoch: int = Field(default=0, ge=0, le=EPOCH_MAX)
    reports: list[RunReport]
    inventory: bool = False
    after: int = Field(default=0, ge=0)
    controller_id: str = Field(
        default="",
        max_length=128,
        description="the controller whose numbering ``after`` counts in (the one the agent "
        "last registered with); an inventory counted in another's is not taken",
    )
    containers: list[ContainerReport] | None = Field(
        default=None,
        description="every container of the node's runs, as of now (None: not told this time)",
    )


class AgentFault(_Wire):
    """A fault the node's holder found on its node: the node is drained with ``reason``
    (and, when ``fatal``, its jobs end at once, as on a node failure)."""

    boot_id: str = Field(pattern=BOOT_ID_PATTERN)
    epoch: int = Field(ge=1, le=EPOCH_MAX)
    reason: str = Field(min_length=1, max_length=256)
    fatal: bool = False


class Refusal(_Wire):
    """A 409 answer to an agent: ``reason`` says what the agent must do (module docstring)."""

    error: str
    field: str | None = None
    reason: RefusalReason | None = None
    epoch: int | None = Field(default=None, description="the epoch that holds the node now")
