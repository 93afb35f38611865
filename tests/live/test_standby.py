"""A standby follows the leader's journal with a warm engine and takes over at exactly the
state the leader had: the same jobs in the same states, the same ones forgotten, the same
next id -- on both stores."""

from __future__ import annotations

from collections.abc import Callable

from test_snapshot import NODES, _controller, _end, _some_work, _spec, _tick, _view

from phalanx.engine import Forget
from phalanx.live.controller import Controller
from phalanx.live.snapshot import Cadence
from phalanx.live.standby import Follower
from phalanx.live.store import Store
from phalanx.runtime import FakeClock


def _standby(store: Store, clock: FakeClock) -> tuple[Controller, Follower]:
    from phalanx.config.clusterspec import regular_cluster
    from phalanx.policies.catalog import profile

    s = Controller(
        regular_cluster(2, 8, 2, prefix="n"),
        profile("phalanx"),
        store.journal,
        clock=clock,
        run_as_submitter=False,
        accounting=store.accounting,
        epochs=store.epochs,
        record=lambda job: "{}",
    )
    follower = Follower(s, store.journal)
    follower.start()
    return s, follower


def _state(c: Controller) -> tuple[object, ...]:
    c.loop.settle()
    return (_view(c), sorted(c.engine.jobs), c.engine.next_id)


def test_a_standby_takes_over_at_the_leaders_state(stores: Callable[[], Store]) -> None:
    clock = FakeClock(1_000_000)
    leader = _controller(stores(), clock, cadence=Cadence(min_job_age=100))
    standby, follower = _standby(stores(), clock)
    for round_ in range(6):
        _some_work(leader, clock, 3)
        if round_ % 2:
            leader.save_snapshot()  # forgets the old jobs: a journaled input
        # A job left running across the takeover.
        follower.follow()
    running = leader.submit([_spec(2)])[0][0]
    _tick(leader, clock)
    assert leader.job(running).state.value == "RUNNING"
    clock.advance(10)
    follower.take_over()
    assert _state(standby) == _state(leader)
    assert standby.job(running).state.value == "RUNNING"
    # The forgotten jobs went at the same point on both.
    forgotten = {j for j in range(1, leader.engine.next_id) if j not in leader.engine.jobs}
    assert forgotten and all(j not in standby.engine.jobs for j in forgotten)


def test_the_standby_handles_nothing_at_or_after_the_last_instant_it_read(
    stores: Callable[[], Store],
) -> None:
    """Inputs of one instant may still come: what sorts among them waits for them."""
    clock = FakeClock(1_000_000)
    leader = _controller(stores(), clock)
    standby, follower = _standby(stores(), clock)
    leader.submit([_spec()])
    follower.follow()
    assert 1 not in standby.engine.jobs  # its instant is the last read: not handled yet
    leader.submit([_spec()])
    clock.advance(5)
    leader.submit([_spec()])
    follower.follow()
    assert {1, 2} <= set(standby.engine.jobs) and 3 not in standby.engine.jobs


def test_after_taking_over_the_successor_serves_and_agents_come_back(
    stores: Callable[[], Store],
) -> None:
    from phalanx.protocol.agent import AgentHello

    clock = FakeClock(1_000_000)
    first = stores()
    leader = _controller(first, clock, epochs=first.epochs)
    standby, follower = _standby(stores(), clock)
    job = leader.submit([_spec(8)])[0][0]
    _tick(leader, clock)
    follower.follow()
    clock.advance(10)
    follower.take_over()
    # The agents register with the successor, listing the run: it goes on, then ends.
    for node in NODES:
        agent = standby.fleet.registry.agents[node]
        assert agent.epoch >= 1  # as the store had it
    j = standby.job(job)
    for node in NODES:
        runs = (
            [[job, j.run]] if node in {standby.cluster.nodes[i].name for i in j.alloc.nodes} else []
        )  # type: ignore[union-attr]
        standby.register(
            AgentHello(
                node=node,
                boot_id=f"b-{node}",
                epoch=standby.fleet.registry.agents[node].epoch,
                cpus=64,
                memory_mb=1024,
                gpus=8,
                runs=[{"job_id": r[0], "run": r[1], "state": "running"} for r in runs],
            )
        )
    _end(standby, job)
    _tick(standby, clock)
    assert standby.job(job).state.value == "COMPLETED"
    new = standby.submit([_spec()])[0][0]
    assert new == job + 1


def test_forgetting_is_an_input_a_full_replay_repeats(stores: Callable[[], Store]) -> None:
    clock = FakeClock(1_000_000)
    c = _controller(stores(), clock, cadence=Cadence(min_job_age=100))
    _some_work(c, clock, 4)
    clock.advance(1_000)
    c.save_snapshot()
    store = stores()
    assert any(isinstance(e, Forget) for e in store.journal.read())
    # A replay of the whole journal (no snapshot) forgets the same jobs.
    from phalanx.config.clusterspec import regular_cluster
    from phalanx.policies.catalog import profile

    again = Controller(
        regular_cluster(2, 8, 2, prefix="n"), profile("phalanx"), store.journal, clock=clock
    )
    again.loop.replay(clock.now())
    assert sorted(again.engine.jobs) == sorted(c.engine.jobs)


def test_a_leader_whose_lead_is_unconfirmed_hands_agents_no_command(
    stores: Callable[[], Store],
) -> None:
    import asyncio

    import pytest

    from phalanx.errors import NotLeader

    clock = FakeClock(1_000_000)
    leader = _controller(stores(), clock)
    job = leader.submit([_spec(8)])[0][0]
    _tick(leader, clock)
    node = leader.cluster.nodes[leader.job(job).alloc.nodes[0]].name  # type: ignore[union-attr]
    agent = leader.fleet.registry.agents[node]
    leader.agents.may_act = lambda: False  # its last check of the lead is too old
    with pytest.raises(NotLeader):
        asyncio.run(leader.commands(node, agent.boot_id, agent.epoch, 0, 0))
    leader.agents.may_act = lambda: True
    commands = asyncio.run(leader.commands(node, agent.boot_id, agent.epoch, 0, 0))
    assert [c.kind for c in commands] == ["launch"] and commands[0].job_id == job
