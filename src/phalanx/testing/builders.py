"""Builders of test inputs: job requests, clusters and a large finished simulated run."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.cluster import Account, Cluster, Partition, PreemptMode
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import HOUR, Duration

if TYPE_CHECKING:
    from phalanx.sim.records import RunRecord

__all__ = ["large_run", "make_job", "small_cluster"]


def make_job(
    gpus: int = 1,
    nodes: int = 1,
    time_limit: Duration | None = HOUR,
    account: str = "root",
    *,
    name: str = "job",
    user: str = "user",
    qos: str = "normal",
    nodes_max: int | None = None,
    **extra: Any,
) -> JobSpec:
    """A job of ``nodes`` nodes with ``gpus`` GPUs on each (one task per node).

    Any other ``JobSpec`` field may be given by keyword (``switches=1``, ``requeue=False``,
    ``dependencies=...``, ``tasks_per_node=2`` -- then ``gpus`` is per task).
    """
    return JobSpec(
        name=name,
        user=user,
        account=account,
        qos=qos,
        nodes_min=nodes,
        nodes_max=nodes if nodes_max is None else nodes_max,
        gpus_per_task=gpus,
        time_limit=time_limit,
        **extra,
    )


def large_run(n: int = 82_000, *, seed: int = 1, accounts: int = 1) -> RunRecord:
    """A finished simulated run the size of the Philly trace: ``n`` one-GPU jobs of up to
    6 h submitted over 30 days on 128 nodes x 8 GPUs, one segment each, with the allocation
    timeline of every start and end; accounts ``a`` (one) or ``acct0``... (several)."""
    import numpy as np

    from phalanx.domain.time import DAY, SECOND
    from phalanx.sim.records import JobRecord, RunRecord, Segment

    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, 30 * DAY, n))
    start = submit + rng.integers(0, HOUR, n)
    end = start + rng.integers(SECOND, 6 * HOUR, n)
    node = rng.integers(0, 128, n)
    jobs = [
        JobRecord(
            job_id=k,
            account="a" if accounts == 1 else f"acct{k % accounts}",
            user="u",
            gpus=1.0,
            submit=int(submit[k]),
            runtime_ms=int(end[k] - start[k]),
            first_start=int(start[k]),
            end=int(end[k]),
        )
        for k in range(n)
    ]
    segments = [Segment(k, int(node[k]), int(start[k]), int(end[k]), 1.0) for k in range(n)]
    times = np.concatenate([start, end])
    deltas = np.concatenate([np.ones(n), -np.ones(n)])
    order = np.argsort(times, kind="stable")
    timeline = list(zip(times[order].tolist(), np.cumsum(deltas[order]).tolist(), strict=True))
    return RunRecord(
        policy="big",
        total_gpus=1024,
        node_count=128,
        jobs=jobs,
        alloc_timeline=timeline,
        segments=segments,
    )


def small_cluster(
    nodes: int = 4,
    gpus: int = 8,
    per_leaf: int = 2,
    *,
    leaves_per_spine: int | None = None,
    accounts: Mapping[str, int] | None = None,
    quotas: Mapping[str, int] | None = None,
    default_time: Duration | None = None,
    max_time: Duration | None = None,
    preempt_mode: PreemptMode = PreemptMode.OFF,
    grace_time: Duration = 0,
) -> Cluster:
    """A ``regular_cluster`` of ``nodes`` x ``gpus``, ``per_leaf`` nodes per leaf switch.

    ``accounts`` maps account names (children of root) to their shares; ``quotas`` gives
    some of them a nominal GPU quota. The one partition ``gpu`` takes the time and preemption
    settings given. QOS ``normal`` and ``high`` (which may preempt ``normal``) exist.
    """
    cluster = regular_cluster(nodes, gpus, per_leaf, leaves_per_spine=leaves_per_spine)
    quotas = quotas or {}
    accts: dict[str, Account] = {"root": Account("root", None)}
    for acct_name, shares in (accounts or {}).items():
        accts[acct_name] = Account(acct_name, "root", shares, quotas.get(acct_name))
    for acct_name, quota in quotas.items():
        if acct_name not in accts:
            accts[acct_name] = Account(acct_name, "root", 1, quota)
    part = dataclasses.replace(
        cluster.partitions["gpu"],
        default_time=default_time,
        max_time=max_time,
        preempt_mode=preempt_mode,
        grace_time=grace_time,
    )
    partitions: dict[str, Partition] = {"gpu": part}
    return dataclasses.replace(cluster, accounts=accts, partitions=partitions)
