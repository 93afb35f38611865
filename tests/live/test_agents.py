"""The agent registry: one holder per node, numbered commands stamped with its epoch."""

from __future__ import annotations

from phalanx.config.clusterspec import regular_cluster
from phalanx.live.agents import AgentRegistry, kill_command, signal_command
from phalanx.protocol.agent import AgentCommand

CLUSTER = regular_cluster(2, 8, 2, prefix="n")


def test_commands_are_numbered_per_node_and_carry_the_holders_epoch() -> None:
    reg = AgentRegistry(CLUSTER)
    reg.admit("n001", "boot-a", "127.0.0.1", epoch=3, now=0)
    reg.send("n001", kill_command((7, 1)))
    reg.send("n001", signal_command((7, 1), 10))
    reg.send("n002", kill_command((8, 1)))
    first, second = reg.take("n001", 0, now=1)
    assert (first.seq, first.epoch, first.kind) == (1, 3, "kill")
    assert (second.seq, second.signal) == (2, 10)
    [other] = reg.take("n002", 0, now=1)
    assert other.seq == 1
    # Asking for what comes after a seq acknowledges it: it is not sent again.
    assert reg.take("n001", first.seq, now=2) == [second]
    assert reg.take("n001", second.seq, now=3) == []
    assert not reg["n001"].wake.is_set()


def test_another_incarnation_takes_the_node_with_an_empty_outbox() -> None:
    reg = AgentRegistry(CLUSTER)
    assert not reg.admit("n001", "boot-a", "127.0.0.1", epoch=1, now=0)
    reg.send("n001", kill_command((7, 1)))
    assert not reg.admit("n001", "boot-a", "127.0.0.1", epoch=1, now=5)  # the same one again
    assert reg["n001"].started == 0
    reg.send("n001", kill_command((7, 1)))
    assert reg.admit("n001", "boot-b", "127.0.0.1", epoch=2, now=9)
    assert reg.take("n001", 0, now=9) == []
    assert (reg["n001"].epoch, reg["n001"].started) == (2, 9)


def test_a_lost_agent_gets_nothing_until_one_registers() -> None:
    reg = AgentRegistry(CLUSTER)
    reg.admit("n002", "boot-a", "127.0.0.1", epoch=1, now=0)
    reg.send("n002", kill_command((7, 1)))
    reg.lose("n002")
    assert not reg["n002"].registered
    assert reg.take("n002", 0, now=1) == []


def test_a_launch_acknowledged_without_being_taken_counts_as_taken() -> None:
    """An ``after`` past a launch that no answer carried (a protocol slip) must not make the
    run vanish: it counts as taken, so the next inventory ends it as lost if it is not
    there."""
    reg = AgentRegistry(CLUSTER)
    reg.admit("n001", "boot-a", "127.0.0.1", epoch=1, now=0)
    reg.send("n001", AgentCommand(kind="launch", job_id=7, run=1))
    reg.send("n001", kill_command((8, 1)))
    assert reg.take("n001", 5, now=1) == []
    assert reg["n001"].delivered == {(7, 1): 1}
