"""Inputs that change what the engine holds without scheduling anything themselves:
``Forget`` (ended jobs leave, ``retention``), ``AccountingChange`` (``sacctmgr``: the
cluster's accounts, associations and QOS change, ``domain.accounting``) and
``QueuesChange`` (the queue objects applied through the Kubernetes API).

Both changes give the engine a new ``Cluster`` value with the same nodes, topology and
partitions: every part of the engine that keeps the cluster is handed the new one, and a
pass is asked for (a raised limit may let jobs start). An accounting change was checked
before it was accepted; one that no longer applies (the state moved on since) changes
nothing. New queues re-key the jobs still held (``placement_key``): whether ClusterQueues
exist decides which jobs may share what a pass learnt about placing one of them.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from phalanx.domain.accounting import AccountingError, change
from phalanx.domain.cluster import Cluster
from phalanx.domain.queues import queue_name
from phalanx.domain.queues.model import has_queue_name
from phalanx.engine.events import AccountingChange, Forget, QueuesChange
from phalanx.engine.retention import forget
from phalanx.sched.job import Job

if TYPE_CHECKING:  # the engine calls this module: a run-time import would be circular
    from phalanx.engine.engine import Engine

__all__ = ["housekeep", "placement_key", "reconfigure"]


def placement_key(cluster: Cluster, job: Job) -> object:
    """What jobs that place alike have in common (``Job.key`` numbers these): the shape;
    under ClusterQueues a pre-filter narrows placement to the flavor it assigns, so also the
    whole queue route ``Cluster.cluster_queue_of`` reads (namespace, LocalQueue and whether
    one is named, partition, QOS)."""
    if not cluster.queues.cluster_queues:
        return job.shape
    spec = job.spec
    named = has_queue_name(spec)
    return (job.shape, spec.account, queue_name(spec), named, job.partition, spec.qos)


def housekeep(engine: Engine, event: Forget | AccountingChange | QueuesChange) -> None:
    if isinstance(event, Forget):
        forget(engine.jobs, event.before)
        return
    if isinstance(event, QueuesChange):
        # Kueue's Configuration (fair sharing) is the manager's, no API object: it stays.
        queues = dataclasses.replace(event.queues, fair_sharing=engine.cluster.queues.fair_sharing)
        cluster = dataclasses.replace(engine.cluster, queues=queues)
        reconfigure(engine, cluster)
        engine._never.clear()  # a job that never fitted may fit another flavor's nodes now
        for job in engine.jobs.values():
            if not job.state.is_final:
                job.key = engine._keys.setdefault(placement_key(cluster, job), len(engine._keys))
        engine.wake_at(event.at)
        return
    try:
        cluster, _ = change(
            engine.cluster, event.verb, event.entity, event.names, event.where, event.settings
        )
    except AccountingError:
        return
    reconfigure(engine, cluster)
    engine.wake_at(event.at)


def reconfigure(engine: Engine, cluster: Cluster) -> None:
    """Hand ``cluster`` (the same nodes, another accounting) to every holder of the old."""
    engine.cluster = cluster
    engine.view.cluster = cluster
    engine.state.cluster = cluster
    engine.usage.cluster = cluster
    engine.preemption._cluster = cluster
    engine.recipe.limits._cluster = cluster
