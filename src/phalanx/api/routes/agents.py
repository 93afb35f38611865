"""The agent protocol (``phalanx.protocol.agent``): register, long-poll for commands, report
ended runs, report faults. Administrators (agents on the controller's machine run as root or
as its owner) may call for any node, and an agent with its node's own credential
(``--agent-tokens``) for that node only; the fencing rules answer 409 with a ``Refusal`` to
an incarnation that does not hold its node."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from phalanx.api.routes.deps import AgentCaller, Svc, for_node
from phalanx.api.routes.errors import AGENT_ERRORS
from phalanx.api.wire import AgentCommands, AgentHello, AgentReports, AgentWelcome, ReportsAck
from phalanx.protocol.agent import (
    BOOT_ID_PATTERN,
    EPOCH_MAX,
    NODE_PATTERN,
    AgentFault,
    HealthConfig,
    NodeFacts,
)

__all__ = ["HEARTBEAT_S", "heartbeat_s", "router"]

HEARTBEAT_S = 10.0
"""How long an agent's poll waits at most by default, and how often it is told to call."""


def heartbeat_s(lease_s: float) -> float:
    """The heartbeat an agent is told: ``HEARTBEAT_S``, shortened to its lease. The agent
    counts its lease from when it *sent* its last answered call, and a poll held for a whole
    heartbeat is no such call: what renews the lease is its inventory, a third of a heartbeat
    apart. A heartbeat longer than the lease (a short ``--dead-after``: 3 s gives a 1.5 s
    lease) would have every agent kill its own runs between two inventories while its
    controller is perfectly reachable."""
    return min(HEARTBEAT_S, lease_s) if lease_s > 0 else HEARTBEAT_S


router = APIRouter()


@router.post("/v1/agents/register", response_model=AgentWelcome, responses=AGENT_ERRORS)
async def register(hello: AgentHello, who: AgentCaller, service: Svc) -> AgentWelcome:
    for_node(who, hello.node)
    epoch, acked = service.register(hello)
    health = service.cluster.health
    return AgentWelcome(
        controller_id=service.id,
        node=hello.node,
        epoch=epoch,
        heartbeat_s=heartbeat_s(service.agent_lease_s),
        acked=[list(k) for k in acked],
        lease_s=service.agent_lease_s,
        health=HealthConfig(
            program=health.program,
            interval_s=health.interval_s,
            fatal_xids=sorted(health.fatal_xids),
            gpus=health.gpus,
            gpu_interval_s=health.gpu_interval_s,
        ),
    )


@router.get("/v1/agents/{node}/commands", response_model=AgentCommands, responses=AGENT_ERRORS)
async def commands(
    node: Annotated[str, Path(pattern=NODE_PATTERN)],
    who: AgentCaller,
    service: Svc,
    boot_id: Annotated[str, Query(pattern=BOOT_ID_PATTERN)],
    epoch: Annotated[int, Query(ge=1, le=EPOCH_MAX)],
    after: Annotated[int, Query(ge=0)] = 0,
    wait: Annotated[float, Query(ge=0, le=60)] = HEARTBEAT_S,
    cpu_load: Annotated[float | None, Query(ge=0)] = None,
    free_mem_mb: Annotated[int | None, Query(ge=0)] = None,
    controller_id: Annotated[str | None, Query(max_length=128)] = None,
) -> AgentCommands:
    """``after`` acknowledges commands in the numbering of ``controller_id`` (the controller
    the agent last registered with). Another controller numbers its commands afresh, so a
    poll that an agent sent before its welcome from this one (its loops race a restart)
    acknowledges nothing here: it is answered at once, empty, and the agent asks again."""
    for_node(who, node)
    if controller_id is not None and controller_id != service.id:
        return AgentCommands(controller_id=service.id, epoch=epoch, commands=[])
    health = NodeFacts()
    if cpu_load is not None:
        health["cpu_load"] = cpu_load
    if free_mem_mb is not None:
        health["free_mem_mb"] = free_mem_mb
    out = await service.commands(node, boot_id, epoch, after, wait, health)
    return AgentCommands(controller_id=service.id, epoch=epoch, commands=out)


@router.post("/v1/agents/{node}/reports", response_model=ReportsAck, responses=AGENT_ERRORS)
async def reports(
    node: Annotated[str, Path(pattern=NODE_PATTERN)],
    body: AgentReports,
    who: AgentCaller,
    service: Svc,
) -> ReportsAck:
    for_node(who, node)
    if body.inventory and body.controller_id and body.controller_id != service.id:
        # Its ``after`` counts in another controller's numbering: the ends it carries are
        # taken, the inventory waits for one that this controller's numbering can read.
        body = body.model_copy(update={"inventory": False})
    acked = service.reports(node, body)
    return ReportsAck(acked=[list(k) for k in acked])


@router.post("/v1/agents/{node}/faults", status_code=204, responses=AGENT_ERRORS)
async def fault(
    node: Annotated[str, Path(pattern=NODE_PATTERN)],
    body: AgentFault,
    who: AgentCaller,
    service: Svc,
) -> None:
    """A health check failed on the node: it is drained (a fatal fault ends its jobs now)."""
    for_node(who, node)
    service.fault(node, body)
