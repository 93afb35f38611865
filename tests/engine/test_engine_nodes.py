"""Nodes out of service: drained (running jobs go on, none new), downed, resumed."""

from __future__ import annotations

from phalanx.domain.state import JobState
from phalanx.domain.time import HOUR, MINUTE
from phalanx.engine import NodeUpdate
from phalanx.engine.decisions import NodeFailure
from phalanx.testing import EngineDriver, make_job, small_cluster


def _update(d: EngineDriver, node: int, state: str, reason: str = "", **kw: object) -> None:
    d.feed(NodeUpdate(d.now, node, state, reason, **kw))  # type: ignore[arg-type]
    d.settle()


def test_a_drained_node_keeps_its_job_and_takes_no_new_one_until_resumed() -> None:
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), "slurm")
    [first] = d.submit(make_job(gpus=4), runtime=HOUR)
    d.settle()
    [node] = d.job(first).alloc.nodes  # type: ignore[union-attr]
    _update(d, node, "drain", "bad gpu", user="alice")
    note = d.engine.nodes.notes[node]
    assert (note.state, note.reason, note.user) == ("drain", "bad gpu", "alice")
    assert d.state(first) is JobState.RUNNING
    # The 8-GPU job takes the other node; the 4-GPU one would fit beside the first.
    [a] = d.submit(make_job(gpus=8, time_limit=10 * HOUR), runtime=10 * HOUR)
    [b] = d.submit(make_job(gpus=4))
    d.settle()
    assert d.job(a).alloc is not None and node not in d.job(a).alloc.nodes  # type: ignore[union-attr]
    assert d.state(b) is JobState.PENDING
    d.advance(HOUR + MINUTE)  # the first job ends: the node stays out of service
    assert d.state(first) is JobState.COMPLETED
    assert d.state(b) is JobState.PENDING and not d.engine.state.up[node]
    _update(d, node, "resume")
    assert d.state(b) is JobState.RUNNING and node in d.job(b).alloc.nodes  # type: ignore[union-attr]
    assert node not in d.engine.nodes.notes


def test_a_fatal_fault_drains_the_node_and_requeues_its_jobs_at_once() -> None:
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), "slurm")
    [j] = d.submit(make_job(gpus=8))
    d.settle()
    [node] = d.job(j).alloc.nodes  # type: ignore[union-attr]
    _update(d, node, "drain", "Xid 79", kill=True)
    assert d.decisions(NodeFailure, j)
    job = d.job(j)
    assert job.state is JobState.RUNNING and job.run == 2 and job.restarts == 1
    assert node not in job.alloc.nodes  # type: ignore[union-attr]


def test_an_administrators_down_outlasts_the_agent_coming_back() -> None:
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "slurm")
    [j] = d.submit(make_job(gpus=8, requeue=False))
    d.settle()
    _update(d, 0, "down", "hw")
    assert d.state(j) is JobState.NODE_FAIL
    assert d.engine.nodes.is_down(0)
    d.node_down(0)
    d.node_up(0)  # the agent answers again: still down
    [k] = d.submit(make_job(gpus=8))
    d.settle()
    assert d.state(k) is JobState.PENDING
    _update(d, 0, "resume")
    assert d.state(k) is JobState.RUNNING and not d.engine.nodes.is_down(0)


def test_a_drained_node_whose_agent_dies_and_returns_stays_drained() -> None:
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "slurm")
    _update(d, 0, "drain", "maint")
    d.node_down(0)
    d.node_up(0)
    [j] = d.submit(make_job(gpus=1))
    d.settle()
    assert d.state(j) is JobState.PENDING
    assert d.engine.nodes.serving(0) is False
