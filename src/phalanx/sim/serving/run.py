"""Serving in the simulator: replicas as engine jobs, an autoscaler, and the requests' fate.

``ServingSimulator`` drives the ordinary ``Simulator`` (the one driver loop, the one engine,
the simulated executor) in sync periods of ``ServingSpec.sync``. Recipe of one period, at its
first instant ``t``:

1. every event before ``t`` has been handled, so the engine's jobs are the state at ``t``;
2. per service: its replicas' states (pending, starting, ready: a replica is ready
   ``startup`` after its job started), the offered load ``rate_at(t)``, and what the ready
   replicas make of it (``LatencyModel``: SLO attainment, p99 latency, busy share), booked for
   the whole period;
3. per service: the ``Scaler`` is asked for the replica count; the difference becomes
   ``Submit`` events (one task each, the service's GPUs and priority class, no time limit) or
   ``Cancel`` events, stamped ``t``: the inputs a live controller takes from its autoscaler;
4. the training jobs submitted in [t, t + sync) are queued, and the driver handles every event
   before ``t + sync``.

Job ids follow the order submissions are handled, so they are booked as they are queued: the
replicas of step 3 come before the training jobs of step 4 at the same instant, and nothing is
queued ahead of time. Each service starts with the replicas its load at 0 calls for
(``ServiceSpec.replicas_for``); its SLO figures leave out the requests of its warm-up (the
first replicas' ``startup`` and one period). After the last service's load ends, its
replicas are cancelled and the training runs to its end as in a plain replay.

Scale-in cancels pending replicas first, then starting ones, then ready ones, the newest first
in each group (a ReplicaSet's choice of pods to delete).
"""

from __future__ import annotations

import bisect
import gc
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.queues import PRIORITY_CLASS_LABEL
from phalanx.domain.state import JobState
from phalanx.domain.time import DAY, HOUR, Instant
from phalanx.engine import Cancel, Submit
from phalanx.sched.profile import Profile
from phalanx.sim.executor import CHECKPOINT_SAVE_MS
from phalanx.sim.records import JobRecord, RunRecord
from phalanx.sim.serving.scaler import Observation, Scaler
from phalanx.sim.serving.spec import ServiceSpec, ServingSpec
from phalanx.sim.simulator import Simulator
from phalanx.sim.workload import TraceJob

__all__ = [
    "ServiceTimeline",
    "ServingRun",
    "ServingSimulator",
    "held_gpu_ms",
    "replica_spec",
]

_FOREVER = 3650 * DAY
"""A replica's work: it runs until it is cancelled."""
_PROGRESS_EVERY = 4096


def replica_spec(service: ServiceSpec, index: int) -> JobSpec:
    """The job of one replica: one task on one node, no time limit (the partition's), in
    the QOS its priority class names and, for Kueue's admission, the WorkloadPriorityClass
    of that name (``phalanx.config.serving_pool``; none of that name: priority 0)."""
    return JobSpec(
        name=f"{service.name}-{index}",
        user="serving",
        account=service.name,
        qos=service.priority_class,
        gpus_per_task=service.gpus,
        cpus_per_task=1,
        extra=((PRIORITY_CLASS_LABEL, service.priority_class),),
    )


@dataclass(slots=True)
class ServiceTimeline:
    """One service, one entry per sync period (from ``at``, for ``step`` ms)."""

    name: str
    step: int
    at: list[Instant] = field(default_factory=list)
    offered_rps: list[float] = field(default_factory=list)
    replicas: list[int] = field(default_factory=list)
    """Replicas asked for at the period's start (before the scaler's answer)."""
    ready: list[int] = field(default_factory=list)
    attainment: list[float] = field(default_factory=list)
    p99_ms: list[float] = field(default_factory=list)
    """p99 latency of the admitted requests (inf without a ready replica)."""
    busy: list[float] = field(default_factory=list)
    """Share of the ready replicas' time spent serving."""
    gpus: int = 0
    slo_ms: float = 0.0
    capacity_rps: float = 0.0
    """Requests/s one ready replica serves at the SLO."""
    warmup: Instant = 0
    """Requests before this instant are left out of the SLO figures: the service is being
    deployed (its first replicas load their model)."""

    def _counted(self) -> int:
        """Index of the first period whose requests count (after ``warmup``)."""
        return bisect.bisect_left(self.at, self.warmup)

    @property
    def requests(self) -> float:
        """Requests offered after the warm-up."""
        return sum(self.offered_rps[self._counted() :]) * self.step / 1000.0

    @property
    def slo_attainment(self) -> float:
        """Share of the requests after the warm-up answered within the target (1.0 without
        requests)."""
        first = self._counted()
        rates = self.offered_rps[first:]
        total = sum(rates)
        if total <= 0:
            return 1.0
        on_time = sum(r * a for r, a in zip(rates, self.attainment[first:], strict=True))
        return on_time / total

    @property
    def busy_gpu_hours(self) -> float:
        ms = sum(b * r for b, r in zip(self.busy, self.ready, strict=True)) * self.step
        return ms * self.gpus / HOUR


@dataclass(slots=True)
class ServingRun:
    run: RunRecord
    """The whole run: training jobs and replicas, for the usual figures."""
    replicas: frozenset[int]
    """Job ids of the replicas (every other job is training)."""
    services: dict[str, ServiceTimeline]
    training_gpus: list[tuple[Instant, float]] = field(default_factory=list)
    """GPUs allocated to training at each sync period's start."""


def held_gpu_ms(job: JobRecord) -> int:
    """GPU-ms a job held, every term of the efficiency model together."""
    return (
        job.compute_gpu_ms
        + job.launch_gpu_ms
        + job.cleanup_gpu_ms
        + job.evict_gpu_ms
        + job.lost_gpu_ms
        + job.gang_wait_gpu_ms
    )


class _Service:
    __slots__ = ("count", "ids", "scaler", "spec", "timeline")

    def __init__(self, spec: ServiceSpec, scaler: Scaler, step: int) -> None:
        self.spec = spec
        self.scaler = scaler
        self.ids: list[int] = []
        """Replicas asked for (not cancelled), in submission order."""
        self.count = 0
        """Replicas ever submitted (their names' index)."""
        self.timeline = ServiceTimeline(
            spec.name,
            step,
            gpus=spec.gpus,
            slo_ms=spec.latency.slo_s * 1000.0,
            capacity_rps=spec.latency.capacity_rps,
            warmup=spec.startup + step,
        )


class ServingSimulator:
    def __init__(
        self,
        cluster: Cluster,
        profile: Profile,
        training: Sequence[TraceJob],
        serving: ServingSpec,
        *,
        scalers: Mapping[str, Scaler] | None = None,
        checkpoint_save_ms: int = CHECKPOINT_SAVE_MS,
    ) -> None:
        """``scalers``: by service name, in place of each service's default ``HpaScaler``."""
        self.sim = Simulator(
            cluster, profile, training, keep_segments=False, checkpoint_save_ms=checkpoint_save_ms
        )
        self.serving = serving
        chosen = scalers or {}
        self.services = [
            _Service(s, chosen.get(s.name) or s.scaler(), serving.sync) for s in serving.services
        ]
        self.replicas: set[int] = set()
        self._next_id = self.sim.engine.next_id
        self._training_gpus: list[tuple[Instant, float]] = []

    def run(self) -> ServingRun:
        """Run the load to its end and the training to its end (see the module docstring)."""
        enabled = gc.isenabled()
        gc.disable()  # as Simulator.run: long-lived objects, next to no cycles
        try:
            return self._run()
        finally:
            if enabled:
                gc.enable()

    def _run(self) -> ServingRun:
        wall0 = time.perf_counter()
        sim = self.sim
        driver = sim.driver
        step = self.serving.sync
        horizon = self.serving.horizon
        work = sim.workload
        index = 0
        t = 0
        for service in self.services:
            # Deployed with the replicas its load at the start calls for.
            spec = service.spec
            self._scale(service, 0, spec.replicas_for(spec.load.rate_at(0)))
        while t < horizon:
            for service in self.services:
                self._tick(service, t)
            self._training_gpus.append((t, self._training_allocated()))
            end = t + step
            while index < len(work) and work[index].submit < end:
                self._submit(work[index])
                index += 1
            driver.run_due(until=end - 1)
            t = end
        for service in self.services:
            self._scale(service, t, 0)
        for tj in work[index:]:
            self._submit(tj)
        executor = sim.executor
        records = sim.records

        def finished() -> bool:
            return executor.finished >= len(records)

        # The replicas are services that never end: the run ends with the load (they are
        # cancelled above), then once the training is done, or can do nothing more.
        while driver.run_due(stop=finished, limit=_PROGRESS_EVERY) == _PROGRESS_EVERY:
            if finished() or sim.stalled():
                break
        return ServingRun(
            run=sim.record(time.perf_counter() - wall0),
            replicas=frozenset(self.replicas),
            services={s.spec.name: s.timeline for s in self.services},
            training_gpus=self._training_gpus,
        )

    # -- one service, one period ----------------------------------------------------------
    def _tick(self, service: _Service, t: Instant) -> None:
        spec = service.spec
        jobs = self.sim.engine.jobs
        pending: list[int] = []
        starting: list[int] = []
        ready: list[int] = []
        alive: list[int] = []
        handled_below = self.sim.engine.next_id
        for job_id in service.ids:
            job = jobs.get(job_id)
            if job is None and job_id >= handled_below:
                alive.append(job_id)  # submitted at this instant, not handled yet
                pending.append(job_id)
                continue
            if job is None or job.state.is_final:
                continue  # rejected or gone: no longer asked for
            alive.append(job_id)
            if job.state is JobState.RUNNING and job.start is not None:
                (ready if t >= job.start + spec.startup else starting).append(job_id)
            else:
                pending.append(job_id)
        service.ids = alive
        offered = spec.load.rate_at(t)
        model = spec.latency
        serving = len(ready)
        line = service.timeline
        line.at.append(t)
        line.offered_rps.append(offered)
        line.replicas.append(len(alive))
        line.ready.append(serving)
        line.attainment.append(model.attainment(offered, serving))
        line.p99_ms.append(model.latency_s(0.99, offered, serving) * 1000.0)
        line.busy.append(model.busy(offered, serving))
        seen = Observation(t, len(alive), serving, offered, model.capacity_rps)
        wanted = service.scaler.desired(seen)
        self._scale(service, t, wanted, order=pending[::-1] + starting[::-1] + ready[::-1])

    def _scale(
        self, service: _Service, t: Instant, wanted: int, order: Sequence[int] | None = None
    ) -> None:
        have = len(service.ids)
        driver = self.sim.driver
        if wanted > have:
            for _ in range(wanted - have):
                spec = replica_spec(service.spec, service.count)
                service.count += 1
                job_id = self._submit(TraceJob(t, spec, _FOREVER, trace_id=spec.name))
                service.ids.append(job_id)
                self.replicas.add(job_id)
        elif wanted < have:
            victims = list(order if order is not None else service.ids[::-1])[: have - wanted]
            for job_id in victims:
                driver.deliver(Cancel(t, job_id, by="autoscaler"))
            gone = set(victims)
            service.ids = [j for j in service.ids if j not in gone]

    def _submit(self, tj: TraceJob) -> int:
        """Queue ``tj``'s submission; return its (first) job id."""
        self.sim.driver.deliver(Submit(tj.submit, tj.spec))
        first = self._next_id
        count = len(tj.spec.array.task_ids) if tj.spec.array is not None else 1
        for _ in range(count):
            self.sim.register(self._next_id, tj)
            self._next_id += 1
        return first

    def _training_allocated(self) -> float:
        running = self.sim.engine.running_jobs
        return math.fsum(
            job.alloc.gpus
            for job_id, job in running.items()
            if job.alloc is not None and job_id not in self.replicas
        )
