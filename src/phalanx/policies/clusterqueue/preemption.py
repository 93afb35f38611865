"""``preempt/clusterqueue`` (post-filter): Kueue's preemption within a ClusterQueue and
reclaim within a cohort, with victims whose freed resources form a usable placement.

Kueue's rules (``pkg/scheduler/preemption``, docs ``concepts/preemption``), for a pending job
``P`` of ClusterQueue ``Q``, whose priority is its WorkloadPriorityClass value:

- ``withinClusterQueue``: running jobs of ``Q`` may be victims if of lower priority
  (``LowerPriority``), or also of equal priority and submitted after ``P``
  (``LowerOrNewerEqualPriority``); ``Never``: none.
- ``reclaimWithinCohort``: if ``P`` fits within ``Q``'s nominal quota, jobs of the other
  ClusterQueues of the cohort tree that borrow (use more than their nominal quota of a
  resource ``P`` needs) may be victims: any (``Any``) or those of lower priority
  (``LowerPriority``); ``Never``: none. A victim of another queue is taken only while its
  queue still borrows, so reclaim never pushes a lender below its own nominal quota.
- ``borrowWithinCohort``: if ``P`` needs to borrow, jobs of borrowing queues that
  ``reclaimWithinCohort`` allows, of lower priority than ``P`` and at most
  ``maxPriorityThreshold`` if set, may be victims (``LowerPriority``); ``Never``: none.

Kueue's heuristics are tried in turn ("Targets" in its docs): borrowing allowed, with
``borrowWithinCohort``; reclaim, only if ``P`` fits its nominal quota, and ``P`` must then
fit without borrowing; ``Q``'s own jobs only, borrowing allowed.

Beyond Kueue (``top_up``, on unless the profile says ``false``; the ``kueue`` baseline does):
a job of a queue below its nominal quota that does not fit within it (8-GPU jobs in a queue
that holds 80 of its nominal 86) could never reclaim, so while other queues borrow the
queue stays short of its guarantee, its jobs waiting for idle GPUs (on the first 3,000
Philly jobs, ClusterQueue ``7f04ca``: 51 GPU-hours of guarantee violation, mean wait 22 h).
Such a job may reclaim (``reclaimWithinCohort`` allowing) as a job within nominal does,
borrowing the rest, from queues that still borrow, after each victim, at least as much as
its own queue will with it admitted: Kueue's fair-sharing rule
``LessThanOrEqualToFinalShare`` on borrowed amounts, so that no queue ends borrowing less
than the one that reclaimed, and the reclaiming queue, borrowing afterwards, cannot do so
again until it is below its nominal quota. Only where the queue stands at least
``top_up_min_gap`` (default 0.5) of what the job asks below its nominal quota: a top-up
must win back at least as much guarantee as the job then borrows. Without that bound, on
the first 20,000 Philly jobs on 512 GPUs, 212 of 341 top-ups preempted for an 8-GPU job to
win back 1 or 2 GPUs; the job then borrowed 6 or 7, was the cheapest victim of the next
reclaim (206 of the 241 jobs that topped up were preempted again, 68 topped up again), and
its queue stood below its nominal quota once more: a reclaim storm (``bench/reclaim_log.py``;
mean JCT 40,865 s against 38,020 s without ``top_up``). With it: 38,534 s, and a guarantee
violation of 1,238 GPU-hours against 293 (all top-ups) and 4,979 (none).

``spare_guarantees`` (off): a reclaim or top-up tries last the victims whose queue it would
push from at or above its nominal quota to below it (which moves a guarantee violation
rather than ending one). Measured on those 20,000 jobs and left off: with every top-up
40,957 s and 321.9 GPU-hours, with ``top_up_min_gap`` 0.5 38,871 s and 1,322.2: less work
lost (559 and 460 GPU-hours against 727 and 590) but no lower mean JCT.

The victim set is the one ``preempt/checkpoint`` searches (its ``_search``, with the quota as
its budget): whole gangs, added in order until ``P``'s quota fits and, beyond Kueue, ``P`` has
a placement in its flavors' nodes (Kueue #10815: victims that free scattered GPUs leave the
64-GPU job waiting), then those not needed dropped. ``order: checkpoint`` (the default) tries
them by least work lost since their checkpoints, then Kueue's order; ``order: kueue`` in
Kueue's order only (other queues' borrowers first, then lower priority, then the most recently
started). ``placement: false`` frees quota only, as Kueue does (the ``kueue`` baseline).

With Kueue's fair sharing on (``Queues.fair_sharing``), the heuristics are fair sharing's
instead (``_fair_victims``): victims from the queues with the highest share first, another
queue's taken only while ``fairSharing.preemptionStrategies`` allow.

Asked for a job short of quota (its pre-filter status is ``resolvable``) and for a job that
quota admitted but that has no placement (with ``placement``). Where no queue victims do,
the job may still preempt as ``preempt/checkpoint`` lets it (QOS, tiers, cheap victims),
with that plugin's parameters.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from mypy_extensions import mypyc_attr

from phalanx.domain.cluster import Cluster
from phalanx.domain.queues import (
    ClusterQueue,
    FairSharingStrategy,
    PreemptionPolicy,
    Queues,
    queue_name,
)
from phalanx.domain.queues.model import has_queue_name
from phalanx.domain.queues.quota import FlavorResource, QuotaNode
from phalanx.errors import ConfigError
from phalanx.policies.clusterqueue.admission import (
    ClusterQueueAdmission,
    Pass,
    Static,
    may_preempt,
)
from phalanx.policies.clusterqueue.assign import Assignment, assign
from phalanx.policies.clusterqueue.fairshare import guess_charge, may_preempt_from, share
from phalanx.policies.preempt_checkpoint import CheckpointPreempt, lost_work
from phalanx.sched.capacity import Capacity
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job
from phalanx.sched.occupancy import BoolArray

__all__ = ["ClusterQueuePreempt"]

PLUGIN = "preempt/clusterqueue"


@mypyc_attr(allow_interpreted_subclasses=True)
class ClusterQueuePreempt(CheckpointPreempt):
    plugin = PLUGIN

    def __init__(self, params: Mapping[str, object]) -> None:
        super().__init__(params)
        self.order = str(params.get("order", "checkpoint"))
        if self.order not in ("checkpoint", "kueue"):
            raise ConfigError(
                f"order must be checkpoint or kueue, got {self.order!r}", field=f"{PLUGIN}.order"
            )
        self.placed = bool(params.get("placement", True))
        self.top_up = bool(params.get("top_up", True))
        gap = params.get("top_up_min_gap", 0.5)
        if not isinstance(gap, int | float) or not 0 <= gap <= 1:
            raise ConfigError(
                f"top_up_min_gap must be a number from 0 to 1, got {gap!r}",
                field=f"{PLUGIN}.top_up_min_gap",
            )
        self.top_up_min_gap = float(gap)
        self.spare_guarantees = bool(params.get("spare_guarantees", False))
        self._admission = ClusterQueueAdmission({"without_queues": "none"})

    _routes: dict[tuple[str, str | None, str | None, str | None], bool] | None = None
    """``could_preempt`` by what ``Cluster.cluster_queue_of`` reads of a spec, for the
    cluster ``_routes_of`` (the engine asks at every enqueue and dequeue). Class defaults,
    so a plugin pickled before they existed gets them on first use."""
    _routes_of: Cluster | None = None

    def could_preempt(self, job: Job, cluster: Cluster) -> bool:
        """Whether ``job``'s ClusterQueue lets it preempt at all (stable for a job)."""
        queues = cluster.queues
        if not queues.cluster_queues:
            return False
        spec = job.spec
        label = queue_name(spec) if has_queue_name(spec) else None
        key = (spec.account, label, spec.partition, spec.qos)
        routes = self._routes
        if routes is None or self._routes_of is not cluster:
            routes, self._routes_of = {}, cluster
            self._routes = routes
        can = routes.get(key)
        if can is None:
            cq, _ = cluster.cluster_queue_of(spec)
            can = routes[key] = cq is not None and may_preempt(cq)
        return can

    def victims(self, job: Job, ctx: PassContext) -> list[Job] | None:
        queues = ctx.cluster.queues
        if not queues.cluster_queues:
            return super().victims(job, ctx)
        static, current = self._admission.accounting(ctx)
        cq, _ = static.target(queues, job)
        admitted = job.id in current.charged
        if cq is None or not may_preempt(cq) or (admitted and not self.placed):
            return super().victims(job, ctx) if admitted else None
        if ctx.victims_leaving(job):
            return None
        if admitted and self.placed:
            # Quota admits it and what earlier preemptions free will hold it: it waits for
            # those victims' kill rather than preempting more for a placement already coming
            # (and is nominated for it: ``[]``).
            leaving = with_leaving(ctx, ctx.state.cap)
            if leaving is not ctx.state.cap and ctx.place(job, leaving) is not None:
                return []
        memo = ctx.state.memo()
        key = (PLUGIN, ctx.now, cq.name, job.key, job.spec.tasks_per_node, admitted)
        found: list[Job] | None = None
        if key not in memo:
            found = self._queue_victims(job, ctx, static, current, queues, cq, admitted)
            if found is None:
                memo[key] = True  # a job like it fails alike until the running set changes
        if found is None and admitted:
            return super().victims(job, ctx)
        return found

    def _queue_victims(
        self,
        job: Job,
        ctx: PassContext,
        static: Static,
        current: Pass,
        queues: Queues,
        cq: ClusterQueue,
        admitted: bool,
    ) -> list[Job] | None:
        """Kueue's classic heuristics in turn (docs ``concepts/preemption``, "Targets"):
        while borrowing, if ``borrowWithinCohort`` allows; reclaiming without borrowing, if
        the job fits its nominal quota; its own queue's jobs only, borrowing allowed."""
        budget = _QuotaBudget(self._admission, static, current, queues, cq, job, ctx, admitted)
        budget.placed = self.placed
        if queues.fair_sharing.enable:
            return self._fair_victims(job, ctx, current, queues, budget)
        modes = []
        if cq.preemption.borrow_within_cohort.policy is not PreemptionPolicy.NEVER:
            modes.append(_BORROW)
        if budget.within_nominal:
            modes.append(_RECLAIM)
        elif self.top_up and budget.below_nominal(self.top_up_min_gap):
            modes.append(_TOP_UP)
        modes.append(_OWN)
        tried: list[list[int]] = []
        now = ctx.now
        for mode in modes:
            candidates = budget.candidates(ctx, mode)
            ids = [r.id for r in candidates]
            if not candidates or ids in tried:
                continue
            tried.append(ids)
            if self.order == "kueue":
                candidates.sort(key=budget.kueue_key)
            elif self.spare_guarantees:
                candidates.sort(
                    key=lambda r: (budget.breaks(r), lost_work(r, now), *budget.kueue_key(r))
                )
            else:
                candidates.sort(key=lambda r: (lost_work(r, now), *budget.kueue_key(r)))
            found = self._search(job, ctx, candidates, True, budget)
            if found is None and self.placed and len(candidates) > 1:
                # Cheapest first may free quota on scattered nodes and run out of victims a
                # borrowing queue may still lose before a placement forms: try again node
                # by node, so that the victims taken first free whole nodes together.
                candidates.sort(key=lambda r: (_first_node(r), lost_work(r, now), r.seq))
                found = self._search(job, ctx, candidates, True, budget)
            if found is not None:
                budget.commit(found, current)
                return found
        return None

    def _fair_victims(
        self, job: Job, ctx: PassContext, current: Pass, queues: Queues, budget: _QuotaBudget
    ) -> list[Job] | None:
        """Fair sharing's preemption (docs ``concepts/fair_sharing``): the job's own queue's
        jobs by ``withinClusterQueue``, and other borrowing queues' of the cohort by
        ``reclaimWithinCohort``, those of the queue with the highest share first; another
        queue's job only while the strategy holds (``fairshare.may_preempt_from``), each
        of ``fairSharing.preemptionStrategies`` tried in turn. Borrowing is allowed."""
        now = ctx.now
        for strategy in queues.fair_sharing.preemption_strategies:
            budget.strategy = strategy
            candidates = budget.candidates(ctx, _FAIR)
            if not candidates:
                return None
            by_queue = {budget.queue_of[r.id].name: budget.queue_of[r.id] for r in candidates}
            of_queue = {name: budget.share_of(q) for name, q in by_queue.items()}
            shares = {r.id: of_queue[budget.queue_of[r.id].name] for r in candidates}
            candidates.sort(key=lambda r: (-shares[r.id], *budget.kueue_key(r)))
            found = self._search(job, ctx, candidates, True, budget)
            if found is None and self.placed and len(candidates) > 1:
                # As in ``_queue_victims``: node by node, within the share order's queues.
                candidates.sort(
                    key=lambda r: (-shares[r.id], _first_node(r), lost_work(r, now), r.seq)
                )
                found = self._search(job, ctx, candidates, True, budget)
            if found is not None:
                budget.commit(found, current)
                return found
        return None


def _first_node(job: Job) -> int:
    alloc = job.alloc
    return min(alloc.nodes) if alloc is not None and len(alloc.nodes) else -1


_BORROW, _RECLAIM, _TOP_UP, _OWN, _FAIR = "borrow", "reclaim", "top-up", "own", "fair"


@mypyc_attr(allow_interpreted_subclasses=True)
class _QuotaBudget:
    """The quota side of a victim search for ``job`` of ``cq`` (``VictimBudget``): which
    running jobs are candidates, and whether the job's quota fits with some of them gone.
    What-ifs change the pass's quota tree and are undone by the search."""

    placed = True

    def __init__(
        self,
        admission: ClusterQueueAdmission,
        static: Static,
        current: Pass,
        queues: Queues,
        cq: ClusterQueue,
        job: Job,
        ctx: PassContext,
        admitted: bool,
    ) -> None:
        self.admission = admission
        self.static = static
        self.current = current
        self.queues = queues
        self.cq = cq
        self.job = job
        self.ctx = ctx
        self.admitted = admitted
        self.node = static.tree.queues[cq.name]
        self.request = static.request(job)
        self.needed: set[FlavorResource] = set()
        for resource in self.request:
            group = cq.group_of(resource)
            if group is not None:
                self.needed.update((f.name, resource) for f in group.flavors)
        self.priority = queues.priority_of(job.spec)
        self.within_nominal = self._within_nominal()
        self.taken: dict[int, tuple[QuotaNode, dict[FlavorResource, int]]] = {}
        self.gone: dict[str, dict[FlavorResource, int]] = {}
        """ClusterQueue -> what the victims taken so far held of it (``take``, ``put``)."""
        self.assignment: Assignment | None = None
        self.queue_of: dict[int, ClusterQueue] = {}
        self.mode = _OWN
        self.strategy: FairSharingStrategy | None = None
        """With fair sharing (mode ``_FAIR``): the preemption strategy being tried."""
        fair = queues.fair_sharing.enable
        self.own_charge = {} if admitted or not fair else guess_charge(cq, self.node, self.request)
        """With fair sharing, the job's charge for its share after admission (already
        counted if admitted)."""
        self._mine: int | None = None
        """Its queue's share after admission, while no victim of its own queue changes it."""

    def share_of(self, cq: ClusterQueue, delta: dict[FlavorResource, int] | None = None) -> int:
        return share(self.static.tree.queues[cq.name], cq.fair_sharing_weight, delta)

    def _within_nominal(self) -> bool:
        """Whether the job fits in its queue's nominal quota, were nothing borrowed from it
        (Kueue reclaims only for a workload that fits within nominal)."""
        node = self.node
        for resource, amount in self.request.items():
            group = self.cq.group_of(resource)
            if group is None:
                continue
            own = [(f.name, resource) for f in group.flavors]
            if not any(node.usage.get(fr, 0) + amount <= node.nominal(fr) for fr in own):
                return False
        return True

    def below_nominal(self, min_gap: float = 0.0) -> bool:
        """Whether the job's queue uses less than its nominal quota of every resource the
        job asks, in some flavor, by at least ``min_gap`` of what the job asks (the
        ``top_up`` case, module docstring)."""
        node = self.node
        for resource, amount in self.request.items():
            group = self.cq.group_of(resource)
            if group is None:
                continue
            own = [(f.name, resource) for f in group.flavors]
            if not any(
                node.usage.get(fr, 0) < node.nominal(fr)
                and node.nominal(fr) - node.usage.get(fr, 0) >= min_gap * amount
                for fr in own
            ):
                return False
        return True

    def breaks(self, r: Job) -> bool:
        """Whether taking ``r`` alone would push its queue (another one), from at or above
        its nominal quota of something the job needs, below it: a victim that moves a
        guarantee violation from one queue to another (``spare_guarantees`` tries those
        last)."""
        rcq = self.queue_of[r.id]
        if rcq.name == self.cq.name:
            return False
        node = self.static.tree.queues[rcq.name]
        charge = self.admission.held_charge(self.static, rcq, r)
        return any(
            n > 0
            and fr in self.needed
            and node.usage.get(fr, 0) - n < node.nominal(fr) <= node.usage.get(fr, 0)
            for fr, n in charge.items()
        )

    def _borrowed_after(self) -> dict[FlavorResource, int]:
        """What the job's queue will borrow of each flavor-resource it may take, with the
        job admitted there (the least over its flavors, by resource)."""
        node = self.node
        out: dict[FlavorResource, int] = {}
        for resource, amount in self.request.items():
            group = self.cq.group_of(resource)
            if group is None:
                continue
            own = [(f.name, resource) for f in group.flavors]
            least = min(node.usage.get(fr, 0) + amount - node.nominal(fr) for fr in own)
            for fr in own:
                out[fr] = least
        return out

    def _borrowing(self, node: QuotaNode) -> bool:
        return any(node.usage.get(fr, 0) > node.nominal(fr) for fr in self.needed)

    def candidates(self, ctx: PassContext, mode: str) -> list[Job]:
        """Running jobs Kueue's policies let ``job`` preempt in ``mode`` (module docstring):
        its queue's by ``withinClusterQueue``; with ``_RECLAIM``, ``_TOP_UP`` and
        ``_BORROW``, also borrowing queues' of the cohort by ``reclaimWithinCohort``, and
        with ``_BORROW`` by ``borrowWithinCohort`` too."""
        p = self.cq.preemption
        static, job = self.static, self.job
        tree = static.tree.queues
        root = self.node.cohort_root() if self.node.parent is not None else None
        borrow = p.borrow_within_cohort
        reclaim = p.reclaim_within_cohort
        self.mode = mode
        mine, newer_than = self.cq.name, job.seq
        # Another queue's jobs are candidates only while it borrows, in the job's cohort
        # tree: one look per queue, not per running job (no usage changes in this loop).
        others: dict[str, bool] = {}
        if p.within_cluster_queue is PreemptionPolicy.NEVER:
            if mode == _OWN or root is None:
                return []
            for name, rnode in tree.items():
                if name != mine:
                    others[name] = rnode.cohort_root() is root and self._borrowing(rnode)
            if not any(others.values()):
                return []  # no queue may lose a job: no running job to look at
        facts, facts_of = static.facts, static.facts_of
        held_charge, needed = self.admission.held_charge, self.needed
        is_preempting = ctx.is_preempting
        out: list[Job] = []
        for r in ctx.running():
            if r.alloc is None or r.id == job.id:
                continue
            known = facts.get(r.id)
            if known is None or known[0] is not r.spec:
                known = facts_of(r)
            _, rcq, prio = known
            if rcq is None:
                continue
            if rcq.name == mine:
                ok = _within_ok(p.within_cluster_queue, prio, self.priority, r.seq > newer_than)
            elif mode == _OWN or root is None:
                continue
            else:
                lends = others.get(rcq.name)
                if lends is None:
                    rnode = tree[rcq.name]
                    lends = others[rcq.name] = rnode.cohort_root() is root and self._borrowing(
                        rnode
                    )
                if not lends:
                    continue
                ok = reclaim is PreemptionPolicy.ANY or (
                    reclaim is PreemptionPolicy.LOWER_PRIORITY and prio < self.priority
                )
                if mode == _BORROW:
                    limit = borrow.max_priority_threshold
                    ok = ok and prio < self.priority and (limit is None or prio <= limit)
            if not ok or is_preempting(r):
                continue
            if not self.admitted and needed.isdisjoint(held_charge(static, rcq, r)):
                continue  # frees none of the quota the job lacks
            self.queue_of[r.id] = rcq
            out.append(r)
        return out

    def kueue_key(self, r: Job) -> tuple[int, int, int, int]:
        """Kueue's candidate order: other queues' first, lower priority, latest start."""
        own = self.queue_of[r.id].name == self.cq.name
        return (own, self.queues.priority_of(r.spec), -(r.start or 0), -r.seq)

    # -- VictimBudget ----------------------------------------------------------------------
    def may_take(self, victim: Job) -> bool:
        rcq = self.queue_of[victim.id]
        if rcq.name == self.cq.name:
            return True
        if self.mode == _FAIR and self.strategy is not None:
            # Shares as the victims so far left them (``take`` changed the tree).
            before = self.share_of(rcq)
            if before <= 0:
                return False  # it does not borrow
            after = before
            if self.strategy is FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
                charge = self.admission.held_charge(self.static, rcq, victim)
                after = self.share_of(rcq, {fr: -amount for fr, amount in charge.items()})
            if self._mine is None:
                self._mine = self.share_of(self.cq, self.own_charge)
            return may_preempt_from(self.strategy, self._mine, before, after)
        node = self.static.tree.queues[rcq.name]
        if self.mode == _TOP_UP:
            # Its queue must borrow, with the victim gone, at least what the job's will.
            # Only what the job's queue will borrow is compared (CPUs and memory are not
            # borrowed here); a victim that frees none of it is not taken. Its queue is
            # judged by what its running jobs hold, not by the quota tree, which also
            # counts what the pass admitted of its pending jobs: those may find no
            # placement, and with them left out at the next pass the victim's queue stood
            # within its nominal quota and reclaimed the job straight back (a ping-pong on
            # the first 30,000 Philly jobs: 1,380 top-ups by one queue, 1,381 reclaims back).
            charge = self.admission.held_charge(self.static, rcq, victim)
            mine = self._borrowed_after()
            freed = [(fr, n) for fr, n in charge.items() if n > 0 and mine.get(fr, 0) > 0]
            running = self.current.running.get(rcq.name, {})
            gone = self.gone.get(rcq.name, {})
            return bool(freed) and all(
                running.get(fr, 0) - gone.get(fr, 0) - n - node.nominal(fr) >= mine[fr]
                for fr, n in freed
            )
        return self._borrowing(node)

    def take(self, victim: Job) -> None:
        rcq = self.queue_of[victim.id]
        node = self.static.tree.queues[rcq.name]
        charge = self.admission.held_charge(self.static, rcq, victim)
        gone = self.gone.setdefault(rcq.name, {})
        for fr, amount in charge.items():
            node.remove(fr, amount)
            gone[fr] = gone.get(fr, 0) + amount
        self.taken[victim.id] = (node, charge)
        if node is self.node:
            self._mine = None

    def put(self, victim: Job) -> None:
        node, charge = self.taken.pop(victim.id)
        gone = self.gone[self.queue_of[victim.id].name]
        for fr, amount in charge.items():
            node.add(fr, amount)
            gone[fr] -= amount
        if node is self.node:
            self._mine = None

    def commit(self, victims: list[Job], current: Pass) -> None:
        """The pass's accounting after the preemption: the victims' quota is gone and the
        job's is held (as Kueue's cycle counts a preempting workload's assignment), so later
        jobs of the pass neither take it nor preempt again for it."""
        for v in victims:
            self.take(v)
            running = current.running.get(self.queue_of[v.id].name)
            if running is not None:
                for fr, amount in self.taken[v.id][1].items():
                    running[fr] = running.get(fr, 0) - amount
        # Usage shrank: the pass's refusals by shape no longer hold (a job asking as much
        # may fit the quota the victims gave back beyond what this job needs).
        current.refused.clear()
        current.settled.clear()
        if self.admitted or not self.enough() or self.assignment is None:
            return
        charge = dict(self.assignment.charge)
        for fr, amount in charge.items():
            self.node.add(fr, amount)
        current.charged[self.job.id] = charge

    def enough(self) -> bool:
        if self.admitted:
            return True
        ctx, static = self.ctx, self.static
        result = assign(
            self.cq,
            self.node,
            self.request,
            self.queues.flavors,
            static.masks,
            ctx.state.static_mask(self.job.shape),
            lambda mask: True,
            static.within,
        )
        if not isinstance(result, Assignment):
            return False
        if self.mode == _RECLAIM and result.borrowing:
            return False  # reclaim gives back nominal quota, not more
        self.assignment = result
        return True

    def capacity(self, cap: Capacity) -> Capacity:
        """``cap`` with what jobs already on their way out will free (victims are chosen
        for what is missing beyond it), within the job's flavors' nodes."""
        out = with_leaving(self.ctx, cap)
        found = self.assignment
        if self.admitted or found is None or found.nodes is None:
            return out
        return _within(out, found.nodes)


def with_leaving(ctx: PassContext, cap: Capacity) -> Capacity:
    """``cap`` (a copy if anything changes) with the resources of the running jobs already
    signalled for preemption given back, as they will be at their kill."""
    leaving = [r.alloc for r in ctx.running() if r.alloc is not None and ctx.is_preempting(r)]
    if not leaving:
        return cap
    out = cap.copy()
    for alloc in leaving:
        out.give(alloc)
    return out


def _within_ok(policy: PreemptionPolicy, prio: int, mine: int, newer: bool) -> bool:
    if policy is PreemptionPolicy.LOWER_PRIORITY:
        return prio < mine
    if policy is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY:
        return prio < mine or (prio == mine and newer)
    return False


def _within(cap: Capacity, mask: BoolArray) -> Capacity:
    """``cap`` with every node outside ``mask`` taken (a copy)."""
    out = cap.copy()
    outside = ~mask
    out.gpus[outside] = 0
    out.cpus[outside] = 0
    out.mem[outside] = 0
    out.dev[outside] = np.minimum(out.dev[outside], 0)
    return out
