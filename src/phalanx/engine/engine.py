"""The engine: a sans-IO state machine that owns jobs, the occupancy and the decision log.

``handle(event)`` changes state and returns the commands the driver must carry out, in order.
The engine never reads a clock: ``now`` is the ``at`` of the event being handled. A scheduling
pass runs when a ``PASS`` timer fires; the engine asks for one (``WakeAt(now, PASS)``) whenever
something happened that could let a job start, so the events of one instant share one pass.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from mypy_extensions import mypyc_attr

from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import SIGNALS, JobSpec
from phalanx.domain.state import JobState, Reason, transition
from phalanx.domain.time import Instant
from phalanx.engine.commands import (
    PASS,
    RECALC,
    WAKE,
    Cleanup,
    Command,
    Kill,
    Launch,
    Signal,
    WakeAt,
)
from phalanx.engine.decisions import (
    Cancelled,
    DecisionLog,
    Ended,
    Exited,
    LaunchLost,
    Rejected,
    RequeueAsked,
    Requeued,
    Started,
    Submitted,
    TimedOut,
    Updated,
)
from phalanx.engine.dependencies import LAUNCH_FAILED, blocker
from phalanx.engine.endings import Endings
from phalanx.engine.events import (
    AccountingChange,
    Cancel,
    CleanupDone,
    Event,
    Forget,
    LaunchFailed,
    NodeDown,
    NodeUp,
    NodeUpdate,
    QueuesChange,
    Requeue,
    Submit,
    TasksExited,
    TimerFired,
    Update,
)
from phalanx.engine.housekeeping import housekeep, placement_key
from phalanx.engine.idempotency import RequestIds
from phalanx.engine.nodes import Nodes
from phalanx.engine.queue import PendingQueue
from phalanx.engine.scheduling import Recipe
from phalanx.engine.scheduling.context import PassView
from phalanx.engine.scheduling.elastic import Elastic
from phalanx.engine.scheduling.limits import ClusterLimits
from phalanx.engine.scheduling.members import Holds
from phalanx.engine.scheduling.points import Points
from phalanx.engine.scheduling.preemption import Preemption
from phalanx.engine.scheduling.probe import earliest_fit, never_fits
from phalanx.engine.scheduling.statuses import Statuses
from phalanx.engine.timers import (
    DEFAULT_TIME_LIMIT,
    KILL_WAIT,
    BeginTimer,
    KillTimer,
    LimitTimer,
    PassTimer,
    RecalcTimer,
    ReleaseTimer,
    TimerKey,
    WakeTimer,
)
from phalanx.sched.capacity import Allocation
from phalanx.sched.job import Job
from phalanx.sched.occupancy import Occupancy
from phalanx.sched.profile import Profile
from phalanx.sched.status import OK, Code, Status
from phalanx.sched.usage import Usage

__all__ = ["Engine"]


@mypyc_attr(allow_interpreted_subclasses=True)
class Engine:
    """One scheduling core for the simulator and the live controller."""

    def __init__(self, cluster: Cluster, profile: Profile, *, first_job_id: int = 1) -> None:
        self.cluster = cluster
        self.profile = profile
        self.state = Occupancy(cluster)
        self.usage = Usage(cluster)
        self.points = Points(profile)
        self.decisions = DecisionLog()
        self.jobs: dict[int, Job] = {}
        self._next_id = first_job_id
        self._now: Instant = 0
        self._out: list[Command] = []
        self._queue = PendingQueue()
        self._waiting: dict[int, Job] = {}
        """Pending but not eligible: held, dependencies, begin time."""
        self._ending = Endings()
        self.request_ids = RequestIds()
        self._array_running: dict[int, int] = {}
        self._pass_requested = False
        self._recalc_at: Instant | None = None
        self._keys: dict[object, int] = {}
        self._never: dict[object, str | None] = {}
        """``never_fits`` by shape: it reads only the cluster's configuration, which is fixed."""
        self._wakes: set[Instant] = set()
        self.running_jobs: dict[int, Job] = {}
        """Jobs in state RUNNING (not COMPLETING), for plugins that look at them."""
        self.statuses = Statuses(self.jobs, self._waiting)
        self.nodes = Nodes(
            self.state, self.jobs, self._ending, self.decisions, self.emit, self._clock,
            self._serving_changed,
        )  # fmt: skip
        self.holds = Holds(self.state, self.decisions, self._clock)
        self.preemption = Preemption(
            cluster, self.points.post_filter, self._ending, self.state, self.decisions,
            self.emit, suspend_grace=profile.suspend_grace,
        )  # fmt: skip
        self.view = PassView(
            cluster, self.state, self.usage, self.running_jobs, self.wake_at, self.points,
            self.statuses, self.holds, self.preemption, self._queue.to_back,
        )  # fmt: skip
        limits = ClusterLimits(cluster, self.state, self._array_running)
        self.elastic = Elastic(cluster, self.state, self.decisions, self.emit, self.preemption)
        self.recipe = Recipe(
            self.points, self.view, self.statuses, self.holds, self.preemption, self.elastic
        )
        self.recipe.connect(limits, self.pending, self.start)

    @property
    def passes(self) -> int:
        """Scheduling passes run so far."""
        return self.statuses.passes

    @property
    def deadlocks(self) -> int:
        """Deadlocks among partially reserved gangs counted so far (pod-by-pod profiles)."""
        return self.holds.deadlocks

    # Bound methods, not lambdas, for the pass's helpers: a deep copy of the engine keeps them.
    def _clock(self) -> Instant:
        return self._now

    def emit(self, command: Command) -> None:
        """Add a command to those the event being handled returns."""
        self._out.append(command)

    def start(self, job: Job, alloc: Allocation) -> None:
        """Assume the allocation and emit the launch. The job leaves the pending queue."""
        now = self._now
        self._dequeue(job)
        transition(job, JobState.RUNNING)
        job.reason, job.reason_message = Reason.NONE, ""  # and the pass's message about why
        job.expected_start = None
        job.start = now
        if job.first_start is None:
            job.first_start = now
        job.alloc = alloc
        job.run += 1
        job.usage = job.steps_usage = None  # measured again when this run ends
        job.steps = ()
        self.running_jobs[job.id] = job
        self.state.start(job.id, job.account, alloc, now + job.time_limit)
        if job.array_job_id is not None:
            self._array_running[job.array_job_id] = self._array_running.get(job.array_job_id, 0) + 1
        self.decisions.add(Started(now, job.id, job.run, alloc.nodes))
        self._out.append(Launch(
            job.id, job.run, alloc, job.spec, job.time_limit, job.array_job_id, job.array_task_id
        ))  # fmt: skip
        lead = min(job.spec.signal_lead, job.time_limit)
        self._out.append(WakeAt(now + job.time_limit - lead, LimitTimer(job.id, job.run)))

    def wake_at(self, at: Instant) -> None:
        """Ask for a pass at ``at`` (once per instant)."""
        at = max(at, self._now)
        if at not in self._wakes:
            self._wakes.add(at)
            self._out.append(WakeAt(at, WAKE))

    # ------------------------------------------------------------------ events
    def handle(self, event: Event) -> list[Command]:
        """Apply one event; return the commands it causes, in the order to carry them out."""
        self._now = self.view.now = event.at
        out: list[Command] = []
        self._out = out
        match event:
            case TimerFired(key=key):
                self._on_timer(key)
            case Submit(spec=spec, key=key):
                self._on_submit(spec, key)
            case TasksExited():
                self._on_exited(event)
            case CleanupDone(job_id=job_id, run=run):
                self._on_cleanup_done(job_id, run)
            case Cancel(job_id=job_id, by=by):
                self._on_cancel(job_id, by)
            case Update():
                self._on_update(event)
            case Requeue(job_id=job_id, by=by):
                self._on_requeue(job_id, by)
            case LaunchFailed(job_id=job_id, run=run, reason=reason):
                self._on_launch_failed(job_id, run, reason)
            case NodeDown(node=node):
                self.nodes.went_down(node)
            case NodeUp(node=node):
                self.nodes.came_up(node)
            case NodeUpdate():
                self.nodes.update(event)
            case Forget() | AccountingChange() | QueuesChange():
                housekeep(self, event)
        return out

    def submit(self, spec: JobSpec, at: Instant) -> list[int]:
        """Submit and return the new job ids (one per array task). Same as ``Submit``."""
        first = self._next_id
        self._now = self.view.now = at
        self._out = []
        self._on_submit(spec)
        return list(range(first, self._next_id))

    # -- submit ---------------------------------------------------------------------------
    def _on_submit(self, spec: JobSpec, key: str = "") -> None:
        tasks: Sequence[int | None] = spec.array.task_ids if spec.array else (None,)
        base = self._next_id
        if key:
            self.request_ids.remember(key, base, len(tasks))
        for task in tasks:
            job = self._new_job(spec)
            if task is not None:
                job.array_job_id = base
                job.array_task_id = task
            self._admit_new(job)

    def _new_job(self, spec: JobSpec) -> Job:
        job_id = self._next_id
        self._next_id += 1
        part = self.cluster.partition(spec.partition)
        name = part.name if part is not None else (spec.partition or "")
        limit = spec.time_limit
        if limit is None and part is not None:
            limit = part.default_time
        tier = part.priority_tier if part is not None else 0
        seq = self._queue.next_seq()
        job = Job(job_id, seq, spec, self._now, name, tier, limit or DEFAULT_TIME_LIMIT)
        job.key = self._keys.setdefault(placement_key(self.cluster, job), len(self._keys))
        self.jobs[job_id] = job
        return job

    def _admit_new(self, job: Job) -> None:
        self.decisions.add(Submitted(self._now, job.id, job.seq))
        problem = self._never_fits(job)
        if problem is not None:
            transition(job, JobState.FAILED)
            job.reason = problem
            job.end = self._now
            self.decisions.add(Rejected(self._now, job.id, problem))
            return
        self._make_eligible_or_wait(job)

    def _never_fits(self, job: Job) -> str | None:
        shape = job.shape
        if shape not in self._never:
            self._never[shape] = never_fits(self.cluster, self.state, job)
        return self._never[shape]

    def _blocker(self, job: Job) -> str | None:
        """Why ``job`` may not be scheduled at all yet, or None: a hold, a begin time, a
        dependency, or more nodes than its partition has, which no event changes. Such a job
        stays out of the queue, so it never holds a reservation or delays another."""
        reason = blocker(job, self.jobs, self._now)
        if reason is None:
            part = self.cluster.partitions.get(job.partition)
            if part is not None and job.shape.nodes_min > len(part.nodes):
                return Reason.PARTITION_CONFIG
        return reason

    def _make_eligible_or_wait(self, job: Job) -> None:
        reason = self._blocker(job)
        if reason is None:
            self._enqueue(job)
            self._request_pass()
        else:
            job.reason, job.reason_message = reason, ""
            self._waiting[job.id] = job
            if reason == Reason.BEGIN_TIME and job.spec.begin is not None:
                self._out.append(WakeAt(job.spec.begin, BeginTimer(job.id)))

    def _recheck_waiting(self) -> None:
        for job in list(self._waiting.values()):
            reason = self._blocker(job)
            if reason is None:
                del self._waiting[job.id]
                self._enqueue(job)
                self._request_pass()
            else:
                job.reason, job.reason_message = reason, ""

    # -- the queue ------------------------------------------------------------------------
    def _enqueue(self, job: Job) -> None:
        job.priority, job.factors = self.points.queue_sort.compute(job, self.view, self._now)
        if job.fixed_priority is not None:
            job.priority = job.fixed_priority
        if job.reason is not Reason.PRIORITY:
            self.statuses.not_priority.add(job)
        self._queue.insert(job)
        if not job.shape.gpus or job.shape.milli:
            self.statuses.nonwhole += 1
        if self.preemption.could_preempt(job):
            self.preemption.preemptors += 1
        if self._recalc_at is None and self.profile.calc_period > 0:
            self._recalc_at = self._now + self.profile.calc_period
            self._out.append(WakeAt(self._recalc_at, RECALC))

    def _dequeue(self, job: Job) -> None:
        if self._queue.remove(job):
            self.statuses.not_priority.discard(job)
            if not job.shape.gpus or job.shape.milli:
                self.statuses.nonwhole -= 1
            if self.preemption.could_preempt(job):
                self.preemption.preemptors -= 1
            self.preemption.forget(job.id)
            self.state.bounds.pop(job.id, None)

    def _recalc(self) -> None:
        self.usage.advance(self._now, self.state.account_gpus)
        reordered = self._queue.recalc(self.points.queue_sort, self.view, self._now)
        if self._queue:
            self._recalc_at = self._now + self.profile.calc_period
            self._out.append(WakeAt(self._recalc_at, RECALC))
            # A new order may let another job start; so may time itself, for policies that
            # look at running jobs' attained service (pass_on_recalc).
            if reordered or self.profile.pass_on_recalc:
                self._request_pass()
        else:
            self._recalc_at = None

    def _request_pass(self) -> None:
        if not self._pass_requested:
            self._pass_requested = True
            self._out.append(WakeAt(self._now, PASS))

    # -- timers ---------------------------------------------------------------------------
    def _on_timer(self, key: TimerKey) -> None:
        match key:
            case PassTimer():
                self._pass_requested = False
                self.recipe.run()
                self._queue.release()  # the pass is over: nothing holds the list it walked
            case WakeTimer():
                self._wakes.discard(self._now)
                self._request_pass()
            case RecalcTimer():
                if self._recalc_at == self._now:
                    self._recalc()
            case LimitTimer():
                self._on_limit(key)
            case KillTimer(job_id=job_id, run=run):
                job = self._live_run(job_id, run)
                if job is not None:
                    self._out.append(Kill(job.id, job.run))
            case BeginTimer():
                self._recheck_waiting()
            case ReleaseTimer():
                self.elastic.release(key)

    def _live_run(self, job_id: int, run: int) -> Job | None:
        job = self.jobs.get(job_id)
        if job is None or job.run != run or job.state is not JobState.RUNNING:
            return None  # a stale timer of an earlier run
        return job

    def _on_limit(self, key: LimitTimer) -> None:
        job = self._live_run(key.job_id, key.run)
        if job is None:
            return
        assert job.start is not None
        limit_at = job.start + job.time_limit
        if self._now < limit_at - min(job.spec.signal_lead, job.time_limit):
            return  # the limit was raised since this timer was set: a later one comes
        if self._now < limit_at:
            # The early signal (--signal=SIG@lead); the limit itself comes later.
            self._out.append(Signal(job.id, job.run, job.spec.signal))
            self._out.append(WakeAt(limit_at, LimitTimer(job.id, job.run)))
            return
        self._ending.timeouts.add(job.id)
        self.decisions.add(TimedOut(self._now, job.id, job.run))
        self._out.append(Signal(job.id, job.run, SIGNALS["TERM"]))
        self._out.append(WakeAt(self._now + KILL_WAIT, KillTimer(job.id, job.run)))

    # -- ends -----------------------------------------------------------------------------
    def _on_exited(self, event: TasksExited) -> None:
        job = self.jobs.get(event.job_id)
        if job is None or job.run != event.run or job.state is not JobState.RUNNING:
            return
        transition(job, JobState.COMPLETING)
        self.running_jobs.pop(job.id, None)
        job.exit_code = event.exit_code
        job.exit_signal = event.signal
        job.usage, job.steps_usage = event.usage, event.steps_usage
        job.steps = event.steps
        self.decisions.add(Exited(self._now, job.id, job.run, event.exit_code, event.signal))
        self._out.append(Cleanup(job.id, job.run))

    def _on_cleanup_done(self, job_id: int, run: int) -> None:
        job = self.jobs.get(job_id)
        if job is None or job.run != run or job.state is not JobState.COMPLETING:
            return
        self.state.finish(job.id, job.account)
        assert job.start is not None and job.alloc is not None
        job.attained_gpu_ms += int(job.alloc.gpus * (self._now - job.start))
        if job.array_job_id is not None:
            self._array_running[job.array_job_id] -= 1
        job.start = None
        job.end = self._now
        final = self._ending.final_state(job)
        if final is JobState.REQUEUED:
            job.restarts += 1
            transition(job, JobState.REQUEUED)
            transition(job, JobState.PENDING)
            job.alloc = None
            self.decisions.add(Requeued(self._now, job.id, job.run))
            self._make_eligible_or_wait(job)
        else:
            transition(job, final)
            self.decisions.add(Ended(self._now, job.id, job.run, final))
            if self._waiting:
                self._recheck_waiting()
        self._request_pass()

    # -- cancel, launch failure, node failure ---------------------------------------------
    def _on_cancel(self, job_id: int, by: str) -> None:
        job = self.jobs.get(job_id)
        if job is None or job.state.is_final:
            return
        self.decisions.add(Cancelled(self._now, job.id, by))
        if job.state is JobState.PENDING:
            self._cancel_now(job)
        elif job.state is JobState.RUNNING and job.id not in self._ending.cancelled:
            # As Slurm: SIGTERM now (a job may save its work), SIGKILL after KillWait.
            self._ending.cancelled[job.id] = by
            self._out.append(Signal(job.id, job.run, SIGNALS["TERM"]))
            self._out.append(WakeAt(self._now + KILL_WAIT, KillTimer(job.id, job.run)))

    def _cancel_now(self, job: Job) -> None:
        """End a job that has no running tasks (pending, or its launch failed) CANCELLED."""
        if job.holds:
            self.view.unreserve(job)
        self._dequeue(job)
        self._waiting.pop(job.id, None)
        transition(job, JobState.CANCELLED)
        job.end = self._now
        self.decisions.add(Ended(self._now, job.id, job.run, JobState.CANCELLED))
        self._recheck_waiting()
        self._request_pass()

    def _on_update(self, event: Update) -> None:
        job = self.jobs.get(event.job_id)
        if job is None or job.state.is_final:
            return
        self.decisions.add(Updated(self._now, job.id, event.hold, event.time_limit, event.priority))
        if event.time_limit is not None and event.time_limit > 0:
            job.time_limit = event.time_limit
            self.state.bounds.pop(job.id, None)
            if job.state is JobState.RUNNING and job.start is not None:
                end = job.start + job.time_limit
                self.state.expect_end(job.id, end)
                lead = min(job.spec.signal_lead, job.time_limit)
                self._out.append(WakeAt(max(self._now, end - lead), LimitTimer(job.id, job.run)))
        if event.priority is not None and job.state is JobState.PENDING:
            job.fixed_priority = event.priority
            if self._queue.remove(job):
                job.priority = event.priority
                self._queue.insert(job)
        if event.hold is not None and job.state is JobState.PENDING:
            extra = tuple(kv for kv in job.spec.extra if kv[0] != LAUNCH_FAILED)
            job.spec = dataclasses.replace(job.spec, hold=event.hold, extra=extra)
            if event.hold:
                if job.holds:
                    self.view.unreserve(job)
                self._dequeue(job)
                held = Reason.HELD_ADMIN if event.admin else Reason.HELD_USER
                job.reason, job.reason_message = held, ""
                self._waiting[job.id] = job
            elif job.id in self._waiting:
                self._recheck_waiting()
        self._request_pass()

    def _on_requeue(self, job_id: int, by: str) -> None:
        job = self.jobs.get(job_id)
        if job is None:
            return
        if job.state is JobState.RUNNING:
            self._ending.requeue_asked.add(job.id)
            self.decisions.add(RequeueAsked(self._now, job.id, job.run, by))
            self._out.append(Kill(job.id, job.run))
        elif job.state.is_final:
            self.decisions.add(Requeued(self._now, job.id, job.run))
            job.restarts += 1
            transition(job, JobState.REQUEUED)
            transition(job, JobState.PENDING)
            job.alloc = None
            job.end = None
            job.exit_code = None
            job.exit_signal = 0
            self._make_eligible_or_wait(job)

    def _on_launch_failed(self, job_id: int, run: int, reason: str) -> None:
        job = self.jobs.get(job_id)
        if job is None or job.run != run or job.state is not JobState.RUNNING:
            return
        self.state.finish(job.id, job.account)
        self.running_jobs.pop(job.id, None)
        if job.array_job_id is not None:
            self._array_running[job.array_job_id] -= 1
        job.start = None
        job.alloc = None
        self.decisions.add(LaunchLost(self._now, job.id, run, reason))
        if self._ending.forget(job.id) is not None:
            self._cancel_now(job)  # cancelled while its launch was on the way: no requeue
            return
        # As Slurm: a run that could not start is requeued and held ("launch failed requeued
        # held"; it never began: no restart); retried at once, one that cannot start would loop.
        transition(job, JobState.REQUEUED)
        transition(job, JobState.PENDING)
        extra = (*job.spec.extra, (LAUNCH_FAILED, reason))
        job.spec = dataclasses.replace(job.spec, hold=True, extra=extra)
        self._make_eligible_or_wait(job)

    def _serving_changed(self, node: int, serving: bool) -> None:
        if serving:
            self._request_pass()
            return
        for job in list(self._queue):
            if job.holds and any(node in a.nodes for a in job.holds):
                self.view.unreserve(job)

    # ------------------------------------------------------------------ queries
    @property
    def next_id(self) -> int:
        """The id the next submitted job (or array task) will get."""
        return self._next_id

    def never_fits(self, spec: JobSpec) -> str | None:
        """Why a request could never run on this cluster (Slurm refuses such a submission),
        or None. More nodes than its partition has is such a reason only under
        ``EnforcePartLimits``; without, the job is queued and waits (``PartitionConfig``). The
        job is not created."""
        part = self.cluster.partition(spec.partition)
        name = part.name if part is not None else (spec.partition or "")
        probe = Job(0, 0, spec, self._now, name, 0, spec.time_limit or DEFAULT_TIME_LIMIT)
        return self._never_fits(probe)

    def will_run(self, spec: JobSpec, now: Instant) -> tuple[Instant, Allocation] | None:
        """When and where a request would start if submitted now (``sbatch --test-only``):
        now if it fits, else at the first expected end of the running jobs after which it
        fits. Pending jobs are not counted in front of it: an estimate, as Slurm's is. Nothing
        changes."""
        part = self.cluster.partition(spec.partition)
        if self.never_fits(spec) is not None or (
            part is not None and spec.nodes_min > len(part.nodes)
        ):
            return None
        name = part.name if part is not None else ""
        probe = Job(0, 0, spec, now, name, 0, spec.time_limit or DEFAULT_TIME_LIMIT)
        return earliest_fit(self.view, self.state, probe.shape, now)

    def pending(self) -> list[Job]:
        """Eligible pending jobs, in the order a pass looks at them (before its queue sort)."""
        return self._queue.with_first(self.preemption.claims, self.jobs)

    def pending_count(self) -> int:
        return len(self._queue) + len(self._waiting)

    def status_of(self, job: Job) -> Status:
        if job.state is JobState.PENDING:
            return Status(Code.WAIT, job.reason, job.reason_plugin, job.reason_message)
        return OK
