"""The executor of the live controller: node agents, reached through per-node outboxes.

A launch becomes one command per node of the allocation, with every task's argv, working
directory, environment and output files worked out here, so agents stay simple. Agents
long-poll their outbox and report runs that ended; a run of a multi-node job has ended when
every node has reported it. Reports are acknowledged per run, and only once the run's end is
in the journal, so an agent keeps what it knows until then (and tells it again after a
controller restart).

After a restart the journal's replay repeats launches, signals and kills already carried out:
the fleet holds them back (``replaying``) and, when each agent registers, sends only what
that agent does not already have.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import pwd
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.domain.cluster import Cluster
from phalanx.domain.hostlist import compress
from phalanx.domain.jobstep import StepRecord, step_name
from phalanx.domain.rusage import RunUsage, combined
from phalanx.domain.time import SECOND, Duration, Instant
from phalanx.engine import (
    Cleanup,
    CleanupDone,
    Event,
    Kill,
    Launch,
    LaunchFailed,
    Signal,
    TasksExited,
)
from phalanx.live.taskenv import (
    TaskPlace,
    expand_pattern,
    step_environment,
    task_environment,
    task_places,
)
from phalanx.sched.capacity import Allocation

__all__ = ["STEP_RUNS", "Agent", "Fleet", "Step", "StepError", "master_port", "step_run"]

RunKey = tuple[int, int]
STEP_RUNS = 1_000_000
"""Agents know runs by (job, run); a step's processes use run STEP_RUNS x (step + 1) + run,
so that agents need not know what a step is."""


STEP_JOBS_KEPT = 1000
"""Ended jobs whose steps stay readable (an srun reads its step's end after the job's)."""


def step_run(run: int, step: int) -> int:
    return STEP_RUNS * (step + 1) + run


class StepError(Exception):
    """A step that cannot be started in this allocation: ``str()`` says why."""


DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def master_port(job_id: int) -> int:
    """Where rank 0 of torch.distributed listens: Lightning's SLURMEnvironment rule
    (15000 + the job id's last four digits), so every node derives the same port."""
    return 15000 + job_id % 10000


@dataclass
class Agent:
    """What the controller knows of a node's agent."""

    node: str
    boot_id: str = ""
    address: str = "127.0.0.1"
    seen: Instant = 0
    registered: bool = False
    seq: int = 0
    outbox: list[dict[str, Any]] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    polling: int = 0
    """Long polls of this agent waiting now."""
    delivered: set[RunKey] = field(default_factory=set)
    """Runs whose launch this boot of the agent has taken."""
    started: Instant | None = None
    """When this boot of the agent first registered."""
    facts: dict[str, Any] = field(default_factory=dict)
    """What it said of its machine (``arch``, ``os``, ``boot_time``, ``cpu_load``,
    ``free_mem_mb``), the load and free memory as of its last poll."""


@dataclass
class _Run:
    launch: Launch
    nodes: dict[str, dict[str, Any]]
    """node name -> its launch command (without seq)."""
    waiting: set[str]
    exit_code: int = 0
    signal: int = 0
    failure: str = ""
    killed: bool = False
    usage: RunUsage | None = None
    """What its tasks used, over the nodes that reported so far."""
    steps_usage: RunUsage | None = None
    """What its ended steps used, together."""


@dataclass
class Step:
    """A step (``srun`` in an allocation): tasks over some of the job's nodes."""

    job_id: int
    run: int
    step: int
    tasks: int
    nodes: dict[str, dict[str, Any]]
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
        try:
            per_node = self._commands(cmd)
        except (KeyError, ValueError) as exc:
            # An unknown user: nothing started anywhere.
            self._report(LaunchFailed(at, cmd.job_id, cmd.run, str(exc)))
            return
        self.runs[key] = _Run(cmd, per_node, set(per_node))
        self.launches += 1
        if self.replaying:
            return  # sent, or not, before the crash: each agent's hello tells
        for node, command in per_node.items():
            self._send(node, command)

    def signal(self, cmd: Signal, at: Instant) -> None:
        run = self.runs.get((cmd.job_id, cmd.run))
        if run is None or self.replaying:
            return  # a replayed signal was sent before the crash, or is past its use
        for node in run.waiting:
            self._send(
                node, {"kind": "signal", "job_id": cmd.job_id, "run": cmd.run, "signal": cmd.signal}
            )

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
    def register(
        self, node: str, boot_id: str, address: str, runs: Iterable[Mapping[str, Any]], now: Instant
    ) -> list[RunKey]:
        """An agent (re)connects and says what it runs and what ended unacknowledged.
        Return the runs whose end is now journaled (acknowledged)."""
        agent = self.agents[node]
        listed = {(int(r["job_id"]), int(r["run"])): r for r in runs}
        restarted = agent.registered and agent.boot_id != boot_id
        if agent.boot_id != boot_id or agent.started is None:
            agent.started = now
        agent.boot_id, agent.address, agent.seen = boot_id, address, now
        agent.registered = True
        agent.outbox.clear()
        acked: list[RunKey] = []
        for key, run in list(self.runs.items()):
            if node not in run.waiting:
                continue
            report = listed.pop(key, None)
            if report is not None:
                agent.delivered.add(key)
                if report["state"] != "running":
                    acked.extend(self._ended(node, key, report, now))
                elif run.killed:
                    self._send(node, self._kill_command(key))
            elif restarted and key in agent.delivered:
                # The agent restarted: what it ran for this run is gone.
                acked.extend(self._ended(node, key, {"state": "exited", "signal": 9}, now))
            else:
                # Never taken (lost with the old controller's outbox): send it now; it
                # cannot have run, so it runs once.
                self._send(node, run.nodes[node])
                if run.killed:
                    self._send(node, self._kill_command(key))
        if restarted:
            agent.delivered = {k for k in agent.delivered if k in self.runs}
        for step in [st for steps in self._steps.values() for st in steps.values()]:
            if node not in step.waiting:
                continue
            key = (step.job_id, step_run(step.run, step.step))
            if key not in listed:
                # Not taken before the outbox was cleared: send it now.
                self._send(node, step.nodes[node])
                if step.killed:
                    self._send(node, self._kill_command(key))
        for key, report in list(listed.items()):
            if key[1] < STEP_RUNS:
                continue
            del listed[key]
            job_run = (key[0], key[1] % STEP_RUNS)
            if report["state"] != "running":
                acked.append(self._step_ended(node, key, report, now))
            elif job_run not in self.runs:
                self._send(node, self._kill_command(key))  # its job is over
            else:
                agent.delivered.add(key)
        for key, report in listed.items():
            # Runs this controller no longer tracks: their end is already journaled.
            if report["state"] == "running":
                self._send(node, self._kill_command(key))
            acked.append(key)
        return acked

    def reports(self, node: str, runs: Iterable[Mapping[str, Any]], now: Instant) -> list[RunKey]:
        agent = self.agents[node]
        agent.seen = now
        acked: list[RunKey] = []
        for report in runs:
            key = (int(report["job_id"]), int(report["run"]))
            if report["state"] == "running":
                continue
            if key[1] >= STEP_RUNS:
                acked.append(self._step_ended(node, key, report, now))
            else:
                acked.extend(self._ended(node, key, report, now))
        return acked

    def take(self, node: str, after: int, now: Instant) -> list[dict[str, Any]]:
        """The commands after ``after`` (the ones up to it are acknowledged: dropped)."""
        agent = self.agents[node]
        agent.seen = now
        outbox = agent.outbox
        if outbox and outbox[0]["seq"] <= after:
            agent.outbox = outbox = [c for c in outbox if c["seq"] > after]
        for c in outbox:
            if c["kind"] == "launch":
                agent.delivered.add((c["job_id"], c["run"]))
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
                self._ended(node, key, {"state": "exited", "signal": 9}, now)

    def stale(self, now: Instant, dead_after: Duration) -> list[str]:
        """Nodes whose agent has not been heard from for ``dead_after``."""
        return [a.node for a in self.agents.values() if a.registered and now - a.seen > dead_after]

    def finish_replay(self) -> None:
        self.replaying = False

    # ------------------------------------------------------------------ internals
    def _send(self, node: str, command: dict[str, Any]) -> None:
        agent = self.agents[node]
        agent.seq += 1
        agent.outbox.append({**command, "seq": agent.seq})
        agent.wake.set()

    def _kill_command(self, key: RunKey) -> dict[str, Any]:
        return {"kind": "kill", "job_id": key[0], "run": key[1]}

    def _kill(self, run: _Run) -> None:
        key = (run.launch.job_id, run.launch.run)
        for node in run.waiting:
            self._send(node, self._kill_command(key))

    def _ended(
        self, node: str, key: RunKey, report: Mapping[str, Any], now: Instant
    ) -> list[RunKey]:
        run = self.runs.get(key)
        if run is None:
            return [key]  # already ended and journaled
        if node not in run.waiting:
            return []
        run.waiting.discard(node)
        if report["state"] == "failed":
            run.failure = run.failure or str(report.get("reason") or "launch failed")
            if not run.killed:
                run.killed = True
                self._kill(run)  # the rest of the gang cannot work without this node
        run.exit_code = max(run.exit_code, int(report.get("exit_code", 0)))
        run.signal = max(run.signal, int(report.get("signal", 0)))
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
    def start_step(self, job_id: int, run: int, request: Mapping[str, Any], now: Instant) -> Step:
        """Start a step of a running job over (part of) its allocation at ``now``: ``request``
        has ``command``, and optionally ``ntasks``, ``nodes``, ``ntasks_per_node``,
        ``environment``, ``workdir``, ``output``, ``error``."""
        launch = self.runs.get((job_id, run))
        if launch is None:
            raise StepError(f"job {job_id} is not running")
        cmd = launch.launch
        spec, alloc = cmd.spec, cmd.alloc
        nodes = int(request.get("nodes") or len(alloc.nodes))
        if not 1 <= nodes <= len(alloc.nodes):
            raise StepError(f"the allocation has {len(alloc.nodes)} node(s), not {nodes}")
        per_node = request.get("ntasks_per_node")
        ntasks = request.get("ntasks")
        if ntasks is None:
            ntasks = nodes * int(per_node or spec.tasks_per_node)
        ntasks = int(ntasks)
        if ntasks < nodes:
            nodes = ntasks  # Slurm: at least one task per node of the step
        per_node = int(per_node or -(-ntasks // nodes))
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
            command=tuple(request["command"]),
            environment=tuple(sorted(dict(request.get("environment") or spec.environment).items())),
            workdir=str(request.get("workdir") or spec.workdir),
            output=request.get("output") or spec.output,
            error=request.get("error"),
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
            for task in command["tasks"]:
                rank = task["rank"]  # block distribution: per_node tasks a node
                task["env"].update(
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
                self._send(node, self._kill_command((job_id, step_run(step.run, step_no))))

    def signal_steps(self, job_id: int, signal: int) -> None:
        for step in self._steps.get(job_id, {}).values():
            key = (job_id, step_run(step.run, step.step))
            for node in step.waiting:
                self._send(
                    node, {"kind": "signal", "job_id": key[0], "run": key[1], "signal": signal}
                )

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

    def _step_ended(
        self, node: str, key: RunKey, report: Mapping[str, Any], now: Instant
    ) -> RunKey:
        job_id, encoded = key
        step = self.step(job_id, encoded // STEP_RUNS - 1)
        if step is None or node not in step.waiting:
            return key
        step.waiting.discard(node)
        if report["state"] == "failed":
            step.failure = step.failure or str(report.get("reason") or "launch failed")
        step.exit_code = max(step.exit_code, int(report.get("exit_code", 0)))
        step.signal = max(step.signal, int(report.get("signal", 0)))
        step.usage = combined(step.usage, _usage(report))
        if not step.waiting:
            step.end = now
            step.done.set()
            run = self.runs.get((job_id, step.run))
            if run is not None:  # else the job ended first: its accounting is journaled
                run.steps_usage = combined(run.steps_usage, step.usage)
        return key

    def _commands(self, cmd: Launch, limit: int | None = None) -> dict[str, dict[str, Any]]:
        spec = cmd.spec
        names = [self.cluster.nodes[i].name for i in cmd.alloc.nodes]
        first = self.agents[names[0]].address
        uid = gid = None
        base_env = dict(spec.environment)
        ids = _user_ids(spec.user)
        if self._as_user and spec.user != "root":
            if ids is None:
                raise KeyError(f"getpwnam(): name not found: '{spec.user}'")  # no such user here
            uid, gid = ids
        base_env.setdefault("PATH", DEFAULT_PATH)
        base_env.setdefault("USER", spec.user)
        workdir = os.path.abspath(spec.workdir)
        array = {"array_job_id": cmd.array_job_id, "array_task_id": cmd.array_task_id}
        default_out = "slurm-%A_%a.out" if cmd.array_job_id is not None else "slurm-%j.out"
        per_node: dict[str, dict[str, Any]] = {}
        places = task_places(cmd.alloc, spec.tasks_per_node)
        if spec.batch:
            places = places[:1]  # the script, once, on the first node
        elif limit is not None:
            places = places[:limit]  # a step of n tasks: block distribution, the last node
            # may have fewer
        for place in places:
            node = names[place.node_position]
            env = dict(base_env)
            env.update(
                task_environment(
                    job_id=cmd.job_id,
                    spec=spec,
                    alloc=cmd.alloc,
                    cluster=self.cluster,
                    place=place,
                    submit_dir=workdir,
                    master_port=master_port(cmd.job_id),
                    master_addr=first,
                    uid=ids[0] if ids else None,
                    gid=ids[1] if ids else None,
                    controller_host=_HOST,
                    **array,
                )
            )

            def path(pattern: str, task: int = place.global_rank, on: str = node) -> str:
                name = expand_pattern(
                    pattern,
                    job_id=cmd.job_id,
                    name=spec.name,
                    user=spec.user,
                    node=on,
                    task=task,
                    **array,
                )
                return os.path.join(workdir, name)

            command = per_node.get(node)
            if command is None:
                command = per_node[node] = {
                    "kind": "launch",
                    "job_id": cmd.job_id,
                    "run": cmd.run,
                    "tasks": [],
                    "cpus": cmd.alloc.cpus,
                    "memory_mb": cmd.alloc.mem_mb,
                }
            command["tasks"].append(
                {
                    "argv": list(spec.command),
                    "cwd": workdir,
                    "env": env,
                    "stdout": path(spec.output or default_out),
                    "stderr": path(spec.error) if spec.error is not None else None,
                    "open_mode": _open_mode(spec.extra, cmd.run, place.node_position),
                    "uid": uid,
                    "gid": gid,
                    "rank": place.global_rank,
                }
            )
        return per_node


_HOST = os.uname().nodename.split(".")[0]
"""This controller's host, short, as Slurm names hosts (``SLURM_WORKING_CLUSTER``)."""


def _user_ids(user: str) -> tuple[int, int] | None:
    """The uid and gid of ``user`` here (``SLURM_JOB_UID``, ``SLURM_JOB_GID``), None if this
    machine does not know the name."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


def _usage(report: Mapping[str, Any]) -> RunUsage | None:
    """A report's ``usage`` (a ``Usage`` as a dict); None from agents that do not measure."""
    usage = report.get("usage")
    if not usage:
        return None
    return RunUsage(int(usage["user_ms"]), int(usage["system_ms"]), int(usage["max_rss_kb"]))


def _open_mode(extra: tuple[tuple[str, str], ...], run: int, position: int) -> str:
    """``--open-mode``: Slurm truncates the output at the first start and appends after a
    requeue. Only the first node truncates: the others share the file (emulated nodes)."""
    if run > 1 or position > 0 or dict(extra).get("open_mode") == "append":
        return "append"
    return "truncate"


DEAD_AFTER: Duration = 60 * SECOND
