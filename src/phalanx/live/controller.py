"""The controller: the one process that decides. Engine, journal, loop and fleet, on asyncio.

It answers the API (submit, cancel, queries, the agent protocol) from the event loop thread,
so the engine is only ever touched by one thread. Inputs are journaled before they are
acknowledged; effects follow commits (see ``phalanx.runtime.driver``: the simulator's loop,
here with the wall clock and the fleet as its ports). At start it restores the last snapshot
and replays the journal after it (``phalanx.live.snapshot``), then waits for agents to say
what still runs; while it runs it saves a snapshot as often as its ``Cadence`` says,
forgetting ended jobs past MinJobAge once their accounting record is stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from phalanx.domain.caller import Caller
from phalanx.domain.cluster import Cluster
from phalanx.domain.fairshare import ShareRow
from phalanx.domain.forecast import Forecast
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.jobstep import StepSpec
from phalanx.domain.state import JobState, Reason
from phalanx.domain.time import Duration, Instant
from phalanx.engine import Cancel, Engine, NodeUpdate, Requeue, Signal, Update
from phalanx.engine.decisions import Ended
from phalanx.engine.nodes import UPDATE_STATES, NodeNote
from phalanx.errors import Conflict, NotAllowed, NotFound, SpecError
from phalanx.live.accounting import AccountingTable, ArchivedJobs, MemoryAccounting
from phalanx.live.agentdesk import AgentDesk
from phalanx.live.clock import WallClock
from phalanx.live.epochs import EpochStore, MemoryEpochs
from phalanx.live.fleet import DEAD_AFTER, Fleet, RunKey, Step, StepError
from phalanx.live.journal import Journal, StoreJournal
from phalanx.live.keyedbatch import KeyedBatch
from phalanx.live.ledger import Ledger
from phalanx.live.requestcheck import Pairs, change_accounting, check
from phalanx.live.snapshot import Cadence, Snapshots
from phalanx.protocol.agent import (
    AgentCommand,
    AgentFault,
    AgentHello,
    AgentReports,
    NodeFacts,
)
from phalanx.runtime import Clock, Driver
from phalanx.sched.job import Job
from phalanx.sched.profile import Profile

__all__ = ["Controller", "PassStats"]

log = logging.getLogger("phalanx.controller")


@dataclass
class PassStats:
    """Scheduling-pass durations and submissions, for /metrics."""

    durations: list[float] = field(default_factory=list)
    """Seconds per handled batch that ran a pass, since the last scrape drained it."""
    submitted: int = 0
    passes: int = 0


class Controller(ArchivedJobs):
    def __init__(
        self,
        cluster: Cluster,
        profile: Profile,
        journal: Journal,
        *,
        clock: Clock | None = None,
        epilog_ms: Duration = 0,
        dead_after: Duration = DEAD_AFTER,
        run_as_submitter: bool | None = None,
        epochs: EpochStore | None = None,
        accounting: AccountingTable | None = None,
        record: Callable[[Job], str] | None = None,
        cadence: Cadence | None = None,
        reopen: Callable[[], StoreJournal] | None = None,
    ) -> None:
        """Snapshots, ``accounting`` and ``reopen``: see ``Snapshots``."""
        self.clock = clock or WallClock()
        self.id = uuid.uuid4().hex
        self.engine = Engine(cluster, profile)
        self.loop = Driver(self.engine, self.clock, journal, monotonic=True)
        self.fleet = Fleet(
            cluster,
            self.loop.report,
            self.loop.deliver,
            epilog_ms=epilog_ms,
            run_as_submitter=run_as_submitter,
        )
        self.loop.attach(self.fleet)
        self.stats = PassStats()
        self.ledger = Ledger()
        self.started = self.clock.now()
        self.recovered = 0
        self._kick = asyncio.Event()
        self.agents = AgentDesk(
            self.fleet,
            self.loop,
            self.clock,
            epochs if epochs is not None else MemoryEpochs(),
            dead_after=dead_after,
            started=self.started,
            accepted=self._accepted,
        )
        self._stop = False
        self._watchers: list[Callable[[set[int]], None]] = []
        self._ends: deque[tuple[Instant, Job]] = deque()
        self._array_members: dict[int, list[int]] = {}
        self.accounting = accounting if accounting is not None else MemoryAccounting()
        self.snapshots = Snapshots(
            self.loop,
            self.fleet,
            self.accounting,
            record,
            cadence=cadence,
            reopen=reopen,
        )

    @property
    def cluster(self) -> Cluster:
        """The engine's: ``sacctmgr`` changes its accounting (``AccountingChange``)."""
        return self.engine.cluster

    # ------------------------------------------------------------------ life cycle
    def recover(self) -> int:
        """Restore the last snapshot, replay the journal after it; return the inputs read."""
        self.fleet.replaying = True
        try:
            self.recovered = self.snapshots.recover(self.clock.now())
        finally:
            self.engine = self.loop.engine
            running = self.engine.jobs.values()
            self.fleet.finish_replay((j.id, j.run) for j in running if j.state is JobState.RUNNING)
        self._index_arrays()
        return self.recovered

    def adopt(self, now: Instant) -> None:
        """After a standby's takeover (``phalanx.live.standby``): the agents' epochs as the
        store has them now, the arrays of the jobs followed, and agents given as long to
        come back as after a restart."""
        self.started = self.agents.started = now
        self.agents.load_epochs()
        self._index_arrays()

    def _index_arrays(self) -> None:
        self._array_members.clear()
        for job in self.engine.jobs.values():
            if job.array_job_id is not None:
                self._array_members.setdefault(job.array_job_id, []).append(job.id)

    async def run(self) -> None:
        """Drive the loop until ``stop``: handle what is due, wake for the next timer,
        a new input, or the liveness check, whichever comes first."""
        last_check = 0.0
        while not self._stop:
            self._kick.clear()
            self.step()
            mono = time.monotonic()
            if mono - last_check >= 1.0:
                last_check = mono
                self.agents.check_liveness()
            due = self.loop.next_due()
            wait = 1.0
            if due is not None:
                wait = min(wait, max(0.0, (due - self.clock.now()) / 1000))
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._kick.wait(), wait)
            else:
                await asyncio.sleep(0)  # let the API in between batches

    def step(self) -> int:
        passes = self.engine.passes
        t0 = time.perf_counter()
        handled = self.loop.run_due()
        if self.engine.passes != passes:
            self.stats.passes += self.engine.passes - passes
            self.stats.durations.append(time.perf_counter() - t0)
        self.book(account=True)
        if self.snapshots.due():
            self.save_snapshot(background=True)
        return handled

    def book(self, *, account: bool = False) -> None:
        """Take the engine's decisions into the efficiency ledger (and, ``account``, store
        the records of the jobs that ended), then drop them: the controller keeps no
        unbounded log (the journal is the history). A standby books without storing."""
        entries = self.engine.decisions.entries
        if entries:
            if self._watchers:
                changed = {e.job_id for e in entries if hasattr(e, "job_id")}
                for watcher in self._watchers:
                    watcher(changed)
            jobs = self.engine.jobs
            if account:
                self.snapshots.account([jobs[e.job_id] for e in entries if type(e) is Ended])
            self.ledger.consume(entries, jobs)
            entries.clear()

    # ------------------------------------------------------------------ snapshots
    def save_snapshot(self, *, background: bool = False) -> bool:
        """``Snapshots.save`` (done when this returns unless ``background``), and forget
        the arrays whose every task it forgot."""
        self.loop.settle()
        forgotten = self.snapshots.save(background=background)
        if forgotten is None:
            return False
        jobs = self.engine.jobs
        for array in {j.array_job_id for j in forgotten if j.array_job_id is not None}:
            members = self._array_members.get(array, [])
            if all(m not in jobs for m in members):
                self._array_members.pop(array, None)
        return True

    def watch(self, callback: Callable[[set[int]], None]) -> None:
        """Call ``callback(job_ids)`` on the loop's thread whenever the engine decided
        something about those jobs (started, ended, requeued, ...): the Kubernetes workload
        runner's cue. It must not call back into the controller before returning."""
        self._watchers.append(callback)

    def stop(self) -> None:
        self._stop = True
        self._kick.set()
        self.agents.end_polls()  # so that the server can stop

    def _accepted(self) -> None:
        self._kick.set()

    # ------------------------------------------------------------------ users' requests
    def submit(self, specs: Sequence[JobSpec], key: str = "") -> list[list[int]]:
        """Journal the submissions (``JournalError`` if impossible) and return their ids.
        With an idempotency ``key`` (its user's), a request submitted before with that key
        is not submitted again: the answer is the ids it got."""
        if key:
            self.loop.settle()  # every accepted submission handled: its key known
            user = specs[0].user if specs else ""
            keys = [f"{user}/{key}/{i}" for i in range(len(specs))]
            known = [self.engine.request_ids.get(k) for k in keys]
            if all(ids is not None for ids in known):
                return [list(ids) for ids in known if ids is not None]
            if any(ids is not None for ids in known):
                raise Conflict(f"idempotency key {key!r} was used for another request")
        else:
            keys = None
        return self._journal(specs, keys)

    def submit_each(self, requests: Sequence[tuple[JobSpec, str]]) -> list[list[int]]:
        """``submit([spec], key)`` for each request, all in one journal write: one fsync for
        many (the pods of a Kubernetes runner's drain). ``JournalError``: none submitted."""
        self.loop.settle()  # every accepted submission handled: its key known
        batch = KeyedBatch(requests, self.engine.request_ids.get)
        return batch.answers(self._journal(batch.fresh, batch.keys) if batch.fresh else [])

    def _journal(self, specs: Sequence[JobSpec], keys: Sequence[str] | None) -> list[list[int]]:
        ids = self.loop.submit_many(specs, keys)
        for spec, job_ids in zip(specs, ids, strict=True):
            if spec.array is not None:
                self._array_members[job_ids[0]] = list(job_ids)
        self.stats.submitted += sum(len(i) for i in ids)
        self._accepted()
        return ids

    def check(self, spec: JobSpec) -> None:
        """Refuse, as Slurm does at submission, a request that can never run here
        (``requestcheck.check``)."""
        check(self.cluster, self.engine, self.loop.settle, spec)

    def change_accounting(
        self, caller: Caller, verb: str, entity: str, names: Sequence[str], where: Pairs,
        settings: Pairs,
    ) -> list[str]:  # fmt: skip
        """``sacctmgr add|modify|delete`` (``requestcheck.change_accounting``)."""
        return change_accounting(self, caller, (verb, entity, names, where, settings))

    def will_run(self, spec: JobSpec) -> Forecast:
        """``sbatch --test-only``: the id the job would get, when and where it would start
        (``spec`` has passed ``check``, as every request does at the API)."""
        self.loop.settle()
        now = self.clock.now()
        found = self.engine.will_run(spec, now)
        if found is None:
            raise SpecError("Requested node configuration is not available", field="resources")
        start, alloc = found
        part = self.cluster.partition(spec.partition)
        return Forecast(
            job_id=self.engine.next_id,
            start=start,
            nodes=tuple(self.cluster.nodes[i].name for i in alloc.nodes),
            cpus=alloc.cpus * len(alloc.nodes),
            partition=part.name if part is not None else "",
        )

    def cancel(self, job_id: int, caller: Caller) -> list[int]:
        self.loop.settle()
        targets = [self.job(jid) for jid in self._array_members.get(job_id, [job_id])]
        for job in targets:
            if not (caller.admin or job.spec.user == caller.name):
                raise NotAllowed(f"job {job.id} belongs to {job.spec.user}, not {caller.name}")
        live = [j for j in targets if not j.state.is_final]
        now = self.clock.now()
        if live:
            self.loop.accept([Cancel(now, j.id, caller.name) for j in live])
            self._accepted()
        return [j.id for j in live]

    def update(
        self,
        job_id: int,
        caller: Caller,
        *,
        hold: bool | None = None,
        time_limit: int | None = None,
        priority: float | None = None,
    ) -> list[int]:
        """``scontrol hold/release/update``, with Slurm's rules: users hold and release their
        own jobs (not an administrator's hold) and may only lower a time limit; priorities
        are the administrators'."""
        self.loop.settle()
        targets = [self.job(jid) for jid in self._array_members.get(job_id, [job_id])]
        for job in targets:
            if not (caller.admin or job.spec.user == caller.name):
                raise NotAllowed(f"job {job.id} belongs to {job.spec.user}, not {caller.name}")
            if caller.admin:
                continue
            if priority is not None:
                raise NotAllowed("only an administrator may set a priority")
            if time_limit is not None and time_limit > job.time_limit:
                raise NotAllowed("only an administrator may raise a time limit")
            if hold is False and job.reason == Reason.HELD_ADMIN:
                raise NotAllowed(f"job {job.id} is held by an administrator")
        live = [j for j in targets if not j.state.is_final]
        if live:
            now = self.clock.now()
            self.loop.accept(
                [
                    Update(now, j.id, caller.name, hold, time_limit, priority, caller.admin)
                    for j in live
                ]
            )
            self._accepted()
            self.loop.settle()
        return [j.id for j in live]

    def requeue(self, job_id: int, caller: Caller) -> list[int]:
        self.loop.settle()
        targets = [self.job(jid) for jid in self._array_members.get(job_id, [job_id])]
        for job in targets:
            if not (caller.admin or job.spec.user == caller.name):
                raise NotAllowed(f"job {job.id} belongs to {job.spec.user}, not {caller.name}")
        chosen = [j for j in targets if j.state is not JobState.PENDING]
        if chosen:
            now = self.clock.now()
            self.loop.accept([Requeue(now, j.id, caller.name) for j in chosen])
            self._accepted()
            self.loop.settle()
        return [j.id for j in chosen]

    def start_step(self, job_id: int, caller: Caller, request: StepSpec) -> Step:
        """``srun`` in an allocation: tasks of a step over the job's nodes."""
        job = self.job(job_id)
        if not (caller.admin or job.spec.user == caller.name):
            raise NotAllowed(f"job {job.id} belongs to {job.spec.user}, not {caller.name}")
        if job.state is not JobState.RUNNING:
            raise Conflict(f"job {job_id} is {job.state.value}, not RUNNING")
        try:
            return self.fleet.steps.start(job_id, job.run, request, self.clock.now())
        except StepError as exc:
            raise SpecError(str(exc), field="nodes") from None

    async def step_info(self, job_id: int, step_no: int, wait: float) -> Step:
        step = self.fleet.steps.get(job_id, step_no)
        if step is None:
            raise NotFound(f"no step {job_id}.{step_no}")
        if step.waiting and wait > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(step.done.wait(), wait)
        return step

    def running_steps(self, job_ids: Iterable[int] | None = None) -> list[Step]:
        """The steps of the jobs running now (of ``job_ids`` only, if given); an ended job's
        are on the job (``Job.steps``)."""
        return self.fleet.steps.running(job_ids)

    def kill_step(self, job_id: int, step_no: int, caller: Caller) -> None:
        job = self.job(job_id)
        if not (caller.admin or job.spec.user == caller.name):
            raise NotAllowed(f"job {job.id} belongs to {job.spec.user}, not {caller.name}")
        if self.fleet.steps.get(job_id, step_no) is None:
            raise NotFound(f"no step {job_id}.{step_no}")
        self.fleet.steps.kill(job_id, step_no)

    def signal(self, job_id: int, caller: Caller, signal: int, target: str = "steps") -> list[int]:
        """``scancel --signal``: send a signal to the tasks of running jobs; nothing changes
        in the schedule, so it is not journaled."""
        self.loop.settle()
        targets = [self.job(jid) for jid in self._array_members.get(job_id, [job_id])]
        for job in targets:
            if not (caller.admin or job.spec.user == caller.name):
                raise NotAllowed(f"job {job.id} belongs to {job.spec.user}, not {caller.name}")
        running = [j for j in targets if j.state is JobState.RUNNING]
        for job in running:
            # Slurm's scancel --signal reaches the steps, not the batch shell, unless asked
            # (-b, -f); a job that is not a batch script is its own step.
            if target != "steps" or not job.spec.batch:
                self.fleet.signal(Signal(job.id, job.run, signal), self.clock.now())
            if target != "batch":
                self.fleet.steps.signal(job.id, signal)
        return [j.id for j in running]

    def priorities(self) -> list[Job]:
        """Pending jobs with their priority factors (``sprio``)."""
        self.loop.settle()
        return [j for j in self.engine.pending() if j.state is JobState.PENDING]

    def fairshare(self) -> list[ShareRow]:
        """The fair-share tree as ``sshare`` shows it: shares, usage, factor per account."""
        from phalanx.live.shares import share_rows

        self.loop.settle()
        return share_rows(self.cluster, self.engine, self.clock.now())

    def job(self, job_id: int) -> Job:
        self.loop.settle()
        job = self.engine.jobs.get(job_id)
        if job is None:
            raise NotFound(f"no job {job_id}")
        return job

    def jobs(
        self,
        *,
        finished: bool = False,
        states: Iterable[str] | None = None,
        user: str | None = None,
        partition: str | None = None,
        ids: Iterable[int | tuple[int, int]] | None = None,
    ) -> list[Job]:
        self.loop.settle()
        wanted = {s.upper() for s in states} if states else None
        if ids is not None:
            pool: list[Job] = []
            for i in ids:
                if isinstance(i, tuple):  # task T of array A
                    array, task = i
                    for member in self._array_members.get(array, []):
                        task_job = self.engine.jobs[member]
                        if task_job.array_task_id == task:
                            pool.append(task_job)
                    continue
                for member in self._array_members.get(i, [i]):
                    job = self.engine.jobs.get(member)
                    if job is not None:
                        pool.append(job)
        else:
            pool = list(self.engine.jobs.values())
        out = []
        for job in pool:
            if wanted is not None:
                if job.state.value not in wanted:
                    continue
            elif not finished and job.state.is_final:
                continue
            if user is not None and job.spec.user != user:
                continue
            if partition is not None and job.partition != partition:
                continue
            out.append(job)
        return out

    def finished(
        self,
        *,
        user: str | None = None,
        since: Instant | None = None,
        until: Instant | None = None,
        ids: Iterable[int | tuple[int, int]] | None = None,
    ) -> list[Job]:
        jobs = self.jobs(finished=True, user=user, ids=ids)
        out = []
        for job in jobs:
            if not job.state.is_final:
                continue
            end = job.end or 0
            if since is not None and end < since:
                continue
            if until is not None and job.submit > until:
                continue
            out.append(job)
        return out

    # ------------------------------------------------------------------ agents
    def register(self, hello: AgentHello) -> tuple[int, list[RunKey]]:
        return self.agents.register(hello)

    def reports(self, node: str, body: AgentReports) -> list[RunKey]:
        return self.agents.reports(node, body)

    async def commands(
        self,
        node: str,
        boot_id: str,
        epoch: int,
        after: int,
        wait: float,
        health: NodeFacts | None = None,
    ) -> list[AgentCommand]:
        return await self.agents.commands(node, boot_id, epoch, after, wait, health)

    @property
    def agent_lease_s(self) -> float:
        return self.agents.agent_lease_s

    def fault(self, node: str, body: AgentFault) -> None:
        self.agents.fault(node, body)

    def node_down(self, name: str) -> bool:
        index = self.cluster.node_index(name)
        admin_down = index is not None and self.engine.nodes.is_down(index)
        return admin_down or self.agents.node_down(name)

    # ------------------------------------------------------------------ node states
    def update_nodes(
        self, names: Sequence[str], state: str, reason: str, caller: Caller, *, kill: bool = False
    ) -> None:
        """``scontrol update NodeName=... State=... Reason=...``: ``drain`` (running jobs go
        on, none start; ``kill`` ends them now, as a fatal fault does), ``down`` (its jobs end
        as on a node failure), ``resume`` or ``undrain`` (back in service). Administrators
        only; a reason is required to drain or down; every node is checked before any
        changes."""
        if not caller.admin:
            raise NotAllowed(f"{caller.name} is not an administrator")
        state = "resume" if state.lower() == "undrain" else state.lower()
        if state not in UPDATE_STATES:
            raise SpecError(
                f"invalid node state {state!r}: one of drain, down, resume, undrain", field="state"
            )
        if state != "resume" and not reason.strip():
            raise SpecError("a reason is required to drain or down a node", field="reason")
        if not names:
            raise SpecError("no node named", field="nodes")
        self.loop.settle()
        indexes = []
        for name in names:
            index = self.cluster.node_index(name)
            if index is None:
                raise NotFound(f"no node {name!r}")
            if state == "resume" and index not in self.engine.nodes.notes:
                raise Conflict(f"node {name} is neither drained nor down")
            indexes.append(index)
        now = self.clock.now()
        self.loop.accept([NodeUpdate(now, i, state, reason, caller.name, kill) for i in indexes])
        self._accepted()
        self.loop.settle()  # the answer shows the nodes as they are now

    def node_note(self, name: str) -> NodeNote | None:
        """The administrator's (or health check's) note on the node, if it is drained or
        downed."""
        index = self.cluster.node_index(name)
        return None if index is None else self.engine.nodes.notes.get(index)

    def agent_registered(self, name: str) -> bool:
        return self.agents.registered(name)

    def node_facts(self, name: str) -> NodeFacts:
        return self.agents.node_facts(name)

    # ------------------------------------------------------------------ figures
    def node_mem_alloc(self) -> list[int]:
        """Per node: memory (MB) held by jobs now."""
        state = self.engine.state
        return [int(v) for v in state.node_mem - state.cap.mem]

    def node_usage(self) -> list[tuple[float, int]]:
        """Per node: (GPUs, CPUs) held by jobs now."""
        s = self.engine.state
        gpus, cpus = s.node_gpus - s.cap.gpus, s.node_cpus - s.cap.cpus
        return [(float(gpus[n.index]), int(cpus[n.index])) for n in self.cluster.nodes]

    def efficiency(self, window_ms: int) -> tuple[float, float]:
        share = self.ledger.window(self.clock.now(), window_ms)
        return share.eta_sched, share.theta_overhead

    def counts(self) -> Counter[tuple[str, str]]:
        """(state, reason) -> jobs, over jobs not finished."""
        out: Counter[tuple[str, str]] = Counter()
        for job in self.engine.jobs.values():
            if not job.state.is_final:
                reason = str(job.reason) if job.state is JobState.PENDING else ""
                out[(job.state.value, reason)] += 1
        return out
