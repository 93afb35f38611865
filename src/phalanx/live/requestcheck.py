"""What the controller checks before it accepts a request: a submission Slurm would refuse
(``check``), and an administrator's ``sacctmgr`` change (``change_accounting``).

Slurm's submit limits (``MaxSubmitJobs``, ``GrpSubmitJobs``, a QOS's
``MaxSubmitJobsPerUser`` and ``GrpSubmitJobs``) count the jobs the controller holds that are
pending or running (``domain.associations``), so they are counted only where one is set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from phalanx.domain.accounting import AccountingError, change
from phalanx.domain.associations import Limits, active_keys, submit_refusal
from phalanx.domain.caller import Caller
from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.state import Reason
from phalanx.engine import AccountingChange, Engine
from phalanx.errors import NotAllowed, SpecError
from phalanx.sched.job import Job

if TYPE_CHECKING:  # the controller calls this module
    from phalanx.live.controller import Controller

__all__ = ["Pairs", "change_accounting", "check", "has_submit_limits", "submit_limit"]

Pairs = Sequence[tuple[str, str]]
_NONE = Limits()


def check(cluster: Cluster, engine: Engine, settle: Callable[[], object], spec: JobSpec) -> None:
    """Refuse (``SpecError``), as Slurm does at submission, a request that can never run
    here; an unknown QOS and partition limits only where the cluster enforces them, submit
    limits where some are set (``settle`` first, so every accepted submission counts)."""
    part = cluster.partition(spec.partition)
    if part is None:
        raise SpecError(f"invalid partition specified: {spec.partition}", field="partition")
    if cluster.enforce_qos and spec.qos not in cluster.qos:
        raise SpecError(f"invalid qos specification: {spec.qos}", field="qos")
    if has_submit_limits(cluster):
        settle()
        refused = submit_limit(cluster, engine.jobs.values(), spec)
        if refused:
            raise SpecError(refused, field="limits")
    limit = part.exceeded_by(spec.nodes_min, spec.time_limit)
    if cluster.enforce_part_limits and limit == Reason.PARTITION_CONFIG:
        raise SpecError(
            f"{spec.nodes_min} nodes asked for, partition {part.name} has {len(part.nodes)}",
            field="nodes",
        )
    if cluster.enforce_part_limits and limit == Reason.PARTITION_TIME:
        raise SpecError(f"time limit over partition {part.name}'s MaxTime", field="time")
    problem = engine.never_fits(spec)
    if problem is not None:
        raise SpecError(problem, field="resources")


def change_accounting(
    controller: Controller,
    caller: Caller,
    request: tuple[str, str, Sequence[str], Pairs, Pairs],
) -> list[str]:
    """Check ``sacctmgr``'s (verb, entity, names, where, settings) against the accounting
    as it is, journal it (``AccountingChange``, replayed after a restart) and return what
    sacctmgr prints; ``NotAllowed`` for a user who is not an administrator,
    ``SpecError`` (field ``accounting``, sacctmgr's message) for a change it refuses."""
    if not caller.admin:
        raise NotAllowed(" Your user doesn't have privilege to perform this action")
    verb, entity, names, where, settings = request
    controller.loop.settle()  # every change accepted before is applied: checked against it
    try:
        _, lines = change(controller.cluster, verb, entity, names, where, settings)
    except AccountingError as exc:
        raise SpecError(str(exc), field="accounting") from None
    event = AccountingChange(
        controller.clock.now(),
        verb,
        entity,
        tuple(names),
        tuple((str(k), str(v)) for k, v in where),
        tuple((str(k), str(v)) for k, v in settings),
        caller.name,
    )
    controller.loop.accept([event])
    controller.loop.settle()  # applied before the answer: the next command sees it
    return lines


def has_submit_limits(cluster: Cluster) -> bool:
    assocs = cluster.associations.by_key.values()
    return any(
        a.limits.max_submit is not None or a.limits.grp_submit is not None for a in assocs
    ) or any(
        q.limits.max_submit is not None or q.limits.grp_submit is not None
        for q in cluster.qos.values()
    )


def submit_limit(cluster: Cluster, jobs: Iterable[Job], spec: JobSpec) -> str:
    """The reason ``spec`` is refused at submission ("" if it is not). Counting walks the
    jobs held: callers ask only where ``has_submit_limits``."""
    assocs = cluster.associations
    found = cluster.qos_for(spec.qos)
    qos = found.name if found is not None else spec.qos
    limits = found.limits if found is not None else _NONE
    wanted = set(active_keys(assocs, qos, spec.account, spec.user))
    active: dict[object, int] = {}
    for job in jobs:
        if job.state.is_final:
            continue
        held = cluster.qos_for(job.spec.qos)
        name = held.name if held is not None else job.spec.qos
        for key in active_keys(assocs, name, job.account, job.spec.user):
            if key in wanted:
                active[key] = active.get(key, 0) + 1
    return submit_refusal(assocs, qos, limits, spec.account, spec.user, active)
