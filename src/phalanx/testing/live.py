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
from phalanx.agent.tasks import RunKey, TaskRunner
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
    all this machine, and a runner reaps every child of the process): what the fleet sends
    to the nodes of one run is started as one run, and its end is reported for each node.
    Each node's agent registers once, as a new incarnation, and keeps its epoch."""

    BOOT_ID = "local"

    def __init__(self, controller: Controller, *, backoff_s: float = BACKOFF_INITIAL_S) -> None:
        self._controller = controller
        self.runner = TaskRunner(backoff_s=backoff_s)
        self._cpu = CpuMeter(self.runner.cgroup_of)
        self._after = {node.name: 0 for node in controller.cluster.nodes}
        self._epoch: dict[str, int] = {}
        self._nodes: dict[RunKey, list[str]] = {}
        """The nodes each run was launched on, until its end is acknowledged."""
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

    def step(self) -> None:
        """Take every node's commands and carry them out, then report what ended."""
        controller = self._controller
        now = controller.clock.now()
        launches: dict[RunKey, AgentCommand] = {}
        others: dict[tuple[str, RunKey, int], AgentCommand] = {}
        for node, after in self._after.items():
            for cmd in controller.fleet.registry.take(node, after, now):
                self._after[node] = max(self._after[node], cmd.seq)
                key = (cmd.job_id, cmd.run)
                if cmd.kind == "launch":
                    self._nodes.setdefault(key, []).append(node)
                    if key in launches:
                        # A copy: the fleet keeps its own until the node acknowledges it.
                        tasks = launches[key].tasks + cmd.tasks
                        launches[key] = launches[key].model_copy(update={"tasks": tasks})
                    else:
                        launches[key] = cmd
                else:
                    # Sent to every node of the run: carried out once, for all.
                    others.setdefault((cmd.kind, key, cmd.signal), cmd)
        for cmd in launches.values():
            self.runner.launch(cmd)
        for cmd in others.values():
            if cmd.kind == "signal":
                self.runner.signal(cmd.job_id, cmd.run, cmd.signal)
            else:
                self.runner.kill(cmd.job_id, cmd.run)
        self.runner.tick()  # containers due to restart, KILLs after a probe's grace
        self.runner.reap()
        self._report_containers()
        for report in self.runner.unacked():
            key = (report.job_id, report.run)
            acked: set[RunKey] = set()
            for node in self._nodes.get(key, []):
                body = AgentReports(boot_id=self.BOOT_ID, epoch=self._epoch[node], reports=[report])
                acked.update(controller.reports(node, body))
            if key in acked:
                self.runner.acknowledge([report])
                self._nodes.pop(key, None)


    def _report_containers(self) -> None:
        """Each node's containers, as its agent reports them (probes are not run here)."""
        per_node: dict[str, list[ContainerReport]] = {node: [] for node in self._after}
        for report in self.runner.container_reports(self._cpu.seconds):
            for node in self._nodes.get((report.job_id, report.run), []):
                per_node[node].append(report)
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
