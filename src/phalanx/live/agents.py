"""The agent registry: which incarnation of each node's agent holds the node, and its outbox.

One incarnation of a node's agent at a time holds the node, under an epoch (the controller
hands it out, see ``phalanx.protocol.agent``); every command in the outbox carries it, and the
outbox is cleared when another incarnation takes the node. Agents long-poll their outbox;
what they take up to a seq is acknowledged by asking for what comes after it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from phalanx.domain.cluster import Cluster
from phalanx.domain.time import Instant
from phalanx.protocol.agent import AgentCommand, NodeFacts

__all__ = ["Agent", "AgentRegistry", "RunKey"]

RunKey = tuple[int, int]
"""(job, run) as agents know runs (a step's run is encoded, see ``phalanx.live.steps``)."""


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


class AgentRegistry:
    """Every node's agent record, and the outboxes the executor and the steps write to."""

    def __init__(self, cluster: Cluster) -> None:
        self.agents: dict[str, Agent] = {n.name: Agent(n.name) for n in cluster.nodes}

    def __getitem__(self, node: str) -> Agent:
        return self.agents[node]

    def holder(self, node: str, epoch: int, boot_id: str) -> None:
        """The holder of ``node`` as the epoch store knows it (a controller starting)."""
        agent = self.agents[node]
        agent.epoch, agent.boot_id = epoch, boot_id

    def admit(self, node: str, boot_id: str, address: str, epoch: int, now: Instant) -> bool:
        """Incarnation ``boot_id`` (under ``epoch``) registers: it holds the node now, with an
        empty outbox. Return whether it replaced another incarnation."""
        agent = self.agents[node]
        replaced = agent.boot_id != "" and agent.boot_id != boot_id
        if replaced or agent.started is None:
            agent.started = now
        # The agent numbers the commands it carries out afresh from each registration: what
        # it took before counts by what it lists now, not by the seqs it took it under.
        agent.delivered = {}
        agent.boot_id, agent.epoch, agent.address, agent.seen = boot_id, epoch, address, now
        agent.registered = True
        agent.outbox.clear()
        return replaced

    def send(self, node: str, command: AgentCommand) -> None:
        """Queue ``command`` for the node's holder, numbered and stamped with its epoch."""
        agent = self.agents[node]
        agent.seq += 1
        agent.outbox.append(command.model_copy(update={"seq": agent.seq, "epoch": agent.epoch}))
        agent.wake.set()

    def take(self, node: str, after: int, now: Instant) -> list[AgentCommand]:
        """The commands after ``after`` (the ones up to it are acknowledged: dropped)."""
        agent = self.agents[node]
        agent.seen = now
        outbox = agent.outbox
        if outbox and outbox[0].seq <= after:
            for c in outbox:
                if c.seq <= after and c.kind == "launch":
                    # Acknowledged, so counted as taken even if no answer carried it: the
                    # next inventory then ends it as lost if the agent does not have it,
                    # rather than leaving a run that no agent will ever report.
                    agent.delivered.setdefault((c.job_id, c.run), c.seq)
            agent.outbox = outbox = [c for c in outbox if c.seq > after]
        for c in outbox:
            if c.kind == "launch":
                agent.delivered.setdefault((c.job_id, c.run), c.seq)
        if not outbox:
            agent.wake.clear()
        return outbox

    def lose(self, node: str) -> None:
        """The node's agent is gone: nothing more is sent to it until one registers."""
        agent = self.agents[node]
        agent.registered = False
        agent.outbox.clear()


def kill_command(key: RunKey) -> AgentCommand:
    return AgentCommand(kind="kill", job_id=key[0], run=key[1])


def signal_command(key: RunKey, signal: int) -> AgentCommand:
    return AgentCommand(kind="signal", job_id=key[0], run=key[1], signal=signal)
