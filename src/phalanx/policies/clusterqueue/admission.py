"""``admit/clusterqueue`` (pre-filter and reserve): admission against Kueue's ClusterQueues,
with borrowing and lending in cohort trees, that knows placement.

Each pass starts from the quota the running jobs hold (not those signalled for preemption,
whose quota goes to the jobs nominated for what they free): a job's ClusterQueue is the one its
namespace's LocalQueue feeds (``Queues.cluster_queue_of``), its flavor per resource group the
first of the group whose nodes hold its whole allocation (Kueue records the assignment in
the Workload; here it is read back from where the job runs). Then, for each job the pass
looks at, in the pass's order:

- a job no queue takes waits (``InvalidAccount``), as does one of a stopped queue;
- under ``StrictFIFO``, once a job of a ClusterQueue waits for quota, the later ones of that
  queue wait behind it (``Priority``); under ``BestEffortFIFO`` they may go past;
- a job asking what another of its LocalQueue was refused in this pass is refused alike
  (its shape key says so: ``Engine`` keys shapes by LocalQueue under ClusterQueues);
- else the flavors are assigned (``assign``): the job waits for quota (``AssocGrpGRES``,
  ``AssocGrpCpuLimit``, ``AssocGrpMemLimit``, with a message in quota terms), or is admitted:
  its quota is counted at once, and its placement narrowed to its flavors' nodes for the
  pass. An admitted job that then finds no placement has its quota held for the rest of the
  pass (Kueue's admitted workload whose pods wait), so nothing later takes what it needs;
  next pass it is admitted afresh.
- a job nominated after a preemption (``PassContext.nominated``) has its quota counted from
  the pass's start (where it fits), so that no job before it takes what its victims freed;
  it is admitted against it when its turn comes.

A job is admitted for its largest shape (``--nodes=min-max`` counts ``max`` nodes: Kueue
admits a workload's full count), so any placement the pass then finds fits the quota.
``reserve`` recounts an admitted job at what its allocation holds (less when it got fewer nodes
than its maximum; more when it holds a whole node's CPUs), and refuses a start that would
then pass the quota. A job that reaches ``reserve`` without the pre-filter (a pod-by-pod
profile) is admitted there against the flavors its nodes are in; the members such a gang
holds while it waits for the rest count only in the pass that placed them (next phase).
``unreserve`` gives nothing back: the job stays admitted for the pass.

With no ClusterQueue configured, the plugin is ``admit/quota``, with that plugin's parameters
(the ``kueue`` profile keeps its behaviour), or, with ``without_queues: none``, admits every
job (for a profile that has no quota of its own); ``cluster_queues: false`` leaves
ClusterQueues alone.

Every profile that has the plugin also holds Slurm's association and QOS limits
(``limits``) before any of this, ClusterQueues or not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter

import numpy as np
from mypy_extensions import mypyc_attr

from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.queues import (
    ClusterQueue,
    PreemptionPolicy,
    QueueingStrategy,
    Queues,
    StopPolicy,
    queue_name,
)
from phalanx.domain.queues.model import has_queue_name
from phalanx.domain.queues.quota import FlavorResource, QuotaNode, QuotaTree
from phalanx.domain.state import Reason
from phalanx.errors import ConfigError
from phalanx.policies.clusterqueue.amounts import requested
from phalanx.policies.clusterqueue.assign import (
    Assignment,
    MaskCache,
    Refusal,
    assign,
    quota_reason,
)
from phalanx.policies.clusterqueue.charge import Charge, charge_of, retally
from phalanx.policies.clusterqueue.forecast import Ending, quota_start, said
from phalanx.policies.clusterqueue.limits import Ledger, job_tres, limits_apply
from phalanx.policies.quota import QuotaAdmission
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job
from phalanx.sched.occupancy import BoolArray
from phalanx.sched.status import OK, Status

__all__ = ["ClusterQueueAdmission", "Pass", "Static", "may_preempt"]

PLUGIN = "admit/clusterqueue"
_LEDGER = "admit/clusterqueue:limits"
_SPECS_KEPT = 200_000
_END_ORDER = itemgetter(0, 1)
"""An ending's (expected end, job id): the forecast's order."""


@mypyc_attr(allow_interpreted_subclasses=True)
class Static:
    """What the queues say about one cluster, derived once: flavor node masks and the
    quota tree (its usage emptied at every pass)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        queues = cluster.queues
        n = len(cluster.nodes)
        self.masks: dict[str, BoolArray] = {}
        for name in queues.flavors:
            mask = np.zeros(n, dtype=np.bool_)
            mask[list(queues.flavor_nodes(cluster, name))] = True
            self.masks[name] = mask
        self.tree = QuotaTree(queues)
        self.within: MaskCache = {}
        self.requests: dict[tuple[object, int], dict[str, int]] = {}
        """(shape key, tasks per node) -> what such a job asks at its largest shape."""
        """Each flavor's nodes within each set of nodes jobs may use (``assign``)."""
        self.nodes = [*self.tree.queues.values(), *self.tree.cohorts.values()]
        self.targets: dict[tuple[str, str, bool, str, str], tuple[ClusterQueue | None, str]] = {}
        self.by_spec: dict[int, tuple[JobSpec, tuple[ClusterQueue | None, str]]] = {}
        """``targets`` by job spec (a spec never changes; kept with it, so an id reused
        after it is gone is told apart), bounded: every pass asks for every running job."""
        self.charges: dict[tuple[int, int], Charge] = {}
        """(job id, run) -> what the run counts against its ClusterQueue, for the running
        jobs the pass's accounting counted (none signalled for preemption at its start)."""
        self.totals: dict[str, dict[FlavorResource, int]] = {}
        """ClusterQueue -> the sum of ``charges`` of its runs (no zero amounts kept)."""
        self.facts: dict[int, tuple[JobSpec, ClusterQueue | None, int]] = {}
        """Job id -> (its spec, its ClusterQueue, its WorkloadPriorityClass value): what a
        victim search asks of every running job (bounded as ``by_spec``)."""

    def facts_of(self, job: Job) -> tuple[JobSpec, ClusterQueue | None, int]:
        """``facts``' entry for ``job``, made on first sight of its spec."""
        spec = job.spec
        found = self.facts.get(job.id)
        if found is None or found[0] is not spec:
            if len(self.facts) > _SPECS_KEPT:
                self.facts.clear()
            queues = self.cluster.queues
            found = self.facts[job.id] = (
                spec,
                self.target(queues, job)[0],
                queues.priority_of(spec),
            )
        return found

    def request(self, job: Job) -> dict[str, int]:
        """``requested`` at the job's largest shape, once per kind of job (read-only)."""
        memo = (job.key, job.spec.tasks_per_node)
        found = self.requests.get(memo)
        if found is None:
            if len(self.requests) > _SPECS_KEPT:
                self.requests.clear()
            found = self.requests[memo] = requested(job, job.shape.nodes_max)
        return found

    def target(self, queues: Queues, job: Job) -> tuple[ClusterQueue | None, str]:
        """The job's ClusterQueue by ``Cluster.cluster_queue_of`` (``queues`` is the
        cluster's: callers hold it already), cached by spec."""
        spec = job.spec
        found = self.by_spec.get(id(spec))
        if found is not None and found[0] is spec:
            return found[1]
        # Naming LocalQueue "default" is not naming none: a QOS or partition route applies
        # only to the latter (``cluster_queue_of``).
        key = (spec.account, queue_name(spec), has_queue_name(spec), spec.partition or "", spec.qos)
        target = self.targets.get(key)
        if target is None:
            # The cluster's routing: a LocalQueue, else the job's QOS or partition.
            target = self.targets[key] = self.cluster.cluster_queue_of(spec)
        if len(self.by_spec) > _SPECS_KEPT:
            self.by_spec.clear()
        self.by_spec[id(spec)] = (spec, target)
        return target


@mypyc_attr(allow_interpreted_subclasses=True)
class Pass:
    """One pass's accounting, shared by the plugin's instances (pre-filter, reserve, the
    queue order) through ``ctx.scratch``: the first to look sets it up."""

    def __init__(self, static: Static) -> None:
        self.static = static
        self.borrows: dict[tuple[object, int], bool] = {}
        """(shape key, tasks per node) -> whether such a job would borrow at the pass's
        start (Kueue's entry ordering)."""
        self.charged: dict[int, dict[FlavorResource, int]] = {}
        self.heads: dict[str, int] = {}
        """StrictFIFO ClusterQueue -> the job that waits for quota at its head."""
        self.endings: list[Ending] | None = None
        """Running jobs' expected ends (``forecast``), when a refusal first asks."""
        self.refused: dict[tuple[object, int], Status] = {}
        """(shape key, tasks per node) -> why such a job was refused: usage only grows
        within a pass, so a job asking as much of the same LocalQueue is refused alike."""
        self.settled: dict[tuple[object, int], Status] = {}
        """(shape key, tasks per node) -> what every later such job of this pass gets,
        once it is known: ``refused``, or StrictFIFO's wait behind the queue's head. A
        job's shape key holds its whole queue route (``Engine``), so it is answered before
        its ClusterQueue is looked up (except a nominated job, which holds quota of its
        own). Cleared with ``refused`` when a preemption gives quota back."""
        self.held: dict[int, dict[FlavorResource, int]] = {}
        """Nominated job (``PassContext.nominated``) -> the quota counted for it from the
        pass's start until it is looked at."""
        self.running: dict[str, dict[FlavorResource, int]] = {}
        """ClusterQueue -> what its running jobs hold (not signalled for preemption), less
        the victims of the pass's preemptions: the quota tree's usage without the quota
        held in the pass for pending jobs (admitted or nominated, not yet placed)."""


@mypyc_attr(allow_interpreted_subclasses=True)
class ClusterQueueAdmission:
    plugin = PLUGIN

    def __init__(self, params: Mapping[str, object]) -> None:
        self._params = params
        self._without_queues = str(params.get("without_queues", "quota"))
        """What a cluster with no ClusterQueue gets: ``quota`` (``admit/quota``, the
        ``kueue`` baseline) or ``none`` (every job admitted)."""
        if self._without_queues not in ("quota", "none"):
            raise ConfigError(
                f"without_queues must be quota or none, got {self._without_queues!r}",
                field=f"{PLUGIN}.without_queues",
            )
        self._cluster_queues = bool(params.get("cluster_queues", True))
        """False: Slurm's association and QOS limits only, ClusterQueues left alone (the
        ``slurm`` baseline does not read Kueue's objects)."""
        self._fallback: QuotaAdmission | None = None
        self._static: Static | None = None
        self._limits_of: Cluster | None = None
        self._any_limits = False

    def _quota(self, ctx: PassContext) -> QuotaAdmission:
        """``admit/quota``, with its parameters from the profile (under either id)."""
        if self._fallback is None:
            self._fallback = QuotaAdmission({**ctx.params("admit/quota"), **self._params})
        return self._fallback

    # -- the pass's accounting ------------------------------------------------------------
    def _setup(self, ctx: PassContext) -> tuple[Static, Pass]:
        static = self._static
        if static is None or static.cluster is not ctx.cluster:
            static = self._static = Static(ctx.cluster)
        current = ctx.scratch.get(PLUGIN)
        if isinstance(current, Pass):
            return current.static, current
        current = ctx.scratch[PLUGIN] = Pass(static)
        for node in static.nodes:
            node.usage.clear()
        queues = ctx.cluster.queues
        # What each run holds never changes while it runs: computed once per run (a pass
        # looks at every running job), and the sums per queue kept from pass to pass, with
        # only the runs that came or went since applied (few, where a pass follows a pass).
        # The tree then takes each sum at once (which counts in the parent what taking its
        # parts in turn would).
        known = static.charges
        charges: dict[tuple[int, int], Charge] = {}
        replaced: list[tuple[tuple[int, int], Charge]] = []
        is_preempting = ctx.is_preempting
        for job in ctx.running():
            alloc = job.alloc
            if alloc is None or is_preempting(job):
                # On its way out: what it holds is counted for the job nominated for it
                # (``_hold_nominated``), as the pass that preempted it counted it.
                continue
            run = (job.id, job.run)
            cached = known.get(run)
            if cached is None or cached.alloc is not alloc or cached.spec is not job.spec:
                cq, _ = static.target(queues, job)
                if cq is None:
                    continue
                if cached is not None:
                    replaced.append((run, cached))
                cached = Charge(alloc, job.spec, cq, self._held_charge(static, cq, job, alloc))
            charges[run] = cached
        totals = static.totals
        retally(totals, known, charges, replaced)
        static.charges = charges
        for name in sorted(totals):
            node = static.tree.queues[name]
            held = totals[name]
            current.running[name] = dict(held)
            for fr, amount in sorted(held.items()):
                node.add(fr, amount)
        self._hold_nominated(static, current, ctx)
        return static, current

    @staticmethod
    def _hold_nominated(static: Static, current: Pass, ctx: PassContext) -> None:
        """Quota freed by preemption is kept for the jobs that preempted (Kueue counts a
        workload pending preemption in its cycle's usage, and skips those that would need
        its quota): each nominated job's quota, where it fits now (its victims gone), is
        counted from the pass's start until the job itself is looked at."""
        queues = ctx.cluster.queues
        for job in ctx.nominated():
            cq, _ = static.target(queues, job)
            if cq is None:
                continue
            node = static.tree.queues[cq.name]
            result = assign(
                cq,
                node,
                static.request(job),
                queues.flavors,
                static.masks,
                ctx.state.static_mask(job.shape),
                lambda mask: True,
                static.within,
            )
            if isinstance(result, Assignment):
                charge = dict(result.charge)
                for fr, amount in charge.items():
                    node.add(fr, amount)
                current.held[job.id] = charge

    @staticmethod
    def _held_charge(
        static: Static, cq: ClusterQueue, job: Job, alloc: Allocation
    ) -> dict[FlavorResource, int]:
        return charge_of(static.masks, cq, job, alloc)

    def accounting(self, ctx: PassContext) -> tuple[Static, Pass]:
        """The pass's quota accounting (set up by the first plugin to look), for the
        ClusterQueue post-filter's what-ifs."""
        return self._setup(ctx)

    def held_charge(self, static: Static, cq: ClusterQueue, job: Job) -> dict[FlavorResource, int]:
        """What running ``job`` counts against ``cq`` (nothing if it holds nothing)."""
        alloc = job.alloc
        if alloc is None:
            return {}
        known = static.charges.get((job.id, job.run))
        if known is not None and known.alloc is alloc and known.cq is cq:
            return known.charge
        return self._held_charge(static, cq, job, alloc)

    # -- queue order --------------------------------------------------------------------
    def kueue_order(self, jobs: Sequence[Job], ctx: PassContext) -> list[Job]:
        """``jobs`` (in queue order) as Kueue's scheduler takes its entries
        (``scheduler.go: entryOrdering``): those that fit without borrowing first, then by
        WorkloadPriorityClass value, then in queue order. Borrowing is judged on the quota
        at the start of the pass, as Kueue judges a cycle's entries on its snapshot."""
        static, current = self._setup(ctx)
        queues = ctx.cluster.queues
        if not queues.priority_classes:
            # Every priority is 0: the order is the non-borrowing jobs, then the others, each
            # in queue order (the sort below would give the same, at a tuple per job).
            return self.nonborrowing_first(jobs, ctx)
        keyed = []
        for position, job in enumerate(jobs):
            borrows = self._borrows(static, current, job, ctx)
            keyed.append((borrows, -queues.priority_of(job.spec), position))
        keyed.sort()
        return [jobs[position] for _, _, position in keyed]

    def nonborrowing_first(self, jobs: Sequence[Job], ctx: PassContext) -> list[Job]:
        """``jobs`` with those that fit their ClusterQueue's nominal quota first, each part
        in the order given (Kueue's entry ordering without its priority classes)."""
        static, current = self._setup(ctx)
        first: list[Job] = []
        then: list[Job] = []
        known = current.borrows
        borrows = self._borrows
        for job in jobs:
            # ``_borrows``'s own memo, looked up here first: a deep queue has few kinds.
            found = known.get((job.key, job.spec.tasks_per_node))
            if found is None:
                found = borrows(static, current, job, ctx)
            (then if found else first).append(job)
        return first + then

    @staticmethod
    def _borrows(static: Static, current: Pass, job: Job, ctx: PassContext) -> bool:
        memo = (job.key, job.spec.tasks_per_node)
        known = current.borrows.get(memo)
        if known is not None:
            return known
        queues = ctx.cluster.queues
        cq, _ = static.target(queues, job)
        borrows = False
        if cq is not None:
            result = assign(
                cq,
                static.tree.queues[cq.name],
                static.request(job),
                queues.flavors,
                static.masks,
                ctx.state.static_mask(job.shape),
                lambda mask: True,
                static.within,
            )
            borrows = isinstance(result, Assignment) and result.borrowing
        current.borrows[memo] = borrows
        return borrows

    # -- Slurm's association and QOS limits ------------------------------------------------
    def _ledger(self, ctx: PassContext) -> Ledger | None:
        """The pass's usage against the limits (``limits``), None where there are none."""
        found = ctx.scratch.get(_LEDGER, False)
        if found is not False:
            return found if isinstance(found, Ledger) else None
        cluster = ctx.cluster
        if self._limits_of is not cluster:
            self._limits_of, self._any_limits = cluster, limits_apply(cluster)
        ledger = Ledger(cluster) if self._any_limits else None
        if ledger is not None:
            for running in ctx.running():
                if running.alloc is not None:
                    ledger.add(running, job_tres(running, running.alloc))
        ctx.scratch[_LEDGER] = ledger
        return ledger

    def idle(self, ctx: PassContext) -> bool:
        """``Idle``: with no ClusterQueue and no association or QOS limit, and every job
        admitted without them (``without_queues: none``, or ``cluster_queues: false``),
        ``pre_filter`` and ``reserve`` answer SUCCESS and keep nothing."""
        cluster = ctx.cluster
        if self._limits_of is not cluster:
            self._limits_of, self._any_limits = cluster, limits_apply(cluster)
        if self._any_limits or cluster.queues.cluster_queues:
            return False
        return not self._cluster_queues or self._without_queues == "none"

    # -- pre-filter -----------------------------------------------------------------------
    def pre_filter(self, job: Job, ctx: PassContext) -> Status:
        ledger = self._ledger(ctx)
        if ledger is None:
            return self._pre_filter(job, ctx)
        tres = job_tres(job)
        status = ledger.check(job, tres, PLUGIN)
        if status.ok:
            status = self._pre_filter(job, ctx)
            if status.ok:
                ledger.add(job, tres)
        return status

    def _pre_filter(self, job: Job, ctx: PassContext) -> Status:
        queues = ctx.cluster.queues
        if not self._cluster_queues:
            return OK
        if not queues.cluster_queues:
            if self._without_queues == "none":
                return OK
            return self._quota(ctx).pre_filter(job, ctx)
        static, current = self._setup(ctx)
        memo = (job.key, job.spec.tasks_per_node)
        settled = current.settled.get(memo)
        if settled is not None and job.id not in current.held:
            return settled
        cq, problem = static.target(queues, job)
        held = current.held.pop(job.id, None)
        if held is not None and cq is not None:
            node = static.tree.queues[cq.name]
            for fr, amount in held.items():
                node.remove(fr, amount)  # the job's own: it is admitted against it now
        if cq is None:
            return Status.wait_because(Reason.INVALID_ACCOUNT, PLUGIN, problem)
        stopped = _stopped(queues, cq, job)
        if stopped:
            return Status.wait_because(Reason.QUEUE_STOPPED, PLUGIN, stopped)
        head = current.heads.get(cq.name)
        if head is not None:
            status = Status.wait_because(
                Reason.PRIORITY,
                PLUGIN,
                f"StrictFIFO: ClusterQueue {cq.name} admits nothing before job {head}",
            )
            current.settled[memo] = status
            return status
        known = current.refused.get(memo)
        if known is not None:
            current.settled[memo] = known
            return known
        node = static.tree.queues[cq.name]
        shape = job.shape
        allowed = ctx.state.static_mask(shape)
        request = static.request(job)

        def placeable(mask: BoolArray) -> bool:
            return ctx.place(job, _only(ctx, mask)) is not None

        result = assign(
            cq, node, request, queues.flavors, static.masks, allowed, placeable, static.within
        )
        if isinstance(result, Refusal):
            if cq.queueing_strategy is QueueingStrategy.STRICT_FIFO:
                current.heads[cq.name] = job.id
            message = result.message
            if result.reason != Reason.INVALID_ACCOUNT:
                found = quota_start(
                    cq,
                    node,
                    request,
                    queues,
                    static.masks,
                    allowed,
                    self._endings(static, current, ctx),
                    static.within,
                )
                message = f"{message}; {said(found, ctx.now)}"
                if found is not None:
                    ctx.expect(job, found[0])
            if result.reason != Reason.INVALID_ACCOUNT and may_preempt(cq):
                status = Status.wait_resolvable(result.reason, PLUGIN, message)
            else:
                status = Status.wait_because(result.reason, PLUGIN, message)
            current.refused[memo] = status
            if cq.queueing_strategy is not QueueingStrategy.STRICT_FIFO:
                current.settled[memo] = status  # the next such job: refused alike (above)
            return status
        self._admit(node, current, job, result)
        if result.nodes is not None:
            ctx.narrow(job, result.nodes)
        return OK

    @staticmethod
    def _endings(static: Static, current: Pass, ctx: PassContext) -> list[Ending]:
        """The running jobs' expected ends with their charges (``forecast``), once a pass."""
        if current.endings is None:
            found: list[Ending] = []
            charges, queues = static.charges, static.tree.queues
            for job in ctx.running():
                known = charges.get((job.id, job.run))
                if known is None or job.start is None:
                    continue
                holder = queues[known.cq.name]
                found.append((job.start + job.time_limit, job.id, holder, known.charge))
            found.sort(key=_END_ORDER)
            current.endings = found
        return current.endings

    @staticmethod
    def _admit(node: QuotaNode, current: Pass, job: Job, result: Assignment) -> None:
        charge = dict(result.charge)
        for fr, amount in charge.items():
            node.add(fr, amount)
        current.charged[job.id] = charge

    # -- reserve --------------------------------------------------------------------------
    def reserve(self, job: Job, alloc: Allocation, ctx: PassContext) -> Status:
        queues = ctx.cluster.queues
        if not queues.cluster_queues:
            return OK
        static, current = self._setup(ctx)
        cq, problem = static.target(queues, job)
        if cq is None:
            return Status.wait_because(Reason.INVALID_ACCOUNT, PLUGIN, problem)
        node = static.tree.queues[cq.name]
        actual = self._held_charge(static, cq, job, alloc)
        before = current.charged.get(job.id, {})
        if actual == before:
            return OK
        for fr, amount in before.items():
            node.remove(fr, amount)
        for fr, amount in actual.items():
            if amount > node.available(fr):
                for back, held_amount in before.items():
                    node.add(back, held_amount)
                return Status.wait_because(
                    quota_reason(fr[1]),
                    PLUGIN,
                    f"ClusterQueue {cq.name}: the allocation found holds more of {fr[1]} in "
                    f"flavor {fr[0]} than its quota has left",
                )
        for fr, amount in actual.items():
            node.add(fr, amount)
        current.charged[job.id] = actual
        return OK

    def unreserve(self, job: Job, ctx: PassContext) -> None:
        """Nothing: an admitted job keeps its quota for the rest of the pass."""
        del job, ctx


def may_preempt(cq: ClusterQueue) -> bool:
    """Whether a job of ``cq`` short of quota may preempt for it (any policy not Never)."""
    p = cq.preemption
    never = PreemptionPolicy.NEVER
    return (
        p.within_cluster_queue is not never
        or p.reclaim_within_cohort is not never
        or p.borrow_within_cohort.policy is not never
    )


def _stopped(queues: Queues, cq: ClusterQueue, job: Job) -> str:
    if cq.stop_policy is not StopPolicy.NONE:
        return f"ClusterQueue {cq.name} is stopped ({cq.stop_policy.value})"
    local = queues.local_queues.get((job.spec.account, queue_name(job.spec)))
    if local is not None and local.stop_policy is not StopPolicy.NONE:
        return f"LocalQueue {local.name} is stopped ({local.stop_policy.value})"
    return ""


def _only(ctx: PassContext, mask: BoolArray) -> Capacity:
    """The free capacity with every node outside ``mask`` taken (a what-if copy)."""
    cap = ctx.state.cap.copy()
    outside = ~mask
    cap.gpus[outside] = 0
    cap.cpus[outside] = 0
    cap.mem[outside] = 0
    cap.dev[outside] = np.minimum(cap.dev[outside], 0)
    return cap
