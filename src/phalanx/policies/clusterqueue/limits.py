"""Slurm's association and QOS limits as quotas (``phalanx.domain.associations``), held by
``admit/clusterqueue`` for every job, with or without ClusterQueues.

A pass starts from what the running jobs hold, added up the way the limits read it: per
association on the job's chain (its own, then each account up to ``root``: the ``Grp``
limits), per account and user (``MaxJobs``), per QOS (``Grp``) and per QOS and user
(``MaxTRESPerUser``, ``MaxJobsPerUser``). A job is checked against the limits of its chain
and its QOS, each check a lookup: the cost is the depth of its account, not the number of
associations or jobs. A job let through is counted at once (its largest shape, as the
ClusterQueue admission counts it), so later jobs in the pass see it; it keeps that count for
the rest of the pass even if it finds no placement, as an admitted ClusterQueue workload does.
"""

from __future__ import annotations

from collections.abc import Iterable

from mypy_extensions import mypyc_attr

from phalanx.domain.associations import (
    GPU_TRES,
    Associations,
    Limits,
    Tres,
    format_tres,
    tres_reason,
)
from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import MILLI
from phalanx.sched.capacity import Allocation
from phalanx.sched.job import Job
from phalanx.sched.status import OK, Status

__all__ = ["Ledger", "job_tres", "limits_apply"]

Counts = dict[str, int]
_NO_LIMITS = Limits()


def limits_apply(cluster: Cluster) -> bool:
    """Whether any association or QOS of ``cluster`` has a limit (else nothing to count)."""
    return bool(cluster.associations) or any(q.limits for q in cluster.qos.values())


def job_tres(job: Job, alloc: Allocation | None = None) -> Counts:
    """What a job holds (``alloc``) or asks at its largest shape, as TRES counts."""
    shape = job.shape
    if alloc is not None:
        nodes = len(alloc.nodes)
        gpus = -(-alloc.milli // MILLI) if alloc.milli else sum(len(d) for d in alloc.devices)
        cpus, mem = nodes * alloc.cpus, nodes * alloc.mem_mb
    else:
        nodes = shape.nodes_max
        gpus = nodes * shape.gpus + -(-shape.milli // MILLI)
        cpus, mem = nodes * shape.cpus, nodes * shape.mem_mb
    return {"cpu": cpus, "mem": mem, "node": nodes, GPU_TRES: gpus}


def _add(into: dict[object, Counts], key: object, tres: Counts) -> None:
    found = into.get(key)
    if found is None:
        into[key] = dict(tres)
        return
    for name, count in tres.items():
        found[name] = found.get(name, 0) + count


def _over(limit: Tres, used: Counts | None, asked: Counts, skip: Iterable[str] = ()) -> str:
    """The first TRES of ``limit`` that ``used + asked`` passes ("" for none)."""
    for name, most in limit:
        if name in skip:
            continue
        if (used.get(name, 0) if used else 0) + asked.get(name, 0) > most:
            return name
    return ""


@mypyc_attr(allow_interpreted_subclasses=True)
class Ledger:
    """One pass's usage against the limits (module docstring)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.assocs: Associations = cluster.associations
        self.tres: dict[object, Counts] = {}
        """Association key, ("qos", name) or ("qos-user", name, user) -> TRES held."""
        self.jobs: dict[object, int] = {}
        """The same keys and ("user", account, user) -> running jobs."""

    def _keys(self, job: Job) -> tuple[list[object], str]:
        spec = job.spec
        qos = self.cluster.qos_for(spec.qos)
        qname = qos.name if qos is not None else spec.qos
        keys: list[object] = [
            (a.account, a.user) for a in self.assocs.chain(job.account, spec.user)
        ]
        keys += [("qos", qname), ("qos-user", qname, spec.user)]
        return keys, qname

    def add(self, job: Job, tres: Counts) -> None:
        keys, _ = self._keys(job)
        for key in keys:
            _add(self.tres, key, tres)
            self.jobs[key] = self.jobs.get(key, 0) + 1
        mine = ("user", job.account, job.spec.user)
        self.jobs[mine] = self.jobs.get(mine, 0) + 1

    def check(self, job: Job, tres: Counts, plugin: str) -> Status:
        """OK, or why ``job`` (asking ``tres``) waits: the first limit it would pass,
        the QOS's before the association's, with Slurm's reason."""
        spec = job.spec
        qos = self.cluster.qos_for(spec.qos)
        ql = qos.limits if qos is not None else _NO_LIMITS
        qname = qos.name if qos is not None else spec.qos
        who = f"user {spec.user}"
        # QOS limits first (Slurm's acct_policy order).
        name = _over(ql.max_tres, None, tres)
        if name:
            return self._wait(
                tres_reason("QOSMaxPerJob", name),
                plugin,
                f"QOS {qname}",
                "MaxTRESPerJob",
                ql.max_tres,
                None,
                tres,
                name,
            )
        key: object = ("qos-user", qname, spec.user)
        name = _over(ql.max_tres_per_user, self.tres.get(key), tres)
        if name:
            return self._wait(
                tres_reason("QOSMaxPerUser", name),
                plugin,
                f"QOS {qname} for {who}",
                "MaxTRESPerUser",
                ql.max_tres_per_user,
                self.tres.get(key),
                tres,
                name,
            )
        if ql.max_jobs is not None and self.jobs.get(key, 0) >= ql.max_jobs:
            return Status.wait_because(
                "QOSMaxJobsPerUserLimit",
                plugin,
                f"QOS {qname}: {who} runs {self.jobs.get(key, 0)} jobs, MaxJobsPerUser "
                f"{ql.max_jobs}",
            )
        key = ("qos", qname)
        name = _over(ql.grp_tres, self.tres.get(key), tres)
        if name:
            return self._wait(
                tres_reason("QOSGrp", name),
                plugin,
                f"QOS {qname}",
                "GrpTRES",
                ql.grp_tres,
                self.tres.get(key),
                tres,
                name,
            )
        if ql.grp_jobs is not None and self.jobs.get(key, 0) >= ql.grp_jobs:
            return Status.wait_because(
                "QOSGrpJobsLimit",
                plugin,
                f"QOS {qname} runs {self.jobs.get(key, 0)} jobs, GrpJobs {ql.grp_jobs}",
            )
        # Then the association's, where the QOS sets no limit of the same kind.
        qos_grp = {n for n, _ in ql.grp_tres}
        qos_max = {n for n, _ in ql.max_tres}
        own = self.assocs.inherited(job.account, spec.user)
        name = _over(own.max_tres, None, tres, qos_max)
        if name:
            return self._wait(
                tres_reason("AssocMaxPerJob", name),
                plugin,
                f"association of {who} in account {job.account}",
                "MaxTRES",
                own.max_tres,
                None,
                tres,
                name,
            )
        if ql.max_jobs is None and own.max_jobs is not None:
            running = self.jobs.get(("user", job.account, spec.user), 0)
            if running >= own.max_jobs:
                return Status.wait_because(
                    "AssocMaxJobsLimit",
                    plugin,
                    f"{who} runs {running} jobs in account {job.account}, MaxJobs {own.max_jobs}",
                )
        for assoc in self.assocs.chain(job.account, spec.user):
            lim = assoc.limits
            if not lim:
                continue
            key = (assoc.account, assoc.user)
            what = (
                f"association of user {assoc.user} in account {assoc.account}"
                if assoc.user
                else f"account {assoc.account}"
            )
            name = _over(lim.grp_tres, self.tres.get(key), tres, qos_grp)
            if name:
                return self._wait(
                    tres_reason("AssocGrp", name),
                    plugin,
                    what,
                    "GrpTRES",
                    lim.grp_tres,
                    self.tres.get(key),
                    tres,
                    name,
                )
            if (
                ql.grp_jobs is None
                and lim.grp_jobs is not None
                and self.jobs.get(key, 0) >= lim.grp_jobs
            ):
                return Status.wait_because(
                    "AssocGrpJobsLimit",
                    plugin,
                    f"{what} runs {self.jobs.get(key, 0)} jobs, GrpJobs {lim.grp_jobs}",
                )
        return OK

    @staticmethod
    def _wait(
        reason: str,
        plugin: str,
        what: str,
        limit_name: str,
        limit: Tres,
        used: Counts | None,
        asked: Counts,
        tres: str,
    ) -> Status:
        held = used.get(tres, 0) if used else 0
        most = dict(limit)[tres]
        in_use = (
            f", {held} in use" if limit_name != "MaxTRESPerJob" and limit_name != "MaxTRES" else ""
        )
        return Status.wait_because(
            reason,
            plugin,
            f"{what} at its {limit_name} {format_tres(((tres, most),))}{in_use}, the job asks "
            f"{asked.get(tres, 0)}",
        )
