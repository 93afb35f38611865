"""Three ways to run serving next to training, on one workload, and their figures.

=========  ==================================================================================
setup      how it runs
=========  ==================================================================================
split      two clusters: serving alone on the fewest whole nodes that hold its peak (each
           service at ``replicas_for(peak)``), on ``k8s-default``; training on the rest, on
           ``slurm``. Nothing moves between them.
preempt    one cluster, ``slurm``: replicas in their priority class (QOS ``high``) preempt
           training (QOS ``normal``) at once, with no grace: a victim loses the work since its
           last periodic checkpoint and is requeued.
phalanx    one cluster, ``phalanx``: the same priorities, but preemption is checkpoint-aware:
           each victim gets its grace signal (``grace``, 60 s by default) and saves a
           checkpoint before it is requeued, so it loses only the save and the restore; when
           serving scales in, training backfills the GPUs. (Both one-cluster profiles choose
           the victims that lose least since their last checkpoint.)
=========  ==================================================================================

On one cluster the replicas' priority class comes first in the queue order (``serving_first``).

Figures per set-up (``ServingFigures``): SLO attainment over all requests; serving GPU-hours
held by replicas, and of those busy serving (the M/M/c utilisation of the ready replicas) and
idle (starting, loading, waiting for load); training JCT mean and p90 over finished training
jobs; training GPU-hours lost to preemptions and the preemptions; eta_sched, theta_overhead
and utilisation of the whole run, replicas included (``phalanx.sim.metrics``): a replica's
GPU-time once launched, busy and idle alike (its model load included), is compute to the
efficiency model, and its launch latency launch, as a training job's.

With ``pool`` (``phalanx.config.serving_pool``), ``run_serving_setup`` runs the ``phalanx``
set-up on the queues of that serving pool instead (``--pool MODE[:GPUS]``).
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from phalanx.config.serving_pool import ServingPool, with_pool
from phalanx.domain.cluster import Cluster, PreemptMode, Qos
from phalanx.domain.time import HOUR, SECOND, Duration, Instant
from phalanx.errors import ConfigError
from phalanx.policies.catalog import profile
from phalanx.sched.profile import Profile
from phalanx.sim.metrics import summarize
from phalanx.sim.records import JobRecord, RunRecord
from phalanx.sim.serving.run import (
    ServiceTimeline,
    ServingRun,
    ServingSimulator,
    held_gpu_ms,
    replica_spec,
)
from phalanx.sim.serving.spec import ServingSpec
from phalanx.sim.setups import merge_runs, split_clusters
from phalanx.sim.simulator import Simulator
from phalanx.sim.workload import TraceJob

__all__ = [
    "SERVING_SETUPS",
    "ServingFigures",
    "ServingResult",
    "check_serving_cluster",
    "run_serving_setup",
    "serving_first",
]

SERVING_SETUPS: dict[str, str] = {
    "split": "two clusters: serving sized for its peak (k8s), training on the rest (slurm)",
    "preempt": "one cluster, serving preempts training at once (slurm, no grace)",
    "phalanx": "one cluster, checkpoint-aware preemption, training backfills (phalanx)",
}
DEFAULT_GRACE: Duration = 60 * SECOND
SERVING_QOS_WEIGHT = 10_000_000
"""The QOS weight of the one-cluster set-ups (``serving_first``)."""


@dataclass(frozen=True, slots=True)
class ServingFigures:
    setup: str
    slo_attainment: float
    requests: float
    serving_gpu_hours: float
    serving_busy_gpu_hours: float
    serving_idle_gpu_hours: float
    training_jobs: int
    training_unfinished: int
    training_jct_mean_s: float
    training_jct_p90_s: float
    training_lost_gpu_hours: float
    training_preemptions: int
    eta_sched: float
    theta_overhead: float
    utilization: float
    serving_nodes: int | None
    """The split's serving cluster, in nodes; None on one cluster."""


@dataclass(frozen=True, slots=True)
class ServingResult:
    figures: ServingFigures
    services: dict[str, ServiceTimeline]
    training_gpus: list[tuple[Instant, float]]
    """GPUs training held at each sync period's start."""


def check_serving_cluster(cluster: Cluster, serving: ServingSpec) -> None:
    """``ConfigError`` when a service's replicas could never run on ``cluster``."""
    biggest = max((node.gpus for node in cluster.nodes), default=0)
    for i, service in enumerate(serving.services):
        if service.gpus > biggest:
            raise ConfigError(
                f"a replica of {service.gpus} GPUs fits no node (the largest has {biggest})",
                field=f"services[{i}].gpus",
            )
        if service.priority_class not in cluster.qos:
            raise ConfigError(
                f"the cluster has no QOS {service.priority_class!r} "
                f"(it has {', '.join(sorted(cluster.qos))})",
                field=f"services[{i}].priority_class",
            )
        if cluster.queues.cluster_queues:
            # Under ClusterQueues a replica no queue admits would wait the whole run.
            cq, why = cluster.cluster_queue_of(replica_spec(service, 0))
            if cq is None:
                raise ConfigError(
                    f"no ClusterQueue admits the replicas ({why}): route QOS "
                    f"{service.priority_class!r} to one, add a LocalQueue 'default' in "
                    f"namespace {service.name!r}, or use --pool",
                    field=f"services[{i}]",
                )


def run_serving_setup(
    name: str,
    cluster: Cluster,
    training: Sequence[TraceJob],
    serving: ServingSpec,
    *,
    grace: Duration = DEFAULT_GRACE,
    pool: ServingPool | None = None,
) -> ServingResult:
    """Run ``training`` and ``serving`` together under set-up ``name`` (``SERVING_SETUPS``),
    or, with ``pool``, the ``phalanx`` set-up on that serving pool's queues (``name`` is then
    only the row's name)."""
    if pool is not None:
        services = {s.priority_class for s in serving.services}
        if len(services) != 1:
            raise ConfigError(
                "a serving pool needs every service in one priority class", field="--pool"
            )
        pooled = with_pool(cluster, pool, services.pop())
        check_serving_cluster(pooled, serving)
        saving = [_saving(tj, True) for tj in training]
        graceful = _with_grace(pooled, grace)
        ran = ServingSimulator(graceful, serving_first(profile("phalanx")), saving, serving).run()
        return _one_cluster(name, ran)
    check_serving_cluster(cluster, serving)
    if name == "split":
        return _split(cluster, training, serving)
    if name == "preempt":
        plain = [_saving(tj, False) for tj in training]
        ran = ServingSimulator(cluster, serving_first(profile("slurm")), plain, serving).run()
        return _one_cluster(name, ran)
    if name == "phalanx":
        saving = [_saving(tj, True) for tj in training]
        graceful = _with_grace(cluster, grace)
        ran = ServingSimulator(graceful, serving_first(profile("phalanx")), saving, serving).run()
        return _one_cluster(name, ran)
    raise ConfigError(
        f"unknown setup {name!r}; choose from {', '.join(SERVING_SETUPS)}", field="--setup"
    )


def serving_first(prof: Profile) -> Profile:
    """``prof`` with the QOS factor outweighing all the others together, so a replica's
    priority class orders it before every training job, as a PriorityClass orders the
    Kubernetes scheduling queue and as Slurm sites set ``PriorityWeightQOS`` when a QOS must
    come first. With the catalog's weights (QOS 1,000 against fair share 10,000 and, under
    ``phalanx``, age 25,000 and shortness 20,000) a training job that had waited a day
    outranked the replicas, held the reservation, and left them pending (reason Priority)
    while the load they were asked for went unserved."""
    if prof.queue_sort != "priority/multifactor":
        return prof
    params = dict(prof.params)
    params["priority/multifactor"] = {
        **params.get("priority/multifactor", {}),
        "weight_qos": SERVING_QOS_WEIGHT,
    }
    return dataclasses.replace(prof, params=params)


def _saving(tj: TraceJob, on_signal: bool) -> TraceJob:
    if tj.spec.checkpoint_on_signal == on_signal:
        return tj
    return dataclasses.replace(
        tj, spec=dataclasses.replace(tj.spec, checkpoint_on_signal=on_signal)
    )


def _with_grace(cluster: Cluster, grace: Duration) -> Cluster:
    """``cluster`` whose preemptable QOS give their victims ``grace`` to checkpoint."""
    preemptable = {q for qos in cluster.qos.values() for q in qos.preempt}
    qos: dict[str, Qos] = {
        name: dataclasses.replace(q, grace_time=max(q.grace_time, grace))
        if name in preemptable and q.preempt_mode is PreemptMode.REQUEUE
        else q
        for name, q in cluster.qos.items()
    }
    return dataclasses.replace(cluster, qos=qos)


def _one_cluster(name: str, ran: ServingRun) -> ServingResult:
    jobs = ran.run.jobs
    training = [j for j in jobs if j.job_id not in ran.replicas]
    replicas = [j for j in jobs if j.job_id in ran.replicas]
    figures = _figures(name, ran.run, training, replicas, ran.services, None)
    return ServingResult(figures, ran.services, ran.training_gpus)


def _split(cluster: Cluster, training: Sequence[TraceJob], serving: ServingSpec) -> ServingResult:
    train_cluster, serve_cluster = split_clusters(cluster, serving.peak_gpus())
    trained = Simulator(train_cluster, profile("slurm"), training, keep_segments=False).run()
    served = ServingSimulator(serve_cluster, profile("k8s-default"), [], serving).run()
    merged = merge_runs("split", trained, served.run)
    figures = _figures(
        "split",
        merged,
        trained.jobs,
        served.run.jobs,
        served.services,
        len(serve_cluster.nodes),
    )
    steps = [at for at, _ in served.training_gpus]
    sample = _step_sampler(trained.alloc_timeline)
    return ServingResult(figures, served.services, [(at, sample(at)) for at in steps])


def _figures(
    name: str,
    run: RunRecord,
    training: Sequence[JobRecord],
    replicas: Sequence[JobRecord],
    services: dict[str, ServiceTimeline],
    serving_nodes: int | None,
) -> ServingFigures:
    overall = summarize(run)
    requests = sum(line.requests for line in services.values())
    on_time = sum(line.requests * line.slo_attainment for line in services.values())
    held = sum(held_gpu_ms(j) for j in replicas) / HOUR
    busy = sum(line.busy_gpu_hours for line in services.values())
    kept = [j for j in training if j.rejected is None]
    done = np.array([j.end - j.submit for j in kept if j.end is not None], np.float64) / SECOND
    return ServingFigures(
        setup=name,
        slo_attainment=on_time / requests if requests > 0 else 1.0,
        requests=requests,
        serving_gpu_hours=held,
        serving_busy_gpu_hours=busy,
        serving_idle_gpu_hours=max(0.0, held - busy),
        training_jobs=len(kept),
        training_unfinished=len(kept) - len(done),
        training_jct_mean_s=float(done.mean()) if len(done) else 0.0,
        training_jct_p90_s=float(np.percentile(done, 90)) if len(done) else 0.0,
        training_lost_gpu_hours=sum(j.lost_gpu_ms for j in kept) / HOUR,
        training_preemptions=sum(j.preemptions for j in kept),
        eta_sched=overall.eta_sched,
        theta_overhead=overall.theta_overhead,
        utilization=overall.utilization,
        serving_nodes=serving_nodes,
    )


def _step_sampler(timeline: Sequence[tuple[Instant, float]]) -> Callable[[Instant], float]:
    """The value of a step timeline of (t, value from t) points at any instant (0 before)."""
    times = [t for t, _ in timeline]

    def at(t: Instant) -> float:
        i = bisect.bisect_right(times, t) - 1
        return timeline[i][1] if i >= 0 else 0.0

    return at
