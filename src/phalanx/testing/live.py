"""``live_stack``: the live controller on this machine, with its nodes' agents in this process.

Production's code all the way: the controller (``phalanx.live.controller``: the driver loop on
the wall clock, a journal, the fleet), the fleet's launch commands (``phalanx.live.taskenv``:
ranks, ``SLURM_*`` and torch.distributed variables, output files) and the agent's task runner
(``phalanx.agent.tasks``), with no sockets in between.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from phalanx.agent.containers import BACKOFF_INITIAL_S
from phalanx.agent.cpuusage import CpuMeter
from phalanx.agent.tasks import TaskRunner
from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.engine import Engine
from phalanx.live.controller import Controller
from phalanx.policies.catalog import POLICIES
from phalanx.protocol.agent import AgentCommand, AgentHello, AgentReports, ContainerReport
from phalanx.runtime import MemoryJournal

__all__ = ["LiveStack", "LocalAgents", "live_stack"]


class LocalAgents:
    """Every node's agent, played in this process by one ``TaskRunner`` (emulated nodes are
    all this machine, and a runner reaps every child of the process): each node's part of a
    run is a run of its own in the runner (under a job id of the harness's), so a kill sent to
    one node (an elastic job shrunk) ends that node's tasks only, and each part's end is
    reported for its node. Each node's agent registers once, as a new incarnation, and keeps
    its epoch."""

    BOOT_ID = "local"

    def __init__(self, controller: Controller, *, backoff_s: float = BACKOFF_INITIAL_S) -> None:
        self._controller = controller
        self.runner = TaskRunner(backoff_s=backoff_s)
        self._cpu = CpuMeter(self.runner.cgroup_of)
        self._after = {node.name: 0 for node in controller.cluster.nodes}
        self._epoch: dict[str, int] = {}
        self._parts: dict[tuple[str, int, int], int] = {}
        """(node, job, run) -> the runner's job id for that node's part of the run."""
        self._whose: dict[int, tuple[str, int, int]] = {}
        self._opened: set[str] = set()
        """Output files truncated already: every part appends (one file, many writers)."""
        for node in controller.cluster.nodes:
            hello = AgentHello(
                node=node.name,
                boot_id=self.BOOT_ID,
                cpus=node.cpus,
                memory_mb=node.memory_mb,
                gpus=node.gpus,
                gpu_model=node.gpu_model,
            )
            self._epoch[node.name], _ = controller.register(hello)

    def _part(self, node: str, job_id: int, run: int) -> int:
        key = (node, job_id, run)
        part = self._parts.get(key)
        if part is None:
            part = self._parts[key] = len(self._parts) + 1
            self._whose[part] = key
        return part

    def _appending(self, cmd: AgentCommand, part: int) -> AgentCommand:
        """The launch as a part of its own, every output file opened to append (truncated
        here first where the launch says so): separate writers of one file must all append,
        or one overwrites the lines of another."""
        tasks = []
        for task in cmd.tasks:
            for path in (task.stdout, task.stderr):
                if path is not None and task.open_mode == "truncate" and path not in self._opened:
                    self._opened.add(path)
                    with open(path, "wb"):
                        pass
            tasks.append(task.model_copy(update={"open_mode": "append"}))
        return cmd.model_copy(update={"job_id": part, "tasks": tasks})

    def step(self) -> None:
        """Take every node's commands and carry them out, then report what ended."""
        controller = self._controller
        now = controller.clock.now()
        for node, after in self._after.items():
            for cmd in controller.fleet.registry.take(node, after, now):
                self._after[node] = max(self._after[node], cmd.seq)
                part = self._part(node, cmd.job_id, cmd.run)
                if cmd.kind == "launch":
                    self.runner.launch(self._appending(cmd, part))
                elif cmd.kind == "signal":
                    self.runner.signal(part, cmd.run, cmd.signal)
                else:
                    self.runner.kill(part, cmd.run)
        self.runner.tick()  # containers due to restart, KILLs after a probe's grace
        self.runner.reap()
        self._report_containers()
        for report in self.runner.unacked():
            node, job_id, run = self._whose[report.job_id]
            real = report.model_copy(update={"job_id": job_id})
            body = AgentReports(boot_id=self.BOOT_ID, epoch=self._epoch[node], reports=[real])
            if (job_id, run) in controller.reports(node, body):
                self.runner.acknowledge([report])

    def _report_containers(self) -> None:
        """Each node's containers, as its agent reports them (probes are not run here)."""
        per_node: dict[str, list[ContainerReport]] = {node: [] for node in self._after}
        for report in self.runner.container_reports(self._cpu.seconds):
            found = self._whose.get(report.job_id)  # a node's part of a run (``_part``)
            if found is not None:
                per_node[found[0]].append(report.model_copy(update={"job_id": found[1]}))
        for node, reports in per_node.items():
            body = AgentReports(
                boot_id=self.BOOT_ID, epoch=self._epoch[node], reports=[], containers=reports
            )
            self._controller.reports(node, body)


@dataclass
class LiveStack:
    """The controller and its local agents (see ``live_stack``)."""

    controller: Controller
    agents: LocalAgents
    journal: MemoryJournal

    @property
    def engine(self) -> Engine:
        return self.controller.engine

    def submit(self, spec: JobSpec) -> list[int]:
        """Submit one request (journaled first); return its job ids."""
        return self.controller.submit([spec])[0]

    def step(self) -> None:
        """Handle what is due, then let the agents act and report."""
        self.controller.step()
        self.agents.step()
        self.controller.step()

    def run(self, until: Callable[[], bool], timeout: float, *, poll: float = 0.02) -> bool:
        """Step until ``until()`` holds (True) or ``timeout`` seconds pass (False)."""
        deadline = time.monotonic() + timeout
        while True:
            self.step()
            if until():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)


def live_stack(
    nodes: int = 2, gpus: int = 8, policy: str = "phalanx", *, backoff_s: float = BACKOFF_INITIAL_S
) -> LiveStack:
    """Emulated nodes that are all this machine; tasks run as this user. ``backoff_s``: the
    first delay before a container that restarts in place starts again."""
    journal = MemoryJournal()
    controller = Controller(
        regular_cluster(nodes, gpus, 2), POLICIES[policy], journal, run_as_submitter=False
    )
    controller.recover()
    return LiveStack(controller, LocalAgents(controller, backoff_s=backoff_s), journal)
