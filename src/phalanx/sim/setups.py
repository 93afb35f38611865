"""The set-ups teams choose between, each a way of running the same workload on the simulator.

Every set-up is a profile of the one scheduling core (``phalanx.policies.catalog``), except the
two-cluster split, which is two of them on a static split of the nodes:

=========  =============================================================================
setup      how it runs
=========  =============================================================================
slurm      the ``slurm`` profile on the whole cluster
k8s        ``k8s-default`` (vanilla kube-scheduler: pods one by one, no gang)
kueue      ``kueue`` (gang admission against quota)
volcano    ``volcano`` (gangs, DRF, binpack)
split      training on ``slurm`` and serving on ``k8s-default``, each on its own sub-cluster:
           the serving side gets the fewest whole nodes that hold the serving peak it is sized
           for (``phalanx advise``: the peak at the reference load, the same at every load, as
           a static split does not grow), the training side the rest; the two runs are merged
           into one record (``merge_runs``)
phalanx    the ``phalanx`` profile
=========  =============================================================================

A workload without serving has no split (it would be ``slurm`` on the whole cluster).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.cluster import Cluster
from phalanx.domain.time import Instant
from phalanx.errors import ConfigError
from phalanx.policies.catalog import profile
from phalanx.sched.profile import Profile
from phalanx.sim.records import RunRecord
from phalanx.sim.workload import TraceJob

__all__ = [
    "SETUPS",
    "Setup",
    "merge_runs",
    "merge_timelines",
    "peak_gpus",
    "setup",
    "split_clusters",
]


@dataclass(frozen=True, slots=True)
class Setup:
    name: str
    profile: str
    """The catalog profile that runs the workload (the training side, for the split)."""
    serving_profile: str | None = None
    """The split's serving side; None for a set-up on one cluster."""
    description: str = ""

    @property
    def split(self) -> bool:
        return self.serving_profile is not None

    def profiles(self) -> tuple[Profile, ...]:
        names = (
            (self.profile,)
            if self.serving_profile is None
            else (self.profile, self.serving_profile)
        )
        return tuple(profile(n) for n in names)


SETUPS: dict[str, Setup] = {
    s.name: s
    for s in (
        Setup("slurm", "slurm", description="Slurm: multifactor priority, EASY backfill"),
        Setup("k8s", "k8s-default", description="vanilla Kubernetes (kube-scheduler)"),
        Setup("kueue", "kueue", description="Kubernetes + Kueue"),
        Setup("volcano", "volcano", description="Kubernetes + Volcano"),
        Setup(
            "split",
            "slurm",
            "k8s-default",
            description="two clusters: training on Slurm, serving on Kubernetes",
        ),
        Setup("phalanx", "phalanx", description="Phalanx"),
    )
}


def setup(name: str) -> Setup:
    """The set-up called ``name``; ``ConfigError`` (field ``--setup``) for an unknown one."""
    found = SETUPS.get(name)
    if found is None:
        raise ConfigError(
            f"unknown setup {name!r}; choose from {', '.join(SETUPS)}", field="--setup"
        )
    return found


def peak_gpus(jobs: Sequence[TraceJob]) -> float:
    """The most GPUs ``jobs`` ask at once, each wanted from its submit for its runtime."""
    if not jobs:
        return 0.0
    times = np.array([j.submit for j in jobs] + [j.submit + j.runtime for j in jobs], np.float64)
    gpus = np.array([j.spec.gpu_equivalent for j in jobs], np.float64)
    deltas = np.concatenate([gpus, -gpus])
    # Ends sort before starts at one instant: a replica handed over at a bucket edge is not
    # counted twice.
    order = np.lexsort((deltas, times))
    return float(np.cumsum(deltas[order]).max())


def split_clusters(cluster: Cluster, serving_gpus: float) -> tuple[Cluster, Cluster]:
    """(training, serving) sub-clusters of a uniform ``cluster``: the serving side has the
    fewest nodes holding ``serving_gpus``, the training side the rest, same leaf size.

    Raises ``ConfigError`` when the cluster's nodes differ in GPUs or it has too few nodes.
    """
    per_node = {node.gpus for node in cluster.nodes}
    if len(per_node) != 1 or 0 in per_node:
        raise ConfigError("the two-cluster split needs nodes of equal GPUs", field="--setup")
    gpus = per_node.pop()
    serving = max(1, math.ceil(serving_gpus / gpus))
    training = len(cluster.nodes) - serving
    if training < 1:
        raise ConfigError(
            f"the serving peak ({serving_gpus:g} GPUs) leaves no node for training",
            field="--setup",
        )
    leaf = max((len(leaf.children) for leaf in cluster.leaves), default=len(cluster.nodes))
    model = cluster.nodes[0].gpu_model
    return (
        regular_cluster(training, gpus, leaf, gpu_model=model, prefix="train"),
        regular_cluster(serving, gpus, leaf, gpu_model=model, prefix="serve"),
    )


def merge_timelines(
    a: Sequence[tuple[Instant, float]], b: Sequence[tuple[Instant, float]]
) -> list[tuple[Instant, float]]:
    """The sum of two step timelines of (t, value from t) points (0 before a first point)."""
    times = np.union1d(_column(a, 0), _column(b, 0))
    total = _values_at(a, times) + _values_at(b, times)
    return [(int(t), float(v)) for t, v in zip(times, total, strict=True)]


def _column(timeline: Sequence[tuple[Instant, float]], k: int) -> npt.NDArray[np.float64]:
    return np.fromiter((p[k] for p in timeline), np.float64, len(timeline))


def _values_at(
    timeline: Sequence[tuple[Instant, float]], times: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """The step timeline's value at each of ``times`` (0 before its first point)."""
    if not timeline:
        return np.zeros(len(times))
    index = np.searchsorted(_column(timeline, 0), times, side="right") - 1
    values = _column(timeline, 1)[np.maximum(index, 0)]
    return np.where(index >= 0, values, 0.0)


def merge_runs(name: str, a: RunRecord, b: RunRecord) -> RunRecord:
    """Two runs on disjoint sub-clusters as one run on their union: jobs side by side,
    timelines summed, counters added."""
    return RunRecord(
        policy=name,
        total_gpus=a.total_gpus + b.total_gpus,
        node_count=a.node_count + b.node_count,
        jobs=[*a.jobs, *b.jobs],
        alloc_timeline=merge_timelines(a.alloc_timeline, b.alloc_timeline),
        idle_pending_timeline=merge_timelines(a.idle_pending_timeline, b.idle_pending_timeline),
        deadlocks=a.deadlocks + b.deadlocks,
        sim_wall_s=a.sim_wall_s + b.sim_wall_s,
        mfu=a.mfu,
        passes=a.passes + b.passes,
    )
