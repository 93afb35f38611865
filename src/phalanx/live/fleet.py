"""The executor of the live controller: runs on node agents, reached through the registry.

A launch becomes one command per node of the allocation (``phalanx.live.launches``), queued in
each node's outbox (``phalanx.live.agents``). Agents report runs that ended; a run of a
multi-node job has ended when every node has reported it. Reports are acknowledged per run,
and only once the run's end is in the journal, so an agent keeps what it knows until then
(and tells it again after a controller restart). Steps (``srun`` in an allocation) are
``phalanx.live.steps``'s.

A run that the node's incarnation has not got, though it took the launch (or may have, for all
a restarted controller knows), is *lost*: it ends as on a node failure (requeued, or killed),
and is never sent again, so nothing runs twice.

After a restart the journal's replay repeats launches, signals and kills already carried out:
the fleet holds them back (``replaying``) and, when each agent registers, sends only what
that agent does not already have.
"""

from __future__ import annotations

import logging
import os
import signal as signals
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from phalanx.domain.cluster import Cluster
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
    Resize,
    Signal,
    TasksExited,
)
from phalanx.live.agents import Agent, AgentRegistry, RunKey, kill_command, signal_command
from phalanx.live.containers import ContainerStatuses
from phalanx.live.launches import DEFAULT_PATH, launch_commands, master_port
from phalanx.live.steps import STEP_RUNS, Step, StepError, Steps, report_usage, step_run
from phalanx.protocol.agent import AgentCommand, ContainerReport, RunReport

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

_KILLED = RunReport(job_id=0, run=0, state="exited", signal=9)
"""What a run lost with its node's agent ends as (its job and run do not matter)."""


@dataclass
class _Run:
    launch: Launch
    nodes: dict[str, AgentCommand]
    """node name -> its launch command (without seq and epoch)."""
    waiting: set[str]
    released: set[str] = field(default_factory=set)
    """Nodes an elastic run gave up (``Resize``): their tasks were killed; their end is
    acknowledged and counts for nothing."""
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
        self.registry = AgentRegistry(cluster)
        self.runs: dict[RunKey, _Run] = {}
        self.steps = Steps(cluster, self.registry, self._launch_of, self._commands)
        self.replaying = False
        self.launches = 0
        self.containers = ContainerStatuses()
        """The latest status of the containers of running runs, as the agents report it."""

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
            self.registry.send(node, command)

    def resize(self, cmd: Resize, at: Instant) -> None:
        """An elastic run grew or shrank: its tasks start on the added nodes, with the
        variables of the new size (``SLURM_NNODES``...); those on the removed nodes get
        SIGTERM (``kill``: SIGKILL), and their end does not end the run."""
        key = (cmd.job_id, cmd.run)
        run = self.runs.get(key)
        if run is None or run.killed:
            return
        names = self.cluster.nodes
        removed = {names[i].name for i in cmd.removed}
        if cmd.kill:
            if not self.replaying:
                for node in sorted(removed & run.released):
                    self.registry.send(node, kill_command(key))
            return
        run.launch = cmd.launch()
        added = {names[i].name for i in cmd.added}
        if self.replaying:
            # As a replayed launch: the commands are made when the replay is over, from
            # the allocation the run holds then.
            run.waiting = (run.waiting - removed) | added
            run.released |= removed
            return
        for node in sorted(removed & run.waiting):
            run.waiting.discard(node)
            run.released.add(node)
            run.nodes.pop(node, None)
            self.registry.send(node, signal_command(key, signals.SIGTERM))
        for step in self.steps.running([cmd.job_id]):
            if removed & step.waiting:
                self.steps.kill(step.job_id, step.step)  # a step cannot go on without a node
        if not added:
            return
        try:
            per_node = self._commands(run.launch)
        except (KeyError, ValueError) as exc:  # it launched as this user: cannot happen
            log.warning("cannot grow run %d.%d: %s", cmd.job_id, cmd.run, exc)
            return
        for node in sorted(added):
            command = per_node.get(node)
            if command is not None:  # a batch job's added nodes run nothing until a step
                run.nodes[node] = command
                run.waiting.add(node)
                self.registry.send(node, command)

    def signal(self, cmd: Signal, at: Instant) -> None:
        run = self.runs.get((cmd.job_id, cmd.run))
        if run is None or self.replaying:
            return  # a replayed signal was sent before the crash, or is past its use
        for node in run.waiting:
            self.registry.send(node, signal_command((cmd.job_id, cmd.run), cmd.signal))

    def kill(self, cmd: Kill, at: Instant) -> None:
        run = self.runs.get((cmd.job_id, cmd.run))
        if run is None:
            return
        run.killed = True
        if not self.replaying:
            self._kill(run)
            self.steps.kill_all(cmd.job_id)

    def cleanup(self, cmd: Cleanup, at: Instant) -> None:
        # The epilog is the controller's to time; agents have nothing to run for it.
        self._deliver(CleanupDone(at + self._epilog, cmd.job_id, cmd.run))

    # ------------------------------------------------------------------ agents
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
        agent = self.registry[node]
        listed = {(r.job_id, r.run): r for r in runs}
        # What the old incarnation took is known only if it registered with this controller.
        took = dict(agent.delivered) if agent.registered else None
        replaced = self.registry.admit(node, boot_id, address, epoch, now)

        def had(key: RunKey) -> bool:
            """The replaced incarnation had the run, or may have had it."""
            return replaced and (took is None or key in took)

        acked: list[RunKey] = []
        for key, run in list(self.runs.items()):
            if node not in run.waiting:
                continue
            report = listed.pop(key, None)
            if report is not None and report.state == "lost":
                acked.extend(self._lost(node, key, now, report.reason or "lost by its agent"))
            elif report is not None:
                agent.delivered[key] = 0
                if report.state != "running":
                    acked.extend(self._ended(node, key, report, now))
                elif run.killed:
                    self.registry.send(node, kill_command(key))
            elif had(key):
                acked.extend(self._lost(node, key, now, "its node's agent was replaced"))
            else:
                # Never taken (lost with the old controller's outbox): send it now; it
                # cannot have run, so it runs once.
                self.registry.send(node, run.nodes[node])
                if run.killed:
                    self.registry.send(node, kill_command(key))
        for step in self.steps:
            if node not in step.waiting:
                continue
            key = (step.job_id, step_run(step.run, step.step))
            if key in listed:
                continue
            if had(key):
                acked.append(self._step_ended(node, key, _KILLED, now))
                continue
            # Not taken before the outbox was cleared: send it now.
            self.registry.send(node, step.nodes[node])
            if step.killed:
                self.registry.send(node, kill_command(key))
        for key, report in list(listed.items()):
            if key[1] < STEP_RUNS:
                continue
            del listed[key]
            job_run = (key[0], key[1] % STEP_RUNS)
            if report.state != "running":
                acked.append(self._step_ended(node, key, report, now))
            elif job_run not in self.runs:
                self.registry.send(node, kill_command(key))  # its job is over
            else:
                agent.delivered[key] = 0
        for key, report in listed.items():
            # Runs this controller no longer tracks: their end is already journaled.
            if report.state == "running":
                self.registry.send(node, kill_command(key))
            acked.append(key)
        return acked

    def reports(self, node: str, runs: Iterable[RunReport], now: Instant) -> list[RunKey]:
        self.registry[node].seen = now
        acked: list[RunKey] = []
        for report in runs:
            key = (report.job_id, report.run)
            if report.state == "running":
                continue
            if key[1] >= STEP_RUNS:
                acked.append(self._step_ended(node, key, report, now))
            elif report.state == "lost":
                acked.extend(self._lost(node, key, now, report.reason or "lost by its agent"))
            else:
                acked.extend(self._ended(node, key, report, now))
        return acked

    def container_reports(self, node: str, reports: Iterable[ContainerReport]) -> None:
        """Every container ``node``'s agent has, as of now (soft state, not journaled)."""

        def current(job_id: int, run_no: int) -> bool:
            run = self.runs.get((job_id, run_no))
            return run is not None and node in run.waiting

        self.containers.update(node, reports, current)

    def inventory(self, node: str, has: Iterable[RunKey], after: int, now: Instant) -> None:
        """The node's agent has exactly ``has`` (running or ended unacknowledged) once it
        carried out every command up to seq ``after``: a run whose launch it took by then
        and does not have is lost (ends as on a node failure)."""
        agent = self.registry[node]
        have = set(has)
        missing = [k for k, seq in agent.delivered.items() if seq <= after and k not in have]
        for key in missing:
            if key[1] >= STEP_RUNS:
                self._step_ended(node, key, _KILLED, now)
            else:
                self._lost(node, key, now, "its node's agent does not have it")

    def node_lost(self, node: str, now: Instant) -> None:
        """The node's agent is gone: its part of every run has ended (killed)."""
        self.registry.lose(node)
        self.containers.drop_node(node)
        for key, run in list(self.runs.items()):
            if node in run.waiting:
                self._ended(node, key, _KILLED, now)

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
    def _kill(self, run: _Run) -> None:
        key = (run.launch.job_id, run.launch.run)
        for node in run.waiting:
            self.registry.send(node, kill_command(key))

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
        self.registry[node].delivered.pop(key, None)
        run = self.runs.get(key)
        if run is None:
            return [key]  # already ended and journaled
        if node in run.released:
            run.released.discard(node)
            return [key]  # a node an elastic run gave up: its tasks were killed on purpose
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
        run.usage = combined(run.usage, report_usage(report))
        if run.waiting:
            return []  # acknowledged with the last node's report, once journaled
        job_id, run_no = key
        at = now  # the instant it is handled; the agent's own clock may differ
        try:
            if run.failure and run.exit_code == 0 and run.signal in (0, 9):
                self._report(LaunchFailed(at, job_id, run_no, run.failure))
            else:
                steps = self.steps.records(job_id, run_no, at)
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
        self.steps.job_ended(job_id)
        self.containers.drop(job_id)
        return [key]

    # ------------------------------------------------------------------ steps
    def _launch_of(self, key: RunKey) -> Launch | None:
        run = self.runs.get(key)
        return None if run is None else run.launch

    def _step_ended(self, node: str, key: RunKey, report: RunReport, now: Instant) -> RunKey:
        step = self.steps.ended(node, key, report, now)
        if step is not None:
            run = self.runs.get((step.job_id, step.run))
            if run is not None:  # else the job ended first: its accounting is journaled
                run.steps_usage = combined(run.steps_usage, step.usage)
        return key

    def _commands(self, cmd: Launch, limit: int | None = None) -> dict[str, AgentCommand]:
        first = self.registry[self.cluster.nodes[cmd.alloc.nodes[0]].name].address

        def address(node: str) -> str:
            found = self.registry.agents.get(node)
            return found.address if found is not None else ""

        return launch_commands(
            self.cluster, cmd, first, as_user=self._as_user, limit=limit, address=address
        )


DEAD_AFTER: Duration = 60 * SECOND
