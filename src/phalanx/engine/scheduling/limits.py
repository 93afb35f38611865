"""Step 3a of the pass, the cluster's own pre-filter: limits the configuration sets.

A job array's ``%N`` throttle, a partition's MaxTime and a QOS's per-account GPU limit
(GrpTRES), with Slurm's reasons. Profile pre-filter plugins (``admit/*``) run after it.
"""

from __future__ import annotations

from mypy_extensions import mypyc_attr

from phalanx.domain.cluster import Cluster
from phalanx.domain.state import Reason
from phalanx.sched.job import Job
from phalanx.sched.occupancy import Occupancy
from phalanx.sched.status import OK, Status

__all__ = ["ClusterLimits"]


@mypyc_attr(allow_interpreted_subclasses=True)
class ClusterLimits:
    plugin = "engine"

    def __init__(self, cluster: Cluster, state: Occupancy, array_running: dict[int, int]) -> None:
        self._cluster = cluster
        self._state = state
        self._array_running = array_running
        self.any_rules = any(
            q.max_gpus_per_account is not None for q in cluster.qos.values()
        ) or any(p.max_time is not None for p in cluster.partitions.values())
        """Whether any job but an array task could be refused."""

    def check(self, job: Job) -> Status:
        spec = job.spec
        throttle = spec.array.throttle if spec.array is not None else None
        if (
            throttle
            and job.array_job_id is not None
            and self._array_running.get(job.array_job_id, 0) >= throttle
        ):
            return Status.wait(Reason.ARRAY_LIMIT, self.plugin)
        part = self._cluster.partitions.get(job.partition)
        if part is not None and part.max_time is not None and job.time_limit > part.max_time:
            return Status.wait(Reason.PARTITION_TIME, self.plugin)
        qos = self._cluster.qos_for(spec.qos)
        if qos is not None and qos.max_gpus_per_account is not None:
            used = self._state.account_gpus.get(job.account, 0.0)
            if used + job.gpus > qos.max_gpus_per_account:
                return Status.wait(Reason.QOS_QUOTA, self.plugin)
        return OK
