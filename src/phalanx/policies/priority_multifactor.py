"""``priority/multifactor``: Slurm's weighted sum of normalised factors, kept per factor.

priority = w_age*age + w_fs*fairshare + w_size*jobsize + w_part*partition + w_qos*qos - nice

- age: time pending / ``max_age`` (default 7 days), capped at 1. With ``age_size_exponent`` a
  (Phalanx's own, default 0: Slurm's), the age weight of a job of g GPUs is ``w_age x g^a``: a
  gang that has waited as long as a 1-GPU job outranks it by its size, since each hour it waits
  holds back g GPU-hours of work. With ``requeued_full_age`` (also
  Phalanx's own), a job requeued after it ran (preempted, or its node failed) counts as fully
  aged: it already waited its turn once.
- fairshare: from the account tree (``FairShareTree``), classic or Fair Tree.
- jobsize: nodes / cluster nodes, or ``1 - that`` with ``favor_small``.
- partition: the partition's ``priority_job_factor`` / the largest in the cluster.
- qos: the QOS priority / the largest QOS priority.

Defaults are the weights of the reference Slurm in ``shared/slurm`` (Age 1000, Fairshare
10000, JobSize 1000, Partition 1000, QOS 1000).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt
from mypy_extensions import mypyc_attr

from phalanx.domain.time import DAY, Instant
from phalanx.policies.clusterqueue.admission import ClusterQueueAdmission
from phalanx.policies.fairshare_tree import FairShareTree
from phalanx.policies.priority_rows import FactorRows, Static
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job

__all__ = ["MultifactorPriority"]


def _num(params: Mapping[str, object], key: str, default: float) -> float:
    value = params.get(key, default)
    if not isinstance(value, int | float):
        raise TypeError(f"priority/multifactor: {key} must be a number")
    return float(value)


@mypyc_attr(allow_interpreted_subclasses=True)
class MultifactorPriority:
    def __init__(self, params: Mapping[str, object]) -> None:
        self.w_age = _num(params, "weight_age", 1000)
        self.w_fs = _num(params, "weight_fairshare", 10000)
        self.w_size = _num(params, "weight_jobsize", 1000)
        self.w_part = _num(params, "weight_partition", 1000)
        self.w_qos = _num(params, "weight_qos", 1000)
        self.w_short = _num(params, "weight_short", 0)
        """Phalanx's own factor: favours short time limits (1 - limit/max_limit)."""
        self.max_age = int(_num(params, "max_age_ms", 7 * DAY))
        self.age_exp = _num(params, "age_size_exponent", 0.0)
        self.requeued_full_age = bool(params.get("requeued_full_age", False))
        self.max_limit = int(_num(params, "short_horizon_ms", 7 * DAY))
        cap = params.get("short_cap_ms")
        if cap is not None and (not isinstance(cap, int | float) or cap <= 0):
            raise TypeError("priority/multifactor: short_cap_ms must be a positive number")
        self.short_cap = self.max_limit if cap is None else min(int(cap), self.max_limit)
        """Time limits beyond this count as this long in the short factor (Phalanx's own; default
        the horizon): the factor then tells minutes from hours from half-days, and every job
        longer than the cap loses the same, bounded, place to fresh short jobs."""
        self.favor_small = bool(params.get("favor_small", False))
        self.queues_first = bool(params.get("queues_first", False))
        """Under ClusterQueues, jobs that fit their queue's nominal quota go before those that
        would borrow, each in priority order (Kueue's entry ordering): what a reclaim frees
        goes to the queue that reclaimed it, not back to a borrower."""
        self._admission = ClusterQueueAdmission({}) if self.queues_first else None
        self.algorithm = str(params.get("fairshare", "fair_tree"))
        self._tree: FairShareTree | None = None
        self._rows = FactorRows()
        self._max_part: int | None = None
        self._max_qos = 0
        self._tree_version: Instant = -1
        self._fs: dict[str, float] = {}

    def _fairshare(self, job: Job, ctx: PassContext) -> float:
        return self._fairshare_of(job.account, ctx)

    def _fairshare_of(self, account: str, ctx: PassContext) -> float:
        if self.w_fs == 0:
            return 0.0
        usage = ctx.usage
        # Factors depend only on usage, which changes once per recalculation period.
        if self._tree_version != usage.updated:
            tree = self._tree
            if tree is None:
                tree = self._tree = FairShareTree(ctx.cluster, usage, self.algorithm)
            tree.refresh(set(usage.raw))
            self._tree_version = usage.updated
            self._fs = {}
        value = self._fs.get(account)
        if value is None:
            assert self._tree is not None
            value = self._fs[account] = self._tree.factor(account)
        return value

    def _static(self, job: Job, ctx: PassContext) -> Static:
        """Factors that never change while a job waits: size, partition, QOS, short; their
        sum; the job's own age weight."""
        cluster = ctx.cluster
        if self._max_part is None:
            self._max_part = max(
                (p.priority_job_factor for p in cluster.partitions.values()), default=1
            )
            self._max_qos = max((q.priority for q in cluster.qos.values()), default=0)
        size = job.shape.nodes_min / max(len(cluster.nodes), 1)
        if self.favor_small:
            size = 1.0 - size
        part = cluster.partitions.get(job.partition)
        max_part = self._max_part
        part_f = (part.priority_job_factor / max_part) if part is not None and max_part else 0.0
        qos = cluster.qos_for(job.spec.qos)
        max_qos = self._max_qos
        qos_f = (qos.priority / max_qos) if qos is not None and max_qos > 0 else 0.0
        limit = min(job.time_limit, self.short_cap)
        short = max(0.0, 1.0 - limit / self.max_limit) if self.w_short else 0.0
        parts = (self.w_size * size, self.w_part * part_f, self.w_qos * qos_f, self.w_short * short)
        age_weight = self.w_age
        if self.age_exp:
            age_weight *= max(1.0, job.gpus) ** self.age_exp
        return (*parts, sum(parts), age_weight)

    def compute(
        self, job: Job, ctx: PassContext, now: Instant
    ) -> tuple[float, Mapping[str, float]]:
        rows = self._rows
        row = rows.row(job.seq, job.submit, job.spec.nice, job.spec.account)
        if rows.gen[row] == rows.current:
            static = rows.statics[row]
        else:
            static = self._static(job, ctx)
            rows.set_static(row, static)
        age = now - job.submit
        # Not cached: a job requeued after its factors were cached has restarts now.
        max_age = 0 if self.requeued_full_age and job.restarts else self.max_age
        w_age = static[5] * (1.0 if age >= max_age else (age / max_age if age > 0 else 0.0))
        fs = self._fs.get(job.account) if self._tree_version == ctx.usage.updated else None
        if fs is None:
            fs = self._fairshare(job, ctx)
        w_fs = self.w_fs * fs
        nice = -job.spec.nice
        rows.w_age[row] = w_age
        rows.w_fs[row] = w_fs
        return w_age + w_fs + static[4] + nice, rows.views[row]

    def compute_many(
        self, jobs: Sequence[Job], ctx: PassContext, now: Instant
    ) -> list[tuple[float, Mapping[str, float]]]:
        rows = self._rows
        row_of = rows.row_of
        try:
            where = [row_of[job.seq] for job in jobs]
        except KeyError:  # jobs never computed (not queued by the engine): rows for them
            missing = [job for job in jobs if job.seq not in row_of]
            rows.reserve(len(missing))  # no row of these jobs may be given up meanwhile
            for job in missing:
                rows.row(job.seq, job.submit, job.spec.nice, job.spec.account)
            row_of = rows.row_of
            where = [row_of[job.seq] for job in jobs]
        total: list[float] = self._totals(jobs, np.array(where, np.intp), ctx, now).tolist()
        return list(zip(total, map(rows.views.__getitem__, where), strict=True))

    def priorities(
        self, jobs: Sequence[Job], ctx: PassContext, now: Instant, seqs: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float64] | None:
        """``Reprioritizes``: ``compute_many``'s priorities, for jobs that have rows (every job
        the engine queued was computed, and its factors are its row's view). The rows are
        found from ``seqs`` over arrays."""
        rows = self._rows
        where = rows.rows_of(seqs)
        if where is None:
            row_of = rows.row_of
            try:
                where = np.array([row_of[job.seq] for job in jobs], np.intp)
            except KeyError:
                return None
        return self._totals(jobs, where, ctx, now)

    def _totals(
        self, jobs: Sequence[Job], idx: npt.NDArray[np.intp], ctx: PassContext, now: Instant
    ) -> npt.NDArray[np.float64]:
        # The same sum as ``compute``, term by term in the same order, over the rows' numpy
        # columns: every operation is one IEEE double operation on the same operands as
        # ``compute``'s (ints below 2**53 convert exactly), so the values, and with them the
        # queue's order and its ties, are bit for bit those of ``compute``. A queued job's
        # submit time, nice and account are those ``compute`` wrote when it was queued (the
        # engine changes none of them while a job is queued).
        rows = self._rows
        # Static factors are reused only for jobs in the last calculation or computed since.
        for i in (rows.gen[idx] != rows.current).nonzero()[0].tolist():
            rows.set_static(int(idx[i]), self._static(jobs[i], ctx))
        rows.current += 1
        rows.gen[idx] = rows.current
        n = len(jobs)
        age = now - rows.submit[idx]
        # 1 from max_age on, age/max_age below it, 0 for no age yet (``compute``'s branches).
        if self.requeued_full_age or self.max_age <= 0:
            max_age = np.full(n, self.max_age, np.int64)
            if self.requeued_full_age:
                max_age[np.array([job.restarts for job in jobs], np.int64) > 0] = 0
            ratio = np.zeros(n)
            np.divide(age, max_age, out=ratio, where=(age < max_age) & (age > 0))
            ratio[age >= max_age] = 1.0
        else:
            # One maximum for all: the age clipped to [0, max_age], divided (0/max_age is 0,
            # max_age/max_age exactly 1, the same division in between). Clipped by the two
            # ufuncs themselves: ``np.clip``'s Python wrapper costs more than they do.
            ratio = np.minimum(np.maximum(age, 0), self.max_age) / self.max_age
        w_age = rows.age_weight[idx] * ratio
        w_fs = self._weighted_fairshare(rows.account[idx], ctx)
        rows.w_age[idx] = w_age
        rows.w_fs[idx] = w_fs
        total = w_age + w_fs
        total += rows.static_sum[idx]
        total += rows.nice[idx]
        return total

    def _weighted_fairshare(
        self, accounts: npt.NDArray[np.intp], ctx: PassContext
    ) -> npt.NDArray[np.float64]:
        """``w_fs`` x the fair-share factor of each account index, computed once each."""
        if not self.w_fs:
            return np.zeros(len(accounts))
        w_fs = self.w_fs
        names = self._rows.accounts
        table = np.zeros(len(names))
        # The accounts present, ascending (as ``np.unique`` gives them, without its sort).
        present = np.zeros(len(names), np.bool_)
        present[accounts] = True
        for a in present.nonzero()[0].tolist():
            table[a] = w_fs * self._fairshare_of(names[a], ctx)
        return table[accounts]

    def order(self, jobs: Sequence[Job], ctx: PassContext) -> Iterable[Job]:
        if self._admission is not None and ctx.cluster.queues.cluster_queues:
            return self._admission.nonborrowing_first(jobs, ctx)
        return jobs  # the queue's own order

    def compact(self) -> None:
        """``Compacts``: the rows of jobs in no calculation since the last are given up."""
        self._rows.compact()
