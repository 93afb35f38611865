"""Steps: ``srun`` inside an allocation, tasks over some of a job's nodes.

Agents know runs by (job, run); a step's processes use run ``STEP_RUNS x (step + 1) + run``,
so that agents need not know what a step is.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from phalanx.domain.cluster import Cluster
from phalanx.domain.hostlist import compress
from phalanx.domain.jobstep import StepRecord, StepSpec, step_name
from phalanx.domain.rusage import RunUsage, combined
from phalanx.domain.time import Instant
from phalanx.engine import Launch
from phalanx.live.agents import AgentRegistry, RunKey, kill_command, signal_command
from phalanx.live.taskenv import TaskPlace, step_environment
from phalanx.protocol.agent import AgentCommand, RunReport
from phalanx.sched.capacity import Allocation

__all__ = ["STEP_JOBS_KEPT", "STEP_RUNS", "Step", "StepError", "Steps", "report_usage", "step_run"]

STEP_RUNS = 1_000_000
"""Agents know runs by (job, run); a step's processes use run STEP_RUNS x (step + 1) + run,
so that agents need not know what a step is."""


STEP_JOBS_KEPT = 1000
"""Ended jobs whose steps stay readable (an srun reads its step's end after the job's)."""


def step_run(run: int, step: int) -> int:
    return STEP_RUNS * (step + 1) + run


class StepError(Exception):
    """A step that cannot be started in this allocation: ``str()`` says why."""


@dataclass
class Step:
    """A step (``srun`` in an allocation): tasks over some of the job's nodes."""

    job_id: int
    run: int
    step: int
    tasks: int
    nodes: dict[str, AgentCommand]
    waiting: set[str]
    exit_code: int = 0
    signal: int = 0
    failure: str = ""
    killed: bool = False
    usage: RunUsage | None = None
    name: str = ""
    """The base name of the program it runs (Slurm's step name)."""
    nodelist: str = ""
    cpus: int = 0
    """Over all its nodes."""
    gpus: float = 0.0
    """Over all its nodes."""
    mem_mb: int = 0
    """Per node."""
    start: Instant = 0
    end: Instant | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def state(self) -> str:
        if self.waiting:
            return "RUNNING"
        if self.failure:
            return "FAILED"
        if self.killed:
            return "CANCELLED"
        return "COMPLETED" if self.exit_code == 0 and self.signal == 0 else "FAILED"

    def record(self, run_ended: Instant | None = None) -> StepRecord:
        """The step as accounting shows it; with ``run_ended``, as the run's end leaves it:
        a step still running then is CANCELLED at that instant (its job kills it)."""
        state, end = self.state, self.end
        if self.waiting and run_ended is not None:
            state, end = "CANCELLED", run_ended
        return StepRecord(
            self.job_id,
            self.step,
            self.name,
            self.nodelist,
            self.tasks,
            self.cpus,
            self.gpus,
            self.mem_mb,
            self.start,
            end,
            state,
            self.exit_code,
            self.signal,
            self.failure,
            None if self.waiting else self.usage,
        )


Commands = Callable[[Launch, int | None], dict[str, AgentCommand]]
"""A launch -> one agent command per node (at most ``limit`` tasks in all, if given)."""


class Steps:
    """The steps of the running jobs: started on their allocation's agents, ended as those
    report; kept after their job ends, for its srun to read, until the job is one of the
    last ``STEP_JOBS_KEPT`` to have ended."""

    def __init__(
        self,
        cluster: Cluster,
        registry: AgentRegistry,
        launch_of: Callable[[RunKey], Launch | None],
        commands: Commands,
    ) -> None:
        self._cluster = cluster
        self._registry = registry
        self._launch_of = launch_of
        self._commands = commands
        self._steps: dict[int, dict[int, Step]] = {}
        """job -> step number -> the step."""
        self._ended_jobs: deque[int] = deque()
        self._next_step: dict[int, int] = {}

    def start(self, job_id: int, run: int, request: StepSpec, now: Instant) -> Step:
        """Start a step of a running job over (part of) its allocation at ``now``; what
        ``request`` leaves out is the job's."""
        cmd = self._launch_of((job_id, run))
        if cmd is None:
            raise StepError(f"job {job_id} is not running")
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
        commands = self._commands(step_cmd, ntasks)
        names = compress([self._cluster.nodes[i].name for i in sub.nodes])
        environment = dict(step_spec.environment)
        for command in commands.values():
            for task in command.tasks:
                rank = task.rank  # block distribution: per_node tasks a node
                task.env.update(
                    step_environment(
                        step=step_no,
                        alloc=sub,
                        cluster=self._cluster,
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
            self._registry.send(node, command)
        return step

    def get(self, job_id: int, step_no: int) -> Step | None:
        return self._steps.get(job_id, {}).get(step_no)

    def __iter__(self) -> Iterator[Step]:
        return iter([st for steps in self._steps.values() for st in steps.values()])

    def running(self, job_ids: Iterable[int] | None = None) -> list[Step]:
        """The steps of the runs going on now (of ``job_ids`` only, if given), by job and
        step number; those of runs that ended are on their ``TasksExited``."""
        wanted = self._steps.keys() if job_ids is None else set(job_ids) & self._steps.keys()
        return [
            step
            for job_id in sorted(wanted)
            for _, step in sorted(self._steps[job_id].items())
            if self._launch_of((job_id, step.run)) is not None
        ]

    def records(self, job_id: int, run: int, at: Instant) -> tuple[StepRecord, ...]:
        """The steps of the run as its end at ``at`` leaves them, by step number."""
        return tuple(
            step.record(at)
            for _, step in sorted(self._steps.get(job_id, {}).items())
            if step.run == run
        )

    def kill(self, job_id: int, step_no: int) -> None:
        step = self.get(job_id, step_no)
        if step is not None and step.waiting:
            step.killed = True
            for node in step.waiting:
                self._registry.send(node, kill_command((job_id, step_run(step.run, step_no))))

    def kill_all(self, job_id: int) -> None:
        for step_no, step in self._steps.get(job_id, {}).items():
            if step.waiting:
                self.kill(job_id, step_no)

    def signal(self, job_id: int, signal: int) -> None:
        for step in self._steps.get(job_id, {}).values():
            key = (job_id, step_run(step.run, step.step))
            for node in step.waiting:
                self._registry.send(node, signal_command(key, signal))

    def job_ended(self, job_id: int) -> None:
        """The job's run ended: its steps end with it; they are kept a while for srun."""
        if job_id not in self._steps:
            return
        self.kill_all(job_id)
        self._ended_jobs.append(job_id)
        while len(self._ended_jobs) > STEP_JOBS_KEPT:
            self._steps.pop(self._ended_jobs.popleft(), None)

    def ended(self, node: str, key: RunKey, report: RunReport, now: Instant) -> Step | None:
        """``node``'s part of the step run ``key`` ended as ``report`` says; return the step
        if that was its last node."""
        self._registry[node].delivered.pop(key, None)
        job_id, encoded = key
        step = self.get(job_id, encoded // STEP_RUNS - 1)
        if step is None or node not in step.waiting:
            return None
        step.waiting.discard(node)
        if report.state == "failed":
            step.failure = step.failure or (report.reason or "launch failed")
        step.exit_code = max(step.exit_code, report.exit_code)
        step.signal = max(step.signal, report.signal)
        step.usage = combined(step.usage, report_usage(report))
        if step.waiting:
            return None
        step.end = now
        step.done.set()
        return step


def report_usage(report: RunReport) -> RunUsage | None:
    """A report's ``usage``; None from agents that do not measure."""
    u = report.usage
    return None if u is None else RunUsage(u.user_ms, u.system_ms, u.max_rss_kb)
