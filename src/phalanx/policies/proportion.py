"""Volcano's proportion plugin (``pkg/scheduler/plugins/proportion/proportion.go``) for the
``volcano`` profile, over the cluster's Volcano Queues (``scheduling.volcano.sh/v1beta1``).

A job's queue is the one its label ``scheduling.volcano.sh/queue-name`` names (Volcano's
``spec.queue``), else the queue named as its account (namespace) if there is one, else
``default``; a job of a queue that does not exist waits (``InvalidAccount``). Once per pass,
as Volcano once per session:

- each queue's ``allocated`` is what its running jobs hold, its ``request`` that plus what its
  pending jobs ask; ``deserved`` comes from the water-filling over weights, capped by
  capability and raised to the guarantee (``domain.queues.proportion``);
- ``priority/proportion`` (queue sort) serves the queues by ``share`` (the largest
  allocated/deserved over the resources), lowest first, re-read after each job that starts,
  jobs of a queue in queue order (``QueueOrderFn``);
- ``admit/proportion`` (pre-filter) lets a job through only if its queue is not overused
  (``deserved <= allocated`` in every resource, ``OverusedFn``) and the job's request fits in
  ``deserved - allocated`` (``AllocatableFn``); a job let through counts in ``allocated`` at
  once (``AllocateFunc``).

- ``preempt/proportion`` (post-filter, Volcano's ``reclaim`` action with the plugin's
  ``ReclaimableFn``): a job that fits its queue's deserved share but finds no nodes takes
  them back from queues above theirs, reclaimable ones only (``spec.reclaimable``), whole
  gangs, newest first, each victim only while its queue still holds more than it deserves;
  as few as let the job start. A queue that is overused reclaims nothing.

Resources are ``nvidia.com/gpu``,
``cpu`` and ``memory`` in thousandths of their unit, as Volcano Queues state them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping, Sequence

from mypy_extensions import mypyc_attr

from phalanx.domain.cluster import Cluster
from phalanx.domain.quantity import GPU, MILLI_UNITS
from phalanx.domain.queues import Queues, VolcanoQueue
from phalanx.domain.queues.proportion import QueueDemand, deserved
from phalanx.domain.state import JobState, Reason
from phalanx.domain.time import Instant
from phalanx.policies.clusterqueue.amounts import PODS, held, label, requested
from phalanx.policies.volcano import DrfOrder
from phalanx.sched.capacity import Capacity
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job
from phalanx.sched.status import OK, Status

__all__ = [
    "QUEUE_LABEL",
    "ProportionAdmission",
    "ProportionOrder",
    "ProportionReclaim",
    "Shares",
    "queue_of",
]

QUEUE_LABEL = "scheduling.volcano.sh/queue-name"
DEFAULT_QUEUE = "default"
_SCRATCH = "proportion"
_POOL = "proportion:pool"
_EPSILON = 1e-6
_MIB = 2**20

Amounts = dict[str, float]


def queue_of(queues: Queues, job: Job) -> str:
    """The Volcano queue ``job`` belongs to (module docstring)."""
    for key, value in job.spec.extra:
        if key == QUEUE_LABEL:
            return value
    return job.account if job.account in queues.volcano_queues else DEFAULT_QUEUE


def _asks(job: Job) -> Amounts:
    out = requested(job, job.shape.nodes_max)
    return {r: float(a) for r, a in out.items() if r != PODS}


@mypyc_attr(allow_interpreted_subclasses=True)
class Shares:
    """One pass's proportion state: each queue's deserved and allocated resources."""

    def __init__(self, queues: Queues, jobs: Sequence[Job], ctx: PassContext) -> None:
        cluster = ctx.cluster
        self.queues = queues
        self.total: Amounts = {
            GPU: float(cluster.total_gpus * MILLI_UNITS),
            "cpu": float(sum(n.cpus for n in cluster.nodes) * MILLI_UNITS),
            "memory": float(sum(n.memory_mb for n in cluster.nodes) * _MIB * MILLI_UNITS),
        }
        self.allocated: dict[str, Amounts] = {}
        request: dict[str, Amounts] = {}
        for job in ctx.running():
            if job.alloc is None:
                continue
            name = queue_of(queues, job)
            amounts = {r: float(a) for r, a in held(job, job.alloc).items() if r != PODS}
            _add(self.allocated.setdefault(name, {}), amounts)
            _add(request.setdefault(name, {}), amounts)
        for job in jobs:
            _add(request.setdefault(queue_of(queues, job), {}), _asks(job))
        demands = [
            QueueDemand(queues.volcano_queues[name], request[name])
            for name in sorted(request)
            if name in queues.volcano_queues
        ]
        self.deserved: dict[str, Amounts] = deserved(self.total, demands)

    def share(self, name: str) -> float:
        """Volcano's ``share``: the largest allocated/deserved over the resources."""
        allocated = self.allocated.get(name, {})
        most = 0.0
        for resource, want in self.deserved.get(name, {}).items():
            have = allocated.get(resource, 0.0)
            if want > _EPSILON:
                most = max(most, have / want)
            elif have > _EPSILON:  # holds what it does not deserve (Volcano's helpers.Share)
                most = max(most, 1.0)
        return most

    def refusal(self, name: str, asks: Amounts) -> str:
        """Why a job asking ``asks`` of queue ``name`` may not be allocated ("" if it may)."""
        queue: VolcanoQueue | None = self.queues.volcano_queues.get(name)
        if queue is None:
            return f"queue {name} doesn't exist"
        want = self.deserved.get(name, {})
        have = self.allocated.get(name, {})
        if want and all(want[r] <= have.get(r, 0.0) + _EPSILON for r in want):
            return f"queue {name} is overused: it holds its deserved {_gpus(want)}"
        for resource, amount in asks.items():
            free = want.get(resource, 0.0) - have.get(resource, 0.0)
            if amount > free + _EPSILON:
                return (
                    f"queue {name} holds {_say(have.get(resource, 0.0), resource)} of its "
                    f"deserved {_say(want.get(resource, 0.0), resource)}; the job asks "
                    f"{_say(amount, resource)}"
                )
        return ""

    def allocate(self, name: str, asks: Amounts) -> None:
        _add(self.allocated.setdefault(name, {}), asks)

    def over(self, name: str, allocated: Mapping[str, float]) -> bool:
        """Whether ``allocated`` is more than queue ``name`` deserves in some resource
        (Volcano: not ``allocated.LessEqual(deserved)``)."""
        want = self.deserved.get(name, {})
        return any(amount > want.get(r, 0.0) + _EPSILON for r, amount in allocated.items())


def _say(amount: float, resource: str) -> str:
    """An amount as a message says it; a deserved share of GPUs keeps two decimals."""
    whole = round(amount)
    if resource == GPU and abs(amount - whole) > _EPSILON and whole % MILLI_UNITS:
        return f"{amount / MILLI_UNITS:.2f} GPUs"
    return label(whole, resource)


def _gpus(amounts: Mapping[str, float]) -> str:
    return _say(amounts.get(GPU, 0.0), GPU)


def _add(into: Amounts, amounts: Mapping[str, float]) -> None:
    for resource, amount in amounts.items():
        into[resource] = into.get(resource, 0.0) + amount


def _shares(jobs: Sequence[Job], ctx: PassContext) -> Shares | None:
    found = ctx.scratch.get(_SCRATCH)
    if isinstance(found, Shares):
        return found
    queues = ctx.cluster.queues
    if not queues.volcano_queues:
        return None
    shares = Shares(queues, jobs, ctx)
    ctx.scratch[_SCRATCH] = shares
    return shares


@mypyc_attr(allow_interpreted_subclasses=True)
class ProportionOrder(DrfOrder):
    """``priority/proportion``: queues by share, lowest first (module docstring); without
    Volcano Queues, Volcano's DRF order between accounts (``priority/drf``)."""

    plugin = "priority/proportion"

    def compute(
        self, job: Job, ctx: PassContext, now: Instant
    ) -> tuple[float, Mapping[str, float]]:
        return 0.0, {}

    def order(self, jobs: Sequence[Job], ctx: PassContext) -> Iterable[Job]:
        shares = _shares(jobs, ctx)
        if shares is None:
            return super().order(jobs, ctx)
        return self._by_share(jobs, shares)

    @staticmethod
    def _by_share(jobs: Sequence[Job], shares: Shares) -> Iterator[Job]:
        members: dict[str, list[Job]] = {}
        for job in jobs:
            members.setdefault(queue_of(shares.queues, job), []).append(job)
        heap = [(shares.share(name), name, 0) for name in sorted(members)]
        heapq.heapify(heap)
        while heap:
            _, name, pos = heapq.heappop(heap)
            mine = members[name]
            while pos < len(mine):
                job = mine[pos]
                pos += 1
                yield job
                if job.state is not JobState.PENDING:  # it started: the queue's share grew
                    heapq.heappush(heap, (shares.share(name), name, pos))
                    break


@mypyc_attr(allow_interpreted_subclasses=True)
class ProportionAdmission:
    """``admit/proportion`` (module docstring); admits every job without Volcano Queues."""

    plugin = "admit/proportion"

    def __init__(self, params: Mapping[str, object]) -> None:
        del params

    def pre_filter(self, job: Job, ctx: PassContext) -> Status:
        shares = _shares((), ctx)
        if shares is None:
            return OK
        name = queue_of(shares.queues, job)
        asks = _asks(job)
        why = shares.refusal(name, asks)
        if why:
            reason = (
                Reason.INVALID_ACCOUNT
                if name not in shares.queues.volcano_queues
                else (Reason.QUOTA)
            )
            return Status.wait_because(reason, self.plugin, why)
        shares.allocate(name, asks)
        return OK


@mypyc_attr(allow_interpreted_subclasses=True)
class ProportionReclaim:
    """``preempt/proportion`` (module docstring); finds nothing without Volcano Queues."""

    plugin = "preempt/proportion"

    def __init__(self, params: Mapping[str, object]) -> None:
        del params

    @staticmethod
    def could_preempt(job: Job, cluster: Cluster) -> bool:
        """Whether ``job``'s queue exists and some other queue may be reclaimed from."""
        queues = cluster.queues.volcano_queues
        name = queue_of(cluster.queues, job)
        return name in queues and any(q.reclaimable for n, q in queues.items() if n != name)

    def victims(self, job: Job, ctx: PassContext) -> list[Job] | None:
        shares = ctx.scratch.get(_SCRATCH)
        if not isinstance(shares, Shares):
            return None
        name = queue_of(shares.queues, job)
        queues = shares.queues.volcano_queues
        # The pre-filter counted the job in its queue already: it may reclaim while that
        # leaves the queue within what it deserves.
        if name not in queues or shares.over(name, shares.allocated.get(name, {})):
            return None
        pool, others = self._pool(ctx)
        found = ctx.place(job, pool)
        if found is not None:
            pool.take(found)  # what victims on their way out give back goes to one job
            return []
        cap = pool.copy()
        allocated = {q: dict(a) for q, a in shares.allocated.items()}
        chosen: list[Job] = []
        for victim in others:
            owner = queue_of(shares.queues, victim)
            queue = queues.get(owner)
            if owner == name or queue is None or not queue.reclaimable:
                continue
            mine = allocated.setdefault(owner, {})
            if not shares.over(owner, mine):
                continue
            assert victim.alloc is not None
            for resource, amount in held(victim, victim.alloc).items():
                if resource != PODS:
                    mine[resource] = mine.get(resource, 0.0) - amount
            cap.give(victim.alloc)
            chosen.append(victim)
            found = ctx.place(job, cap)
            if found is not None:
                shares.allocated = allocated  # the victims' share is given back
                for gone in chosen:
                    others.remove(gone)
                    pool.give(gone.alloc)  # type: ignore[arg-type]
                pool.take(found)
                return chosen
        return None

    @staticmethod
    def _pool(ctx: PassContext) -> tuple[Capacity, list[Job]]:
        """This pass's free capacity with what jobs on their way out will give back, less
        what jobs waiting for them took; and the running jobs not leaving, newest first
        (Volcano's victims order): set up by the first job that looks."""
        found = ctx.scratch.get(_POOL)
        if isinstance(found, tuple):
            return found
        pool = ctx.state.cap.copy()
        others: list[Job] = []
        for running in ctx.running():
            if running.alloc is None:
                continue
            if ctx.is_preempting(running):
                pool.give(running.alloc)
            else:
                others.append(running)
        others.sort(key=lambda r: -r.seq)
        ctx.scratch[_POOL] = (pool, others)
        return pool, others
