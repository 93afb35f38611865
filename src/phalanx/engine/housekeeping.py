"""Inputs that change what the engine holds without scheduling anything themselves:
``Forget`` (ended jobs leave, ``retention``) and ``AccountingChange`` (``sacctmgr``: the
cluster's accounts, associations and QOS change, ``domain.accounting``).

An accounting change gives the engine a new ``Cluster`` value with the same nodes, topology
and partitions: every part of the engine that keeps the cluster is handed the new one, and a
pass is asked for (a raised limit may let jobs start). The change was checked before it was
accepted; one that no longer applies (the state moved on since) changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phalanx.domain.accounting import AccountingError, change
from phalanx.domain.cluster import Cluster
from phalanx.engine.events import AccountingChange, Forget
from phalanx.engine.retention import forget

if TYPE_CHECKING:  # the engine calls this module: a run-time import would be circular
    from phalanx.engine.engine import Engine

__all__ = ["housekeep", "reconfigure"]


def housekeep(engine: Engine, event: Forget | AccountingChange) -> None:
    if isinstance(event, Forget):
        forget(engine.jobs, event.before)
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
