"""The controller's side of the agent protocol: who may act for each node, and when a node
is gone.

Registrations are admitted by the fencing rules (``phalanx.live.fencing``), their epochs kept
in the ``EpochStore`` before they are answered; polls, reports and inventories are taken only
from the holder of the node; a node whose agent has been silent for ``dead_after`` is taken
down, and its runs end as on a node failure. The fleet (``phalanx.live.fleet``) keeps the
outboxes and the runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from phalanx.domain.time import SECOND, Duration, Instant
from phalanx.engine import NodeDown, NodeUp, NodeUpdate
from phalanx.errors import NotFound, NotLeader, PhalanxError
from phalanx.live.agents import Agent, RunKey
from phalanx.live.epochs import EpochStore
from phalanx.live.fencing import admit, check
from phalanx.live.fleet import Fleet
from phalanx.protocol.agent import (
    AgentCommand,
    AgentFault,
    AgentHello,
    AgentReports,
    NodeFacts,
)
from phalanx.runtime import Clock, Driver

__all__ = ["HEALTH_USER", "AgentDesk"]

HEALTH_USER = "healthcheck"
"""Who drained a node whose agent found a fault (``sinfo -R``'s USER)."""

log = logging.getLogger("phalanx.controller")


class AgentDesk:
    """Admits agents, serves their polls and reports, and watches that they are alive.
    ``accepted`` is called when inputs were queued (the control loop then runs)."""

    def __init__(
        self,
        fleet: Fleet,
        loop: Driver,
        clock: Clock,
        epochs: EpochStore,
        *,
        dead_after: Duration,
        started: Instant,
        accepted: Callable[[], None],
    ) -> None:
        self.fleet = fleet
        self.loop = loop
        self.clock = clock
        self.started = started
        self._epochs = epochs
        self._dead_after = dead_after
        self._accepted = accepted
        self._down: set[str] = set()
        self.may_act: Callable[[], bool] = lambda: True
        """Whether this controller may command agents now: a leader whose lead is not
        confirmed lately (``phalanx.server.roles``) hands out nothing."""
        self.load_epochs()

    def load_epochs(self) -> None:
        """Each node's holder as the epoch store has it (at a start, and at a standby's
        takeover: the old leader admitted agents meanwhile)."""
        registry = self.fleet.registry
        for node, (epoch, boot_id) in self._epochs.load().items():
            if node in registry.agents:
                registry.holder(node, epoch, boot_id)

    def end_polls(self) -> None:
        """Answer every waiting long poll now (empty): the controller is stopping."""
        for agent in self.fleet.registry.agents.values():
            agent.wake.set()

    # ------------------------------------------------------------------ the protocol
    def register(self, hello: AgentHello) -> tuple[int, list[RunKey]]:
        """Admit an agent incarnation (``phalanx.live.fencing``): return its epoch and the
        runs whose end is now journaled. ``Fenced`` if it may not hold the node."""
        agent = self._agent(hello.node)
        now = self.clock.now()
        epoch = admit(
            agent, hello.boot_id, hello.epoch, holder_alive=self._holder_alive(agent, now)
        )
        if (epoch, hello.boot_id) != (agent.epoch, agent.boot_id):
            # Durable before anyone hears of it: no controller hands this epoch out again.
            self._epochs.save(hello.node, epoch, hello.boot_id)
            if agent.epoch:
                log.warning(
                    "agent %s: boot %s (epoch %d) fences boot %s (epoch %d)",
                    hello.node,
                    hello.boot_id,
                    epoch,
                    agent.boot_id,
                    agent.epoch,
                )
            agent.wake.set()  # a poll of the fenced incarnation answers now (refused)
        acked = self.fleet.register(
            hello.node, hello.boot_id, hello.address, hello.runs, now, epoch=epoch
        )
        agent.facts = _facts(hello)
        if hello.node in self._down:
            self._down.discard(hello.node)
            index = self.fleet.cluster.node_index(hello.node)
            assert index is not None
            self.loop.accept([NodeUp(now, index)])
        log.info("agent %s registered (boot %s, epoch %d)", hello.node, hello.boot_id, epoch)
        self._accepted()
        return epoch, acked

    def reports(self, node: str, body: AgentReports) -> list[RunKey]:
        """Ends of runs from the node's holder; with an inventory, the runs it should have
        and has not are lost (they end as on a node failure); with containers, their latest
        statuses (``Fleet.containers``)."""
        agent = self._agent(node)
        check(agent, body.boot_id, body.epoch)
        now = self.clock.now()
        acked = self.fleet.reports(node, body.reports, now)
        if body.inventory:
            has = [(r.job_id, r.run) for r in body.reports]
            self.fleet.inventory(node, has, body.after, now)
        if body.containers is not None:
            self.fleet.container_reports(node, body.containers)
        self._accepted()
        return acked

    def fault(self, node: str, body: AgentFault) -> None:
        """A fault the node's holder found: the node is drained (by ``HEALTH_USER``), once
        per reason; a fatal one also ends its jobs now. A node an administrator took out of
        service keeps the administrator's note."""
        agent = self._agent(node)
        check(agent, body.boot_id, body.epoch)
        index = self.fleet.cluster.node_index(node)
        assert index is not None
        note = self.loop.engine.nodes.notes.get(index)
        known = note is not None and (note.user != HEALTH_USER or note.reason == body.reason)
        if known and not body.fatal:
            return
        log.warning("node %s: %s%s", node, body.reason, " (fatal)" if body.fatal else "")
        now = self.clock.now()
        self.loop.accept(
            [NodeUpdate(now, index, "drain", body.reason, HEALTH_USER, kill=body.fatal)]
        )
        self._accepted()

    async def commands(
        self,
        node: str,
        boot_id: str,
        epoch: int,
        after: int,
        wait: float,
        health: NodeFacts | None = None,
    ) -> list[AgentCommand]:
        """The node's commands after ``after`` for its holder (``boot_id`` at ``epoch``),
        waiting up to ``wait`` s for some; ``health`` (``cpu_load``, ``free_mem_mb``) is how
        the agent found its machine as it asked. ``Fenced`` for anyone else, also when the
        holder changes during the wait."""
        agent = self._agent(node)
        check(agent, boot_id, epoch)
        if health:
            agent.facts.update(health)
        self._confirm()
        out = self.fleet.registry.take(node, after, self.clock.now())
        if out or wait <= 0:
            return out
        # An agent waiting here is alive; it comes back well within the liveness limit.
        wait = min(wait, self._dead_after / 3000)
        agent.polling += 1
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(agent.wake.wait(), wait)
        finally:
            agent.polling -= 1
        check(agent, boot_id, epoch)
        self._confirm()
        return self.fleet.registry.take(node, after, self.clock.now())

    def _confirm(self) -> None:
        if not self.may_act():
            raise NotLeader("this controller's lead is not confirmed: no commands now")

    def _agent(self, node: str) -> Agent:
        agent = self.fleet.registry.agents.get(node)
        if agent is None:
            raise NotFound(f"node {node!r} is not in the cluster definition")
        return agent

    @property
    def agent_lease_s(self) -> float:
        """How long an agent keeps its tasks without reaching this controller: half the
        liveness limit, so that a node cut off has stopped its jobs before they are
        requeued elsewhere (the agent counts from when it sent its last call that was
        answered, which is no later than when this controller saw it)."""
        return self._dead_after / 2000

    def _holder_alive(self, agent: Agent, now: Instant) -> bool:
        """Whether the incarnation holding the node may still be acting for it: polling
        now, or heard from within a third of the liveness limit; one this controller has
        not heard from yet (it restarted) gets that long from the start to come back."""
        lease = self._dead_after // 3
        if agent.registered:
            return agent.polling > 0 or now - agent.seen < lease
        return agent.node not in self._down and now - self.started < lease

    def check_liveness(self) -> None:
        """Take down the nodes whose agent has been silent for ``dead_after`` (a restarted
        controller first gives agents that long to come back): their runs end as on a node
        failure."""
        now = self.clock.now()
        if now - self.started < self._dead_after:
            return  # a restarted controller gives agents time to come back
        dead = [
            a.node
            for a in self.fleet.registry.agents.values()
            if a.node not in self._down
            and not a.polling
            and now - max(a.seen, self.started) > self._dead_after
        ]
        if not dead:
            return
        events = []
        for node in dead:
            index = self.fleet.cluster.node_index(node)
            assert index is not None
            events.append(NodeDown(now, index, "Not responding"))
            self._down.add(node)
            log.warning("node %s: no agent for %d s, marked down", node, self._dead_after // SECOND)
        try:
            stamped = self.loop.accept(events)
            # The ends of their runs come after the engine knows the node failed (at the
            # same instant an end would sort first and read as an ordinary kill).
            after = max(e.at for e in stamped) + 1
            for node in dead:
                self.fleet.node_lost(node, after)
        except PhalanxError:
            self._down.difference_update(dead)  # try again at the next check
        self._accepted()

    # ------------------------------------------------------------------ what they tell
    def node_down(self, name: str) -> bool:
        return name in self._down

    def registered(self, name: str) -> bool:
        agent = self.fleet.registry.agents.get(name)
        return agent is not None and agent.registered

    def node_facts(self, name: str) -> NodeFacts:
        """What the node's agent told of its machine, and where and when it registered
        (``NodeInfo`` fields; none without a registered agent)."""
        agent = self.fleet.registry.agents.get(name)
        if agent is None or not agent.registered:
            return NodeFacts()
        return {**agent.facts, "address": agent.address, "agent_start": agent.started}


def _facts(hello: AgentHello) -> NodeFacts:
    """What an agent's hello tells of its machine, kept for ``scontrol show node``."""
    facts = NodeFacts()
    if hello.arch is not None:
        facts["arch"] = hello.arch
    if hello.os is not None:
        facts["os"] = hello.os
    if hello.boot_time is not None:
        facts["boot_time"] = hello.boot_time
    if hello.cpu_load is not None:
        facts["cpu_load"] = hello.cpu_load
    if hello.free_mem_mb is not None:
        facts["free_mem_mb"] = hello.free_mem_mb
    return facts
