"""Nominations (``phalanx.engine.scheduling.nominations``): what a preemption frees is kept for
the job that preempted until it starts, is cancelled, or can no longer use it.

The scene, under ``kueue`` (greedy: no reservation on a timeline to protect the preemptor):
2 nodes x 8 GPUs, a normal 1-GPU-per-node job ``a`` on both; a high-QOS gang ``c`` of 8 GPUs
on each node, then a normal 4-GPU job ``d``. ``c`` preempts ``a`` (30 s grace); 7 GPUs are
free on each node meanwhile, enough for ``d``.
"""

from __future__ import annotations

import pickle

import numpy as np

from phalanx.domain.cluster import PreemptMode
from phalanx.domain.jobspec import MILLI
from phalanx.domain.state import JobState
from phalanx.domain.time import HOUR, SECOND
from phalanx.engine.decisions import Preempted
from phalanx.engine.scheduling.nominations import free_part, subtract
from phalanx.sched.capacity import Allocation, Capacity
from phalanx.testing import EngineDriver, make_job, small_cluster

GRACE = 30 * SECOND


def _scene(profile: str = "kueue") -> tuple[EngineDriver, int, int, int]:
    # Accounts with the whole cluster as quota each: admit/quota admits everything.
    quotas = {"a": 16, "b": 16, "c": 16}
    cluster = small_cluster(
        nodes=2,
        gpus=8,
        per_leaf=2,
        quotas=quotas,
        preempt_mode=PreemptMode.REQUEUE,
        grace_time=GRACE,
    )
    d = EngineDriver(cluster, profile)
    [a] = d.submit(make_job(gpus=1, nodes=2, account="a", time_limit=10 * HOUR))
    d.settle()
    assert d.state(a) is JobState.RUNNING
    [c] = d.submit(make_job(gpus=8, nodes=2, qos="high", account="c", time_limit=HOUR))
    [j] = d.submit(make_job(gpus=4, account="b", time_limit=10 * HOUR))
    d.settle()
    return d, a, c, j


def test_the_gpus_a_preemption_frees_go_to_the_preemptor_not_to_a_later_job() -> None:
    """Without the nomination ``d`` took 4 of the free GPUs in the pass ``c`` preempted in,
    ``c`` preempted ``d`` after ``a``'s kill, requeued ``a`` took the room again: a livelock
    (test_properties_sim's ``test_every_job_ends[kueue]``)."""
    d, a, c, j = _scene()
    assert [p.job_id for p in d.decisions(Preempted)] == [a]
    assert d.state(j) is JobState.PENDING  # the 7 free GPUs per node are kept for c
    d.advance(d.now + GRACE)
    d.settle()
    assert d.state(c) is JobState.RUNNING
    assert d.state(j) is JobState.PENDING
    assert [p.job_id for p in d.decisions(Preempted)] == [a]  # once, and never again


def test_a_cancelled_preemptor_leaves_what_its_victims_freed_to_others() -> None:
    d, _, c, j = _scene()
    d.cancel(c)
    d.settle()
    d.advance(d.now + GRACE)
    d.settle()
    assert d.state(j) is JobState.RUNNING
    assert c not in d.engine.preemption.nominations


def test_a_preemptor_that_cannot_use_what_was_freed_gives_it_up_after_its_turn() -> None:
    """A node of ``c``'s goes down during the grace: once ``a`` is gone ``c`` still cannot
    start, its nomination ends at its turn, and ``d`` starts in the same pass."""
    d, _, c, j = _scene()
    d.node_down(1)
    d.advance(d.now + GRACE)
    d.settle()
    assert d.state(c) is JobState.PENDING
    assert c not in d.engine.preemption.nominations
    assert d.state(j) is JobState.RUNNING
    assert d.job(j).alloc.nodes == (0,)  # type: ignore[union-attr]


def test_a_snapshot_taken_during_the_grace_keeps_the_nomination() -> None:
    """The engine is pickled with its nominations (``live.snapshot``): restored, it decides
    as the one that goes on."""
    d, _, c, _ = _scene()
    restored = pickle.loads(pickle.dumps(d.engine))
    assert [j.id for j in restored.preemption.nominations.jobs()] == [c]
    job = restored.jobs[c]
    nominated = restored.preemption.nominations.nominated[c]
    assert nominated[0] is job  # the same object as the engine's job, not a copy
    assert nominated[1] is not None and sorted(nominated[1].nodes) == [0, 1]


def test_under_phalanx_the_preemptor_runs_after_the_grace_and_preempts_no_more() -> None:
    """``phalanx`` favours small jobs: ``d`` starts first, ``c`` then preempts it and ``a``;
    after the grace ``c`` runs, and requeued ``d`` and ``a`` take nothing of it."""
    d, a, c, j = _scene("phalanx")
    assert sorted(p.job_id for p in d.decisions(Preempted)) == sorted([a, j])
    d.advance(d.now + GRACE)
    d.settle()
    assert d.state(c) is JobState.RUNNING
    d.advance(d.now + GRACE)
    assert len(d.decisions(Preempted)) == 2


# -- holds ---------------------------------------------------------------------------------


def _cap(free: list[list[int]], cpus: int = 64, mem: int = 1000) -> Capacity:
    dev = np.array(free, dtype=np.int64)
    n = len(free)
    return Capacity(
        (dev == MILLI).sum(axis=1),
        np.full(n, cpus, dtype=np.int64),
        np.full(n, mem, dtype=np.int64),
        dev,
    )


def test_the_free_part_of_a_nomination_is_what_is_free_of_it_now() -> None:
    cap = _cap([[MILLI, 0, MILLI, -1], [0, 0, 0, 0]])
    alloc = Allocation((0, 1), ((0, 1, 2), (3,)), 0, 8, 100)
    parts = free_part(alloc, cap)
    # Node 0: devices 0 and 2 are free (1 is taken); node 1: no device, its CPUs and memory.
    assert [(p.nodes, p.devices, p.cpus, p.mem_mb) for p in parts] == [
        ((0,), ((0, 2),), 8, 100),
        ((1,), ((),), 8, 100),
    ]


def test_subtracting_a_hold_never_goes_below_nothing() -> None:
    cap = _cap([[MILLI, 400, MILLI, -1]], cpus=4, mem=50)
    subtract(cap, [Allocation((0,), ((0, 1),), 0, 8, 100)])
    assert cap.dev.tolist() == [[0, 0, MILLI, -1]]  # no device below 0; -1 stays no device
    assert cap.gpus.tolist() == [1]
    assert (cap.cpus.tolist(), cap.mem.tolist()) == ([0], [0])
