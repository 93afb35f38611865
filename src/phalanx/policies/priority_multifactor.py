"""``priority/multifactor``: Slurm's weighted sum of normalised factors, kept per factor.

priority = w_age*age + w_fs*fairshare + w_size*jobsize + w_part*partition + w_qos*qos - nice

- age: time pending / ``max_age`` (default 7 days), capped at 1.
- fairshare: from the account tree (``FairShareTree``), classic or Fair Tree.
- jobsize: nodes / cluster nodes, or ``1 - that`` with ``favor_small``.
- partition: the partition's ``priority_job_factor`` / the largest in the cluster.
- qos: the QOS priority / the largest QOS priority.

Defaults are the weights of the reference Slurm in ``shared/slurm`` (Age 1000, Fairshare
10000, JobSize 1000, Partition 1000, QOS 1000).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from phalanx.domain.time import DAY, Instant
from phalanx.policies.fairshare_tree import FairShareTree
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job

__all__ = ["MultifactorPriority"]


def _num(params: Mapping[str, object], key: str, default: float) -> float:
    value = params.get(key, default)
    if not isinstance(value, int | float):
        raise TypeError(f"priority/multifactor: {key} must be a number")
    return float(value)


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
        self.max_limit = int(_num(params, "short_horizon_ms", 7 * DAY))
        self.favor_small = bool(params.get("favor_small", False))
        self.algorithm = str(params.get("fairshare", "fair_tree"))
        self._tree: FairShareTree | None = None
        self._statics: dict[int, tuple[float, float, float, float, float]] = {}
        self._max_part: int | None = None
        self._max_qos = 0
        self._tree_version = -1.0
        self._fs: dict[str, float] = {}

    def _fairshare(self, job: Job, ctx: PassContext) -> float:
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
        value = self._fs.get(job.account)
        if value is None:
            assert self._tree is not None
            value = self._fs[job.account] = self._tree.factor(job.account)
        return value

    def _static(self, job: Job, ctx: PassContext) -> tuple[float, float, float, float, float]:
        """Factors that never change while a job waits: size, partition, QOS, short."""
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
        short = max(0.0, 1.0 - job.time_limit / self.max_limit) if self.w_short else 0.0
        parts = (self.w_size * size, self.w_part * part_f, self.w_qos * qos_f, self.w_short * short)
        return (*parts, sum(parts))

    def compute(
        self, job: Job, ctx: PassContext, now: Instant
    ) -> tuple[float, Mapping[str, float]]:
        static = self._statics.get(job.seq)
        if static is None:
            static = self._statics[job.seq] = self._static(job, ctx)
        age = now - job.submit
        max_age = self.max_age
        w_age = self.w_age * (1.0 if age >= max_age else (age / max_age if age > 0 else 0.0))
        fs = self._fs.get(job.account) if self._tree_version == ctx.usage.updated else None
        if fs is None:
            fs = self._fairshare(job, ctx)
        w_fs = self.w_fs * fs
        nice = -job.spec.nice
        priority = w_age + w_fs + static[4] + nice
        return priority, _Factors(w_age, w_fs, static, nice)

    def compute_many(
        self, jobs: Sequence[Job], ctx: PassContext, now: Instant
    ) -> list[tuple[float, Mapping[str, float]]]:
        # The same sum as ``compute``, with the per-account fair share and the loop-invariant
        # lookups hoisted: recalculation touches every pending job every period.
        # Only the jobs still pending keep their cached static factors (the cache must not
        # grow with every job a long-lived controller has seen).
        old = self._statics
        statics: dict[int, tuple[float, float, float, float, float]] = {}
        self._statics = statics
        fs_of: dict[str, float] = {}
        max_age, w_age_max, w_fs = self.max_age, self.w_age, self.w_fs
        out: list[tuple[float, Mapping[str, float]]] = []
        append = out.append
        for job in jobs:
            seq = job.seq
            static = old.get(seq)
            if static is None:
                static = self._static(job, ctx)
            statics[seq] = static
            account = job.spec.account
            fs = fs_of.get(account)
            if fs is None:
                fs = fs_of[account] = w_fs * self._fairshare(job, ctx) if w_fs else 0.0
            age = now - job.submit
            w_age = w_age_max * (1.0 if age >= max_age else (age / max_age if age > 0 else 0.0))
            nice = -job.spec.nice
            append((w_age + fs + static[4] + nice, _Factors(w_age, fs, static, nice)))
        return out

    def order(self, jobs: Sequence[Job], ctx: PassContext) -> Iterable[Job]:
        return jobs  # the queue's own order


class _Factors(Mapping[str, float]):
    """The breakdown ``sprio`` prints, built only when someone reads it."""

    __slots__ = ("_age", "_fs", "_nice", "_static")
    _NAMES = ("age", "fairshare", "jobsize", "partition", "qos", "short", "nice")

    def __init__(
        self,
        age: float,
        fs: float,
        static: tuple[float, float, float, float, float],
        nice: float,
    ) -> None:
        # Built for every pending job at every recalculation, read rarely (sprio): keep the
        # parts as given and lay them out only when read.
        self._age = age
        self._fs = fs
        self._static = static
        self._nice = nice

    def __getitem__(self, key: str) -> float:
        try:
            i = self._NAMES.index(key)
        except ValueError:
            raise KeyError(key) from None
        if i < 2:
            return self._age if i == 0 else self._fs
        return self._static[i - 2] if i < 6 else float(self._nice)

    def __iter__(self) -> Iterator[str]:
        return iter(self._NAMES)

    def __len__(self) -> int:
        return len(self._NAMES)
