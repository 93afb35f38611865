"""The cluster as ``sinfo`` and ``scontrol show node|partition`` read it: nodes with what is
allocated on them and what their agents said, and partitions."""

from __future__ import annotations

from fastapi import APIRouter

from phalanx.api.routes.deps import Svc, Who
from phalanx.api.routes.errors import ERRORS
from phalanx.api.service import Service
from phalanx.api.wire import ErrorBody, NodeInfo, NodeUpdateRequest, PartitionInfo

CHANGE_ERRORS = {**ERRORS, 409: {"model": ErrorBody, "description": "not drained or down"}}

__all__ = ["router"]

router = APIRouter()


@router.get("/v1/nodes", response_model=list[NodeInfo])
async def nodes(who: Who, service: Svc) -> list[NodeInfo]:
    return _nodes(service, None)


@router.patch("/v1/nodes", response_model=list[NodeInfo], responses=CHANGE_ERRORS)
async def update_nodes(change: NodeUpdateRequest, who: Who, service: Svc) -> list[NodeInfo]:
    """Drain, down or resume nodes, as ``scontrol update NodeName=... State=...``; the
    nodes as they are now."""
    service.update_nodes(change.nodes, change.state, change.reason, who, kill=change.kill)
    return _nodes(service, set(change.nodes))


def _nodes(service: Service, names: set[str] | None) -> list[NodeInfo]:
    cluster = service.cluster
    usage = service.node_usage()
    mem = service.node_mem_alloc()
    member: dict[int, list[str]] = {}
    for part in cluster.partitions.values():
        for i in part.nodes:
            member.setdefault(i, []).append(part.name)
    out = []
    for node in cluster.nodes:
        if names is not None and node.name not in names:
            continue
        gpus, cpus = usage[node.index]
        down = service.node_down(node.name)
        note = service.node_note(node.name)
        state = "down" if down else ("allocated" if gpus or cpus else "idle")
        if not down and 0 < gpus < node.gpus:
            state = "mixed"
        if not down and note is not None:  # Slurm: DRAINING while jobs run, then DRAINED
            state = "drained" if state == "idle" else "draining"
        reason = "Not responding" if down and note is None else ""
        out.append(
            NodeInfo(
                name=node.name,
                state=state,
                gpus=node.gpus,
                gpus_alloc=gpus,
                gpu_model=node.gpu_model,
                cpus=node.cpus,
                cpus_alloc=cpus,
                memory_mb=node.memory_mb,
                leaf=cluster.leaves[node.leaf].name,
                partitions=member.get(node.index, []),
                agent=service.agent_registered(node.name),
                reason=note.reason if note is not None else reason,
                reason_user=note.user if note is not None else None,
                reason_time=note.at if note is not None else None,
                mem_alloc_mb=mem[node.index],
                **service.node_facts(node.name),
            )
        )
    return out


@router.get("/v1/partitions", response_model=list[PartitionInfo])
async def partitions(who: Who, service: Svc) -> list[PartitionInfo]:
    cluster = service.cluster
    return [
        PartitionInfo(
            name=p.name,
            nodes=[cluster.nodes[i].name for i in p.nodes],
            default=p.default,
            max_time_ms=p.max_time,
            default_time_ms=p.default_time,
            priority_tier=p.priority_tier,
        )
        for p in cluster.partitions.values()
    ]
