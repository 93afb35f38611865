"""Fencing: one incarnation of a node's agent acts for the node; a stale epoch is refused."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.errors import Fenced
from phalanx.live.controller import Controller
from phalanx.live.epochs import MemoryEpochs, SqliteEpochs
from phalanx.live.fencing import admit, check
from phalanx.live.fleet import Agent
from phalanx.live.journal import JournalError, MemoryJournal
from phalanx.policies.catalog import profile
from phalanx.protocol.agent import AgentHello, AgentReports, RunReport
from phalanx.runtime import FakeClock

DEAD_AFTER = 30_000
LEASE = DEAD_AFTER // 3


def _controller(clock: FakeClock, epochs: Any = None) -> Controller:
    c = Controller(
        regular_cluster(2, 8, 2, prefix="n"),
        profile("phalanx"),
        MemoryJournal(),
        clock=clock,
        run_as_submitter=False,
        dead_after=DEAD_AFTER,
        epochs=epochs,
    )
    c.recover()
    return c


def _hello(node: str, boot_id: str, epoch: int = 0, **kw: Any) -> AgentHello:
    return AgentHello(
        node=node, boot_id=boot_id, epoch=epoch, cpus=64, memory_mb=1024, gpus=8, **kw
    )


def _poll(c: Controller, node: str, boot_id: str, epoch: int, after: int = 0) -> list[Any]:
    return asyncio.run(c.commands(node, boot_id, epoch, after, 0))


# ---------------------------------------------------------------------------- the rules
def test_the_rules_of_admission() -> None:
    holder = Agent("n1", boot_id="a", epoch=3, registered=True)
    assert admit(holder, "a", 3, holder_alive=True) == 3  # the holder again: same epoch
    assert admit(holder, "a", 0, holder_alive=True) == 3
    with pytest.raises(Fenced) as stale:
        admit(holder, "old", 2, holder_alive=False)
    assert (stale.value.reason, stale.value.epoch) == ("fenced", 3)
    with pytest.raises(Fenced) as held:
        admit(holder, "new", 0, holder_alive=True)
    assert held.value.reason == "held"
    assert admit(holder, "new", 0, holder_alive=False) == 4
    assert admit(Agent("n1"), "first", 0, holder_alive=False) == 1


def test_the_rules_of_polls_and_reports() -> None:
    holder = Agent("n1", boot_id="a", epoch=3, registered=True)
    check(holder, "a", 3)
    for boot_id, epoch, reason in [("old", 2, "fenced"), ("x", 0, "unregistered")]:
        with pytest.raises(Fenced) as refused:
            check(holder, boot_id, epoch)
        assert refused.value.reason == reason
    holder.registered = False  # a restarted controller: the holder must register first
    with pytest.raises(Fenced) as again:
        check(holder, "a", 3)
    assert again.value.reason == "unregistered"


# ---------------------------------------------------------------------------- the controller
def test_a_second_agent_for_a_live_node_is_refused_and_gets_nothing() -> None:
    clock = FakeClock(1_000_000)
    c = _controller(clock)
    first, _ = c.register(_hello("n001", "boot-a"))
    assert first == 1
    clock.advance(LEASE // 2)
    _poll(c, "n001", "boot-a", 1)  # alive
    with pytest.raises(Fenced) as held:
        c.register(_hello("n001", "boot-b"))
    assert held.value.reason == "held"
    [job] = c.submit([JobSpec(user="u", command=("true",), workdir="/tmp", gpus_per_task=8)])[0]
    clock.advance(1)
    c.step()
    node = c.cluster.nodes[c.job(job).alloc.nodes[0]].name  # type: ignore[union-attr]
    holder = "boot-a" if node == "n001" else f"boot-{node}"
    if node != "n001":
        c.register(_hello(node, holder))
    [launch] = _poll(c, node, holder, c.fleet.registry.agents[node].epoch)
    assert launch.epoch == c.fleet.registry.agents[node].epoch
    with pytest.raises(Fenced):
        _poll(c, "n001", "boot-b", 0)  # the refused one cannot take commands either


def test_a_newer_agent_fences_a_silent_one_whose_polls_and_reports_are_then_refused() -> None:
    clock = FakeClock(1_000_000)
    c = _controller(clock)
    c.register(_hello("n001", "boot-a"))
    clock.advance(LEASE + 1)  # boot-a is silent
    epoch, _ = c.register(_hello("n001", "boot-b"))
    assert epoch == 2
    for call in (
        lambda: _poll(c, "n001", "boot-a", 1),
        lambda: c.reports("n001", AgentReports(boot_id="boot-a", epoch=1, reports=[])),
        lambda: c.register(_hello("n001", "boot-a", epoch=1)),
    ):
        with pytest.raises(Fenced) as refused:
            call()
        assert (refused.value.reason, refused.value.epoch) == ("fenced", 2)
    assert _poll(c, "n001", "boot-b", 2) == []


def test_a_waiting_poll_of_a_fenced_agent_is_refused_when_it_is_fenced() -> None:
    clock = FakeClock(1_000_000)
    c = _controller(clock)

    async def scenario() -> None:
        c.register(_hello("n001", "boot-a"))
        waiting = asyncio.create_task(c.commands("n001", "boot-a", 1, 0, 5.0))
        await asyncio.sleep(0.01)
        c.fleet.registry.agents["n001"].polling = 0  # as if the poll had gone quiet long ago
        clock.advance(LEASE + 1)
        c.register(_hello("n001", "boot-b"))
        with pytest.raises(Fenced):
            await asyncio.wait_for(waiting, 1.0)

    asyncio.run(scenario())


def test_epochs_survive_a_controller_restart(tmp_path: Path) -> None:
    clock = FakeClock(1_000_000)
    store = SqliteEpochs(str(tmp_path / "state.db"))
    c = _controller(clock, store)
    assert c.register(_hello("n001", "boot-a"))[0] == 1
    clock.advance(LEASE + 1)
    assert c.register(_hello("n001", "boot-b"))[0] == 2
    again = _controller(clock, SqliteEpochs(str(tmp_path / "state.db")))
    # The holder comes back to the new controller under its epoch ...
    assert again.register(_hello("n001", "boot-b", epoch=2))[0] == 2
    # ... and the fenced one stays fenced.
    with pytest.raises(Fenced):
        again.register(_hello("n001", "boot-a", epoch=1))
    third = _controller(clock, SqliteEpochs(str(tmp_path / "state.db")))
    with pytest.raises(Fenced) as held:  # the holder has the lease to come back
        third.register(_hello("n001", "boot-c"))
    assert held.value.reason == "held"
    clock.advance(LEASE)
    assert third.register(_hello("n001", "boot-c"))[0] == 3  # never an epoch given before


def test_an_epoch_that_cannot_be_stored_is_not_given() -> None:
    clock = FakeClock(1_000_000)
    store = MemoryEpochs()
    c = _controller(clock, store)
    store.fail = True
    with pytest.raises(JournalError):
        c.register(_hello("n001", "boot-a"))
    assert not c.agent_registered("n001")


def test_a_running_job_its_agent_does_not_have_is_requeued_within_a_heartbeat() -> None:
    clock = FakeClock(1_000_000)
    c = _controller(clock)
    for node in ("n001", "n002"):
        c.register(_hello(node, f"boot-{node}"))
    [job_id] = c.submit([JobSpec(user="u", command=("x",), workdir="/tmp", gpus_per_task=8)])[0]
    clock.advance(1)
    c.step()
    job = c.job(job_id)
    node = c.cluster.nodes[job.alloc.nodes[0]].name  # type: ignore[union-attr]
    agent = c.fleet.registry.agents[node]
    [launch] = _poll(c, node, agent.boot_id, agent.epoch)
    launch_node = node
    # The agent took it, carried it out (seq), and has nothing: the process is gone.
    inventory = AgentReports(
        boot_id=agent.boot_id, epoch=agent.epoch, reports=[], inventory=True, after=launch.seq
    )
    c.reports(node, inventory)
    clock.advance(1)
    c.step()
    job = c.job(job_id)
    assert (job.restarts, job.state.value) == (1, "RUNNING")  # started again, once
    # An inventory that lists it keeps it.
    node = c.cluster.nodes[job.alloc.nodes[0]].name  # type: ignore[union-attr]
    agent = c.fleet.registry.agents[node]
    sent = _poll(
        c, node, agent.boot_id, agent.epoch, after=launch.seq if node == launch_node else 0
    )
    assert [(x.kind, x.run) for x in sent if x.job_id == job_id][-1] == ("launch", job.run)
    running = RunReport(job_id=job_id, run=job.run, state="running")
    c.reports(
        node,
        AgentReports(
            boot_id=agent.boot_id,
            epoch=agent.epoch,
            reports=[running],
            inventory=True,
            after=sent[-1].seq,
        ),
    )
    clock.advance(1)
    c.step()
    assert (c.job(job_id).state.value, c.job(job_id).restarts) == ("RUNNING", 1)
