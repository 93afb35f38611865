"""Serving pools: how serving replicas and training share one cluster, as Kueue queue objects.

One configuration for the live controller and for ``phalanx simulate-serving --pool``:
``pool_yaml`` writes the Kueue objects (give them to ``phalanx up --queues``, with the
cluster YAML's QOS routed as ``with_pool`` routes them: the serving QOS to ClusterQueue
``serving`` and every other QOS to ``training``, or all to ``shared``); ``with_pool``
applies the same objects to a ``Cluster`` for a simulation. Nothing new is modelled: each
mode is ClusterQueues in one cohort (``serving-pool``), and the existing quota admission and
``preempt/clusterqueue`` do the rest (under ``phalanx``: victims chosen by least work lost,
with their grace signal).
``--pool MODE[:GPUS]`` names a mode (``parse_pool``).

=============  ================================================================================
mode           the queues (``G`` = the pool's GPUs, ``T`` = the cluster's GPUs)
=============  ================================================================================
guaranteed:G   ``serving`` has nominalQuota ``G`` and ``reclaimWithinCohort: Any``: while its
               replicas do not use its GPUs, training borrows them, and when serving scales up
               it takes them back by preempting the borrowers (checkpoint-aware). ``training``
               has ``T - G``; beyond ``G`` serving borrows only idle GPUs (Kueue's
               ``borrowWithinCohort`` would only take from queues that borrow).
borrowable     no pool: serving and training share one ClusterQueue ``shared`` of ``T`` with
               ``withinClusterQueue: LowerPriority``, so a replica takes any GPUs, idle or
               preempted from training (of lower priority), and has none of its own when
               training fills the cluster before it comes. (Two queues cannot say this:
               Kueue preempts across a cohort only from queues that borrow, and a training
               queue at its nominal quota does not.)
static:G       a split: ``serving`` has ``G`` with ``lendingLimit: 0`` and
               ``borrowingLimit: 0``, ``training`` has ``T - G`` with ``borrowingLimit: 0``:
               serving's idle GPUs are never lent, and neither side ever takes the other's.
=============  ================================================================================

The replicas' priority is a WorkloadPriorityClass named like their QOS (``high``, value
``SERVING_PRIORITY``), which a replica names with the label ``kueue.x-k8s.io/priority-class``
(as a Deployment's pod template does for Kueue); training jobs name none (priority 0).
Quotas count GPUs, not nodes: a pool of ``G`` GPUs is not a set of nodes (a replica that quota
admits but finds no placement preempts for one under ``phalanx``). CPU and memory are covered
by quotas no job reaches.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from phalanx.config.queues import queues_from_yaml
from phalanx.domain.cluster import Cluster, Qos
from phalanx.errors import ConfigError

__all__ = [
    "POOL_MODES",
    "SERVING_PRIORITY",
    "ServingPool",
    "parse_pool",
    "pool_yaml",
    "with_pool",
]

POOL_MODES: dict[str, str] = {
    "guaranteed": "serving has G GPUs it always gets back; training borrows them while idle",
    "borrowable": "no pool: one queue, replicas preempt training by priority",
    "static": "a split: serving's G GPUs are never lent, training's never borrowed",
}
SERVING_PRIORITY = 1000
"""The value of the replicas' WorkloadPriorityClass (training jobs have 0)."""
COHORT = "serving-pool"
SERVING_QUEUE = "serving"
TRAINING_QUEUE = "training"
SHARED_QUEUE = "shared"
_API = "apiVersion: kueue.x-k8s.io/v1beta1\n"


@dataclass(frozen=True, slots=True)
class ServingPool:
    mode: str
    """One of ``POOL_MODES``."""
    gpus: int | None
    """``G``: the pool's GPUs (guaranteed, static); None for borrowable."""

    def __post_init__(self) -> None:
        if self.mode not in POOL_MODES:
            raise ConfigError(
                f"unknown pool mode {self.mode!r}; choose from {', '.join(POOL_MODES)}",
                field="--pool",
            )
        if (self.gpus is None) != (self.mode == "borrowable"):
            raise ConfigError(
                "borrowable has no GPUs of its own: borrowable"
                if self.mode == "borrowable"
                else f"{self.mode} needs its GPUs: {self.mode}:GPUS",
                field="--pool",
            )
        if self.gpus is not None and self.gpus < 1:
            raise ConfigError(f"pool GPUs must be at least 1, not {self.gpus}", field="--pool")

    @property
    def label(self) -> str:
        return self.mode if self.gpus is None else f"{self.mode}:{self.gpus}"


def parse_pool(text: str) -> ServingPool:
    """``MODE`` or ``MODE:GPUS`` (``--pool``); ``ConfigError`` naming ``--pool`` otherwise."""
    mode, sep, count = text.strip().partition(":")
    gpus: int | None = None
    if sep:
        try:
            gpus = int(count)
        except ValueError:
            raise ConfigError(f"not a GPU count: {count!r} (MODE:GPUS)", field="--pool") from None
    return ServingPool(mode, gpus)


def pool_yaml(pool: ServingPool, total_gpus: int, serving_class: str = "high") -> str:
    """The Kueue objects of ``pool`` on a cluster of ``total_gpus`` GPUs (module docstring),
    replicas in WorkloadPriorityClass ``serving_class``."""
    if pool.gpus is not None and pool.gpus > total_gpus:
        raise ConfigError(
            f"a pool of {pool.gpus} GPUs on a cluster of {total_gpus}", field="--pool"
        )
    g = pool.gpus or 0
    if pool.mode == "guaranteed":
        serving = _queue(SERVING_QUEUE, g, "", "reclaimWithinCohort: Any")
        training = _queue(TRAINING_QUEUE, total_gpus - g, "", "reclaimWithinCohort: Any")
    elif pool.mode == "borrowable":
        serving = _queue(SHARED_QUEUE, total_gpus, "", "withinClusterQueue: LowerPriority")
        training = ""
    else:
        serving = _queue(SERVING_QUEUE, g, ", lendingLimit: 0, borrowingLimit: 0", "")
        training = _queue(TRAINING_QUEUE, total_gpus - g, ", borrowingLimit: 0", "")
    priority = (
        _API + f"kind: WorkloadPriorityClass\nmetadata: {{name: {serving_class}}}\n"
        f"value: {SERVING_PRIORITY}\n"
        f"description: serving replicas ({pool.label} pool)\n"
    )
    flavor = _API + "kind: ResourceFlavor\nmetadata: {name: gpu}\n"
    head = f"# Serving pool {pool.label} on {total_gpus} GPUs (phalanx.config.serving_pool)\n"
    return head + "---\n".join(d for d in (flavor, serving, training, priority) if d)


def _queue(name: str, gpus: int, limits: str, preemption: str) -> str:
    stanza = f"  preemption: {{{preemption}}}\n" if preemption else ""
    cohort = "" if name == SHARED_QUEUE else f"  cohort: {COHORT}\n"
    return (
        _API + f"kind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n"
        "  namespaceSelector: {}\n" + cohort + stanza + "  resourceGroups:\n"
        "  - coveredResources: [nvidia.com/gpu, cpu, memory]\n"
        "    flavors:\n"
        "    - name: gpu\n"
        "      resources:\n"
        f"      - {{name: nvidia.com/gpu, nominalQuota: {gpus}{limits}}}\n"
        "      - {name: cpu, nominalQuota: 1000000}\n"
        "      - {name: memory, nominalQuota: 1Ei}\n"
    )


def with_pool(cluster: Cluster, pool: ServingPool, serving_qos: str = "high") -> Cluster:
    """``cluster`` with ``pool``'s queues, its QOS ``serving_qos`` routed to ClusterQueue
    ``serving`` and every other QOS to ``training``. ``ConfigError`` when the cluster has
    queues of its own (a pool replaces them) or lacks ``serving_qos``."""
    if cluster.queues:
        raise ConfigError("a serving pool replaces the cluster's queues: give one", field="--pool")
    if serving_qos not in cluster.qos:
        raise ConfigError(f"the cluster has no QOS {serving_qos!r}", field="--pool")
    queues = queues_from_yaml(
        pool_yaml(pool, cluster.total_gpus, serving_qos), f"<pool {pool.label}>"
    )
    if pool.mode == "borrowable":
        routes = dict.fromkeys(cluster.qos, SHARED_QUEUE)
    else:
        routes = {q: SERVING_QUEUE if q == serving_qos else TRAINING_QUEUE for q in cluster.qos}
    qos: dict[str, Qos] = {
        name: dataclasses.replace(q, cluster_queue=routes[name]) for name, q in cluster.qos.items()
    }
    return dataclasses.replace(cluster, queues=queues, qos=qos)
