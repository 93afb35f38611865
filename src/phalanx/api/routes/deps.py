"""What the routes are given by FastAPI (``Depends``): the service, the caller, an
administrator; and the small parsers of query parameters they share.

The app keeps the service and the ``Access`` in ``app.state`` (``create_app``); a router
module holds no state of its own, so one process can serve several apps.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from phalanx.api.routes.access import Access
from phalanx.api.service import Service
from phalanx.domain.caller import Caller
from phalanx.errors import InputError, NotAllowed

__all__ = ["Admin", "AgentCaller", "JobIds", "Svc", "Who", "for_node", "job_ids", "states"]

JobIds = list[int | tuple[int, int]]
"""Job ids, and (array job, task) for ``A_T``."""


async def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


async def _any_caller(request: Request) -> Caller:
    access: Access = request.app.state.access
    return access.caller(request)


async def _caller(who: Annotated[Caller, Depends(_any_caller)]) -> Caller:
    if who.node is not None:
        raise NotAllowed(
            f"the credential of node {who.node}'s agent serves the agent protocol only"
        )
    return who


async def _agent(who: Annotated[Caller, Depends(_any_caller)]) -> Caller:
    """An administrator, or a node's agent with its own credential (the routes check that
    it acts for its own node: ``for_node``)."""
    if not (who.admin or who.node is not None):
        raise NotAllowed(f"{who.name} is not an administrator")
    return who


def for_node(who: Caller, node: str) -> None:
    """``NotAllowed`` unless ``who`` may act for ``node``'s agent."""
    if who.node is not None and who.node != node:
        raise NotAllowed(f"the credential of node {who.node}'s agent cannot act for {node}")


async def _admin(who: Annotated[Caller, Depends(_caller)]) -> Caller:
    if not who.admin:
        raise NotAllowed(f"{who.name} is not an administrator")
    return who


# ``async``: FastAPI would run a plain ``def`` dependency in its thread pool, a thread hop
# per request for nothing. Module level: FastAPI resolves the (string) annotations in the
# routers' namespaces.
Svc = Annotated[Service, Depends(_service)]
Who = Annotated[Caller, Depends(_caller)]
Admin = Annotated[Caller, Depends(_admin)]
AgentCaller = Annotated[Caller, Depends(_agent)]


def job_ids(text: str | None, field: str = "ids") -> JobIds | None:
    """``ids`` as a list (None when not given): job ids, and ``A_T`` for task T of array A
    (Slurm's array task ids); ``InputError`` naming ``field`` for anything else."""
    if not text:
        return None
    out: JobIds = []
    for part in text.split(","):
        job, _, task = part.strip().partition("_")
        if not job.isdecimal() or (task and not task.isdecimal()):
            raise InputError(f"not a job id: {part.strip()!r}", field=field)
        out.append((int(job), int(task)) if task else int(job))
    return out


def states(text: str | None) -> list[str] | None:
    """A comma-separated ``state`` filter as a list (None when not given)."""
    return [s for s in text.split(",") if s] if text else None
