"""Phalanx: a workload manager for GPU clusters that run AI work.

One pure, deterministic scheduling core (``phalanx.engine``: gangs that start all-or-nothing,
topology-aware placement, backfill, multifactor priority with fair share, checkpoint-aware
preemption, quotas) is driven by a discrete-event simulator that replays real cluster traces
(``phalanx.sim``) and by a live controller with node agents that run real processes
(``phalanx.live``, started by ``phalanx up``), which speaks Slurm's commands (``phalanx.slurm``)
and a REST API (``phalanx.api``, ``phalanx.client``). ``phalanx.testing`` has public builders and
a fake-clock driver for tests. ARCHITECTURE.md draws the layers.

The names below are the library's public surface, pinned by a test. Each is imported on first
use, not by ``import phalanx``: every Slurm command and the node agent import this package
first, and they must start in milliseconds, without numpy or pydantic.
"""

from __future__ import annotations

__version__ = "0.1.0"

TYPE_CHECKING = False  # not typing's: importing typing costs the Slurm shims milliseconds
if TYPE_CHECKING:
    from phalanx.client.client import Client
    from phalanx.config.clusterspec import cluster_from_yaml, regular_cluster
    from phalanx.domain.cluster import Cluster
    from phalanx.domain.jobspec import JobSpec
    from phalanx.domain.state import JobState, Reason
    from phalanx.domain.time import DAY, HOUR, MINUTE, SECOND, Duration, Instant
    from phalanx.engine.engine import Engine
    from phalanx.errors import (
        ConfigError,
        Conflict,
        Fenced,
        InputError,
        NotAllowed,
        NotFound,
        PhalanxError,
        SpecError,
        StateStoreError,
        TraceError,
    )
    from phalanx.policies.catalog import POLICIES, profile
    from phalanx.sched.profile import Profile
    from phalanx.sched.status import Status
    from phalanx.server.localcluster import LocalCluster
    from phalanx.sim.simulator import Simulator
    from phalanx.sim.traces import read_trace

# public name -> the module that defines it
_WHERE = {
    "Client": "phalanx.client.client",
    "cluster_from_yaml": "phalanx.config.clusterspec",
    "regular_cluster": "phalanx.config.clusterspec",
    "Cluster": "phalanx.domain.cluster",
    "JobSpec": "phalanx.domain.jobspec",
    "JobState": "phalanx.domain.state",
    "Reason": "phalanx.domain.state",
    "DAY": "phalanx.domain.time",
    "HOUR": "phalanx.domain.time",
    "MINUTE": "phalanx.domain.time",
    "SECOND": "phalanx.domain.time",
    "Duration": "phalanx.domain.time",
    "Instant": "phalanx.domain.time",
    "Engine": "phalanx.engine.engine",
    "ConfigError": "phalanx.errors",
    "Conflict": "phalanx.errors",
    "Fenced": "phalanx.errors",
    "InputError": "phalanx.errors",
    "NotAllowed": "phalanx.errors",
    "NotFound": "phalanx.errors",
    "PhalanxError": "phalanx.errors",
    "SpecError": "phalanx.errors",
    "StateStoreError": "phalanx.errors",
    "TraceError": "phalanx.errors",
    "POLICIES": "phalanx.policies.catalog",
    "profile": "phalanx.policies.catalog",
    "Profile": "phalanx.sched.profile",
    "Status": "phalanx.sched.status",
    "LocalCluster": "phalanx.server.localcluster",
    "Simulator": "phalanx.sim.simulator",
    "read_trace": "phalanx.sim.traces",
}

__all__ = [
    "DAY",
    "HOUR",
    "MINUTE",
    "POLICIES",
    "SECOND",
    "Client",
    "Cluster",
    "ConfigError",
    "Conflict",
    "Duration",
    "Engine",
    "Fenced",
    "InputError",
    "Instant",
    "JobSpec",
    "JobState",
    "LocalCluster",
    "NotAllowed",
    "NotFound",
    "PhalanxError",
    "Profile",
    "Reason",
    "Simulator",
    "SpecError",
    "StateStoreError",
    "Status",
    "TraceError",
    "__version__",
    "cluster_from_yaml",
    "profile",
    "read_trace",
    "regular_cluster",
]


def __getattr__(name: str) -> object:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(where), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
