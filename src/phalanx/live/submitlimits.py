"""Slurm's submit limits (``MaxSubmitJobs``, ``GrpSubmitJobs``, a QOS's
``MaxSubmitJobsPerUser`` and ``GrpSubmitJobs``) checked as a submission arrives, over the
jobs the controller holds that are pending or running (``domain.associations``)."""

from __future__ import annotations

from collections.abc import Iterable

from phalanx.domain.associations import Limits, active_keys, submit_refusal
from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.sched.job import Job

__all__ = ["has_submit_limits", "submit_limit"]

_NONE = Limits()


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
