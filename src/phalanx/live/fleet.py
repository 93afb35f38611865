"""The executor of the live controller: node agents, reached through per-node outboxes.

A launch becomes one command per node of the allocation (``phalanx.live.launches``). Agents
long-poll their outbox and report runs that ended; a run of a multi-node job has ended when
every node has reported it. Reports are acknowledged per run, and only once the run's end is
in the journal, so an agent keeps what it knows until then (and tells it again after a
controller restart).

One incarnation of a node's agent at a time holds the node, under an epoch (the controller
hands it out, see ``phalanx.protocol.agent``); every command in the outbox carries it, and
the outbox is cleared when another incarnation takes the node. A run that the node's
incarnation has not got, though it took the launch (or may have, for all a restarted
controller knows), is *lost*: it ends as on a node failure (requeued, or killed), and is
never sent again, so nothing runs twice.

After a restart the journal's replay repeats launches, signals and kills already carried out:
the fleet holds them back (``replaying``) and, when each agent registers, sends only what
that agent does not already have.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from phalanx.domain.cluster import Cluster
from phalanx.domain.hostlist import compress
from phalanx.domain.jobstep import StepSpec, step_name
from phalanx.domain.rusage import RunUsage, combined
from phalanx.domain.time import SECOND, Duration, Instant
from phalanx.engine import (
    Cleanup,
    CleanupDone,
    Event,
    Kill,
    Launch,
    LaunchFailed,
    Requeue,
    Signal,
    TasksExited,
)
from phalanx.live.launches import DEFAULT_PATH, launch_commands, master_port
from phalanx.live.steps import STEP_JOBS_KEPT, STEP_RUNS, Step, StepError, step_run
from phalanx.live.taskenv import TaskPlace, step_environment
from phalanx.protocol.agent import AgentCommand, NodeFacts, RunReport
from phalanx.sched.capacity import Allocation

__all__ = [
    "DEAD_AFTER",
    "DEFAULT_PATH",
    "STEP_RUNS",
    "Agent",
    "Fleet",
    "RunKey",
    "Step",
    "StepError",
    "master_port",
    "step_run",
]

log = logging.getLogger("phalanx.controller")

RunKey = tuple[int, int]

_KILLED = RunReport(job_id=0, run=0, state="exited", signal=9)
"""What a run lost with its node's agent ends as (its job and run do not matter)."""


@dataclass
class Agent:
    """What the controller knows of a node's agent: the incarnation that holds the node."""

    node: str
    boot_id: str = ""
    """The holding incarnation's ("" before any registered, ever)."""
    epoch: int = 0
    """The holding incarnation's epoch (0 before any registered, ever)."""
    address: str = "127.0.0.1"
    seen: Instant = 0
    registered: bool = False
    """The holder has registered with this controller (and is not lost since)."""
    seq: int = 0
    outbox: list[AgentCommand] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    polling: int = 0
    """Long polls of this agent waiting now."""
    delivered: dict[RunKey, int] = field(default_factory=dict)
    """Runs (and steps) going on whose launch this incarnation has taken -> the launch's seq
    (0: it said it had the run when it registered)."""
    started: Instant | None = None
    """When this incarnation first registered."""
    facts: NodeFacts = field(default_factory=lambda: NodeFacts())
    """What it said of its machine (``arch``, ``os``, ``boot_time``, ``cpu_load``,
    ``free_mem_mb``), the load and free memory as of its last poll."""


@dataclass
class _Run:
    launch: Launch
    nodes: dict[str, AgentCommand]
    """node name -> its launch command (without seq and epoch)."""
    waiting: set[str]
    exit_code: int = 0
    signal: int = 0
    failure: str = ""
    killed: bool = False
    usage: RunUsage | None = None
    """What its tasks used, over the nodes that reported so far."""
    steps_usage: RunUsage | None = None
    """What its ended steps used, together."""


class Fleet:
    def __init__(
        self,
        cluster: Cluster,
        report: Callable[[Event], None],
        deliver: Callable[[Event], None],
        *,
        epilog_ms: Duration = 0,
        run_as_submitter: bool | None = None,
    ) -> None:
        self.cluster = cluster
        self._report = report
        self._deliver = deliver
        self._epilog = epilog_ms
        self._as_user = os.geteuid() == 0 if run_as_submitter is None else run_as_submitter
        self.agents: dict[str, Agent] = {n.name: Agent(n.name) for n in cluster.nodes}
        self.runs: dict[RunKey, _Run] = {}
        self._steps: dict[int, dict[int, Step]] = {}
        """job -> step number -> the step; kept after it ends, for its srun to read, until
        the job is one of the last ``STEP_JOBS_KEPT`` to have ended."""
        self._ended_jobs: deque[int] = deque()
        self._next_step: dict[int, int] = {}
        self.replaying = False
        self.launches = 0

    # ------------------------------------------------------------------ executor port
    def launch(self, cmd: Launch, at: Instant) -> None:
        key = (cmd.job_id, cmd.run)
        if self.replaying:
            # The agents' commands are made when the replay is over, for the runs still
            # running then (``finish_replay``): most replayed runs ended long ago.
            names = {self.cluster.nodes[i].name for i in cmd.alloc.nodes}
            self.runs[key] = _Run(cmd, {}, names)
            self.launches += 1
            return
        try:
            per_node = self._commands(cmd)
        except (KeyError, ValueError) as exc:
            # An unknown user: nothing started anywhere.
            self._report(LaunchFailed(at, cmd.job_id, cmd.run, str(exc)))
            return
        self.runs[key] = _Run(cmd, per_node, set(per_node))
        self.launches += 1
        for node, command in per_node.items():
            self._send(node, command)

    def signal(self, cmd: Signal, at: Instant) -> None:
        run = self.runs.get((cmd.job_id, cmd.run))
        if run is None or self.replaying:
            return  # a replayed signal was sent before the crash, or is past its use
        for node in run.waiting:
            self._send(node, _signal_command((cmd.job_id, cmd.run), cmd.signal))

    def kill(self, cmd: Kill, at: Instant) -> None:
        run = self.runs.get((cmd.job_id, cmd.run))
        if run is None:
            return
        run.killed = True
        if not self.replaying:
            self._kill(run)
            for step_no, step in self._steps.get(cmd.job_id, {}).items():
                if step.waiting:
                    self.kill_step(cmd.job_id, step_no)

    def cleanup(self, cmd: Cleanup, at: Instant) -> None:
        # The epilog is the controller's to time; agents have nothing to run for it.
        self._deliver(CleanupDone(at + self._epilog, cmd.job_id, cmd.run))

    # ------------------------------------------------------------------ agents
    def holder(self, node: str, epoch: int, boot_id: str) -> None:
        """The holder of ``node`` as the epoch store knows it (a controller starting)."""
        agent = self.agents[node]
        agent.epoch, agent.boot_id = epoch, boot_id

    def register(
        self,
        node: str,
        boot_id: str,
        address: str,
        runs: Iterable[RunReport],
        now: Instant,
        epoch: int = 1,
    ) -> list[RunKey]:
        """An agent incarnation (admitted under ``epoch``) connects and says what it runs
        and what ended unacknowledged. Return the runs whose end is now journaled
        (acknowledged). Another incarnation than the holder's takes the node: the outbox,
        for the old one, is dropped, and the runs the old one had (or may have had, when
        this controller never saw it) are lost, never sent again."""
        agent = self.agents[node]
        listed = {(r.job_id, r.run): r for r in runs}
        replaced = agent.boot_id != "" and agent.boot_id != boot_id
        # What the old incarnation took is known only if it registered with this controller.
        took = dict(agent.delivered) if agent.registered else None
        if replaced or agent.started is None:
            agent.started = now
        # The agent numbers the commands it carries out afresh from each registration: what
        # it took before counts by what it lists now, not by the seqs it took it under.
        agent.delivered = {}
        agent.boot_id, agent.epoch, agent.address, agent.seen = boot_id, epoch, address, now
        agent.registered = True
        agent.outbox.clear()

        def had(key: RunKey) -> bool:
            """The replaced incarnation had the run, or may have had it."""
            return replaced and (took is None or key in took)

        acked: list[RunKey] = []
        for key, run in list(self.runs.items()):
            if node not in run.waiting:
                continue
            report = listed.pop(key, None)
            if report is not None:
                agent.delivered[key] = 0
                if report.state != "running":
                    acked.extend(self._ended(node, key, report, now))
                elif run.killed:
                    self._send(node, _kill_command(key))
            elif had(key):
                acked.extend(self._lost(node, key, now, "its node's agent was replaced"))
            else:
                # Never taken (lost with the old controller's outbox): send it now; it
                # cannot have run, so it runs once.
                self._send(node, run.nodes[node])
                if run.killed:
                    self._send(node, _kill_command(key))
        for step in [st for steps in self._steps.values() for st in steps.values()]:
            if node not in step.waiting:
                continue
            key = (step.job_id, step_run(step.run, step.step))
            if key in listed:
                continue
            if had(key):
                acked.append(self._step_ended(node, key, _KILLED, now))
                continue
            # Not taken before the outbox was cleared: send it now.
            self._send(node, step.nodes[node])
            if step.killed:
                self._send(node, _kill_command(key))
        for key, report in list(listed.items()):
            if key[1] < STEP_RUNS:
                continue
            del listed[key]
            job_run = (key[0], key[1] % STEP_RUNS)
            if report.state != "running":
                acked.append(self._step_ended(node, key, report, now))
            elif job_run not in self.runs:
                self._send(node, _kill_command(key))  # its job is over
            else:
                agent.delivered[key] = 0
        for key, report in listed.items():
            # Runs this controller no longer tracks: their end is already journaled.
            if report.state == "running":
                self._send(node, _kill_command(key))
            acked.append(key)
        return acked

    def reports(self, node: str, runs: Iterable[RunReport], now: Instant) -> list[RunKey]:
        agent = self.agents[node]
        agent.seen = now
        acked: list[RunKey] = []
        for report in runs:
            key = (report.job_id, report.run)
            if report.state == "running":
                continue
            if key[1] >= STEP_RUNS:
                acked.append(self._step_ended(node, key, report, now))
            else:
                acked.extend(self._ended(node, key, report, now))
        return acked

    def inventory(self, node: str, has: Iterable[RunKey], after: int, now: Instant) -> None:
        """The node's agent has exactly ``has`` (running or ended unacknowledged) once it
        carried out every command up to seq ``after``: a run whose launch it took by then
        and does not have is lost (ends as on a node failure)."""
        agent = self.agents[node]
        have = set(has)
        missing = [k for k, seq in agent.delivered.items() if seq <= after and k not in have]
        for key in missing:
            if key[1] >= STEP_RUNS:
                self._step_ended(node, key, _KILLED, now)
            else:
                self._lost(node, key, now, "its node's agent does not have it")

    def take(self, node: str, after: int, now: Instant) -> list[AgentCommand]:
        """The commands after ``after`` (the ones up to it are acknowledged: dropped)."""
        agent = self.agents[node]
        agent.seen = now
        outbox = agent.outbox
        if outbox and outbox[0].seq <= after:
            agent.outbox = outbox = [c for c in outbox if c.seq > after]
        for c in outbox:
            if c.kind == "launch":
                agent.delivered.setdefault((c.job_id, c.run), c.seq)
        if not outbox:
            agent.wake.clear()
        return outbox

    def node_lost(self, node: str, now: Instant) -> None:
        """The node's agent is gone: its part of every run has ended (killed)."""
        agent = self.agents[node]
        agent.registered = False
        agent.outbox.clear()
        for key, run in list(self.runs.items()):
            if node in run.waiting:
                self._ended(node, key, _KILLED, now)

    def stale(self, now: Instant, dead_after: Duration) -> list[str]:
        """Nodes whose agent has not been heard from for ``dead_after``."""
        return [a.node for a in self.agents.values() if a.registered and now - a.seen > dead_after]

    def finish_replay(self, running: Iterable[RunKey] | None = None) -> None:
        """The replay is over; ``running``: the runs the engine has running after it. The
        others ended (or failed to start) before the crash, their end journaled: they are
        forgotten here, never sent again, never counted lost."""
        self.replaying = False
        if running is not None:
            keep = set(running)
            for key in [k for k in self.runs if k not in keep]:
                del self.runs[key]
        for key, run in list(self.runs.items()):
            if run.nodes:
                continue
            try:
                run.nodes = self._commands(run.launch)
            except (KeyError, ValueError) as exc:
                # As at a launch: its user is unknown here, nothing can have started.
                del self.runs[key]
                self._report(LaunchFailed(0, key[0], key[1], str(exc)))

    # ------------------------------------------------------------------ internals
    def _send(self, node: str, command: AgentCommand) -> None:
        agent = self.agents[node]
        agent.seq += 1
        agent.outbox.append(command.model_copy(update={"seq": agent.seq, "epoch": agent.epoch}))
        agent.wake.set()

    def _kill(self, run: _Run) -> None:
        key = (run.launch.job_id, run.launch.run)
        for node in run.waiting:
            self._send(node, _kill_command(key))

    def _lost(self, node: str, key: RunKey, now: Instant, why: str) -> list[RunKey]:
        """``node``'s part of run ``key`` is gone with an agent: as on a node failure, the
        job is requeued (or, if it may not be, its other nodes are killed) and the part ends
        killed; it is never sent again."""
        run = self.runs.get(key)
        if run is None or node not in run.waiting:
            return self._ended(node, key, _KILLED, now)
        log.warning("run %d.%d on %s is lost: %s", key[0], key[1], node, why)
        if not run.killed:
            if run.launch.spec.requeue:
                self._report(Requeue(now, key[0], "root"))
                now += 1  # after the requeue, or the end would read as the run's own
            else:
                run.killed = True
                self._kill(run)
        return self._ended(node, key, _KILLED, now)

    def _ended(self, node: str, key: RunKey, report: RunReport, now: Instant) -> list[RunKey]:
        self.agents[node].delivered.pop(key, None)
        run = self.runs.get(key)
        if run is None:
            return [key]  # already ended and journaled
        if node not in run.waiting:
            return []
        run.waiting.discard(node)
        if report.state == "failed":
            run.failure = run.failure or (report.reason or "launch failed")
            if not run.killed:
                run.killed = True
                self._kill(run)  # the rest of the gang cannot work without this node
        run.exit_code = max(run.exit_code, report.exit_code)
        run.signal = max(run.signal, report.signal)
        run.usage = combined(run.usage, _usage(report))
        if run.waiting:
            return []  # acknowledged with the last node's report, once journaled
        job_id, run_no = key
        at = now  # the instant it is handled; the agent's own clock may differ
        try:
            if run.failure and run.exit_code == 0 and run.signal in (0, 9):
                self._report(LaunchFailed(at, job_id, run_no, run.failure))
            else:
                steps = tuple(
                    step.record(at)
                    for _, step in sorted(self._steps.get(job_id, {}).items())
                    if step.run == run_no
                )
                self._report(
                    TasksExited(
                        at,
                        job_id,
                        run_no,
                        run.exit_code,
                        run.signal,
                        run.usage,
                        run.steps_usage,
                        steps,
                    )
                )
        except Exception:
            run.waiting.add(node)  # not journaled: the agent will report it again
            raise
        del self.runs[key]
        self._end_steps(job_id)
        return [key]

    # ------------------------------------------------------------------ steps
    def start_step(self, job_id: int, run: int, request: StepSpec, now: Instant) -> Step:
        """Start a step of a running job over (part of) its allocation at ``now``; what
        ``request`` leaves out is the job's."""
        launch = self.runs.get((job_id, run))
        if launch is None:
            raise StepError(f"job {job_id} is not running")
        cmd = launch.launch
        spec, alloc = cmd.spec, cmd.alloc
        nodes = request.nodes or len(alloc.nodes)
        if not 1 <= nodes <= len(alloc.nodes):
            raise StepError(f"the allocation has {len(alloc.nodes)} node(s), not {nodes}")
        per_node = request.ntasks_per_node
        ntasks = request.ntasks
        if ntasks is None:
            ntasks = nodes * (per_node or spec.tasks_per_node)
        if ntasks < nodes:
            nodes = ntasks  # Slurm: at least one task per node of the step
        per_node = per_node or -(-ntasks // nodes)
        step_no = self._next_step.get(job_id, 0)
        self._next_step[job_id] = step_no + 1
        sub = Allocation(
            alloc.nodes[:nodes], alloc.devices[:nodes], alloc.milli, alloc.cpus, alloc.mem_mb
        )
        step_spec = dataclasses.replace(
            spec,
            tasks_per_node=per_node,
            nodes_min=nodes,
            nodes_max=nodes,
            batch=False,
            command=request.command,
            environment=tuple(sorted(request.environment or spec.environment)),
            workdir=request.workdir or spec.workdir,
            output=request.output or spec.output,
            error=request.error,
        )
        step_cmd = Launch(
            job_id,
            step_run(run, step_no),
            sub,
            step_spec,
            cmd.time_limit,
            cmd.array_job_id,
            cmd.array_task_id,
        )
        commands = self._commands(step_cmd, limit=ntasks)
        names = compress([self.cluster.nodes[i].name for i in sub.nodes])
        environment = dict(step_spec.environment)
        for command in commands.values():
            for task in command.tasks:
                rank = task.rank  # block distribution: per_node tasks a node
                task.env.update(
                    step_environment(
                        step=step_no,
                        alloc=sub,
                        cluster=self.cluster,
                        ntasks=ntasks,
                        nodes=nodes,
                        per_node=per_node,
                        place=TaskPlace(rank // per_node, rank % per_node, rank),
                        job_nodes=alloc.nodes,
                        environment=environment,
                    )
                )
        step = Step(job_id, run, step_no, ntasks, commands, set(commands))
        step.name, step.nodelist, step.start = step_name(step_spec.command), names, now
        step.cpus, step.gpus, step.mem_mb = sub.cpus * nodes, sub.gpus, sub.mem_mb
        self._steps.setdefault(job_id, {})[step_no] = step
        for node, command in commands.items():
            self._send(node, command)
        return step

    def step(self, job_id: int, step_no: int) -> Step | None:
        return self._steps.get(job_id, {}).get(step_no)

    def running_steps(self, job_ids: Iterable[int] | None = None) -> list[Step]:
        """The steps of the runs going on now (of ``job_ids`` only, if given), by job and
        step number; those of runs that ended are on their ``TasksExited``."""
        wanted = self._steps.keys() if job_ids is None else set(job_ids) & self._steps.keys()
        return [
            step
            for job_id in sorted(wanted)
            for _, step in sorted(self._steps[job_id].items())
            if (job_id, step.run) in self.runs
        ]

    def kill_step(self, job_id: int, step_no: int) -> None:
        step = self.step(job_id, step_no)
        if step is not None and step.waiting:
            step.killed = True
            for node in step.waiting:
                self._send(node, _kill_command((job_id, step_run(step.run, step_no))))

    def signal_steps(self, job_id: int, signal: int) -> None:
        for step in self._steps.get(job_id, {}).values():
            key = (job_id, step_run(step.run, step.step))
            for node in step.waiting:
                self._send(node, _signal_command(key, signal))

    def _end_steps(self, job_id: int) -> None:
        """The job's run ended: its steps end with it; they are kept a while for srun."""
        steps = self._steps.get(job_id)
        if steps is None:
            return
        for step_no, step in steps.items():
            if step.waiting:
                self.kill_step(job_id, step_no)
        self._ended_jobs.append(job_id)
        while len(self._ended_jobs) > STEP_JOBS_KEPT:
            self._steps.pop(self._ended_jobs.popleft(), None)

    def _step_ended(self, node: str, key: RunKey, report: RunReport, now: Instant) -> RunKey:
        self.agents[node].delivered.pop(key, None)
        job_id, encoded = key
        step = self.step(job_id, encoded // STEP_RUNS - 1)
        if step is None or node not in step.waiting:
            return key
        step.waiting.discard(node)
        if report.state == "failed":
            step.failure = step.failure or (report.reason or "launch failed")
        step.exit_code = max(step.exit_code, report.exit_code)
        step.signal = max(step.signal, report.signal)
        step.usage = combined(step.usage, _usage(report))
        if not step.waiting:
            step.end = now
            step.done.set()
            run = self.runs.get((job_id, step.run))
            if run is not None:  # else the job ended first: its accounting is journaled
                run.steps_usage = combined(run.steps_usage, step.usage)
        return key

    def _commands(self, cmd: Launch, limit: int | None = None) -> dict[str, AgentCommand]:
        first = self.agents[self.cluster.nodes[cmd.alloc.nodes[0]].name].address
        return launch_commands(self.cluster, cmd, first, as_user=self._as_user, limit=limit)


def _kill_command(key: RunKey) -> AgentCommand:
    return AgentCommand(kind="kill", job_id=key[0], run=key[1])


def _signal_command(key: RunKey, signal: int) -> AgentCommand:
    return AgentCommand(kind="signal", job_id=key[0], run=key[1], signal=signal)


def _usage(report: RunReport) -> RunUsage | None:
    """A report's ``usage``; None from agents that do not measure."""
    u = report.usage
    return None if u is None else RunUsage(u.user_ms, u.system_ms, u.max_rss_kb)


DEAD_AFTER: Duration = 60 * SECOND
