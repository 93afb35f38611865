"""The admission's short ways answer as the general ones do (issue 11's admission speed):

- a quota node with no lending or borrowing limit (``QuotaNode.plain``) gives the same
  ``available`` and usage as the general formulas, after any adds and removes;
- a ClusterQueue of one resource group with one flavor gets the same assignment (or refusal)
  from ``assign`` as the general walk over groups and flavors gives;
- ``select/spread`` and ``select/binpack`` pick the same node for a one-node job by one scan
  as the sort picks for more nodes;
- the pending queue, which drops removed jobs only at its next use, holds the jobs a queue
  that drops them at once holds, in the same order.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.queues import (
    ClusterQueue,
    FlavorFungibility,
    FlavorQuotas,
    FungibilityPolicy,
    Queues,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
)
from phalanx.domain.queues.quota import QuotaTree
from phalanx.engine.queue import PendingQueue
from phalanx.policies.clusterqueue import assign as assign_module
from phalanx.policies.clusterqueue.assign import Assignment, Refusal, assign
from phalanx.policies.select_simple import BinpackSelect, SpreadSelect
from phalanx.sched.capacity import Capacity
from phalanx.sched.job import Job
from phalanx.sched.occupancy import Occupancy
from phalanx.sched.shape import Shape
from phalanx.testing import small_cluster

GPU = "nvidia.com/gpu"
RESOURCES = (GPU, "cpu", "pods")


@st.composite
def quota(draw: st.DrawFn, name: str) -> ResourceQuota:
    nominal = draw(st.integers(0, 8)) * 1000
    # Mostly no limit (the short way), sometimes one (the general way, in the same tree).
    borrowing = draw(st.none() | st.none() | st.integers(0, 8).map(lambda n: n * 1000))
    lending = draw(st.none() | st.none() | st.integers(0, nominal // 1000).map(lambda n: n * 1000))
    return ResourceQuota(name, nominal, borrowing, lending)


@st.composite
def one_flavor_queues(draw: st.DrawFn) -> list[ClusterQueue]:
    """2-4 ClusterQueues of one group with one flavor covering GPUs and CPUs (some pods
    too), most in cohort ``c``."""
    out = []
    for i in range(draw(st.integers(2, 4))):
        covered = (GPU, "cpu", "pods") if draw(st.booleans()) else (GPU, "cpu")
        quotas = tuple(draw(quota(r)) for r in covered)
        fungibility = FlavorFungibility(
            when_can_borrow=draw(st.sampled_from(list(FungibilityPolicy)))
        )
        out.append(
            ClusterQueue(
                f"q{i}",
                (ResourceGroup(covered, (FlavorQuotas("f", quotas),)),),
                cohort="c" if draw(st.booleans()) or i < 2 else None,
                flavor_fungibility=fungibility,
            )
        )
    return out


def _queues(cqs: list[ClusterQueue]) -> Queues:
    return Queues(flavors={"f": ResourceFlavor("f")}, cluster_queues={c.name: c for c in cqs})


@settings(max_examples=150, deadline=None)
@given(cqs=one_flavor_queues(), data=st.data())
def test_a_plain_quota_node_answers_as_the_general_formulas(
    cqs: list[ClusterQueue], data: st.DataObject
) -> None:
    short, general = QuotaTree(_queues(cqs)), QuotaTree(_queues(cqs))
    for node in (*general.queues.values(), *general.cohorts.values()):
        node.plain = False
    nodes = [(n, short.queues[n], general.queues[n]) for n in sorted(short.queues)]
    for _ in range(data.draw(st.integers(1, 30))):
        _, a, b = data.draw(st.sampled_from(nodes))
        fr = ("f", data.draw(st.sampled_from(RESOURCES)))
        amount = data.draw(st.integers(0, 12)) * 1000
        # Any sequence, removes past what was added included: the two must agree everywhere.
        if data.draw(st.booleans()):
            a.add(fr, amount)
            b.add(fr, amount)
        else:
            a.remove(fr, amount)
            b.remove(fr, amount)
        for name in short.queues:
            for resource in RESOURCES:
                f = ("f", resource)
                assert short.queues[name].available(f) == general.queues[name].available(f)
                assert short.queues[name].usage.get(f) == general.queues[name].usage.get(f)
        for name in short.cohorts:
            assert short.cohorts[name].usage == general.cohorts[name].usage


def _answer(result: Assignment | Refusal) -> tuple[Any, ...]:
    if isinstance(result, Refusal):
        return ("refused", result.reason, result.message)
    nodes = None if result.nodes is None else result.nodes.tolist()
    return (
        "assigned",
        dict(result.flavors),
        list(result.charge.items()),
        nodes,
        result.borrowing,
    )


@settings(max_examples=150, deadline=None)
@given(cqs=one_flavor_queues(), data=st.data())
def test_one_flavor_assignment_answers_as_the_general_walk(
    cqs: list[ClusterQueue], data: st.DataObject
) -> None:
    tree = QuotaTree(_queues(cqs))
    for name, node in tree.queues.items():
        for resource in RESOURCES:
            node.add(("f", resource), data.draw(st.integers(0, 10), label=name) * 1000)
    cq = data.draw(st.sampled_from(cqs))
    asked = data.draw(
        st.dictionaries(st.sampled_from((*RESOURCES, "memory")), st.integers(1, 10)), label="ask"
    )
    request = {r: n * 1000 for r, n in asked.items()}
    n = 6
    masks = {"f": np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))}
    allowed = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    flavors = _queues(cqs).flavors
    node = tree.queues[cq.name]
    short = assign(cq, node, request, flavors, masks, allowed, lambda m: True, {})
    with pytest.MonkeyPatch.context() as m:
        m.setattr(assign_module, "_one_flavor", lambda *args: None)
        general = assign(cq, node, request, flavors, masks, allowed, lambda m: True, {})
    assert _answer(short) == _answer(general)


@settings(max_examples=200, deadline=None)
@given(
    free=st.lists(st.integers(0, 8), min_size=1, max_size=12),
    data=st.data(),
)
def test_one_node_pick_is_the_sorts_first(free: list[int], data: st.DataObject) -> None:
    n = len(free)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    # Real values, not stand-ins: compiled (tools/native.py), the plugins check the types of
    # their arguments. Only the free GPUs and the shape's share are read.
    zeros = np.zeros(n, dtype=np.int64)
    cap = Capacity(np.array(free, dtype=np.int64), zeros, zeros, np.zeros((n, 8), np.int64))
    shape = Shape.of(JobSpec(), "gpu")
    state = Occupancy(small_cluster(nodes=n, gpus=8, per_leaf=1))
    idx = np.flatnonzero(mask)
    for select, sign in ((SpreadSelect({}), -1), (BinpackSelect({}), 1)):
        got = select.place(state, cap, shape, mask, 1, None)
        if not len(idx):
            assert got is None
            continue
        order = np.lexsort((idx, sign * cap.gpus[idx]))
        assert got == [int(idx[order[0]])]


def _job(seq: int, priority: float) -> Job:
    job = Job(seq, seq, JobSpec(), 0, "gpu", 1, 60_000)
    job.priority = priority
    return job


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from("irbl"), st.integers(0, 7)), max_size=40))
def test_deferred_removal_keeps_the_queue_a_removal_at_once_keeps(
    steps: list[tuple[str, int]],
) -> None:
    """Insert, remove, send to the back, or look (len, list, a pickled copy) in any order:
    the queue holds what a plain sorted list with removals at once holds."""
    q = PendingQueue()
    jobs = [_job(i + 1, float(i % 3)) for i in range(8)]
    for job in jobs:
        # Numbered by the queue, as the engine numbers submissions: a sequence taken by a
        # later to_back never equals a job's own (equal keys would make the order arbitrary).
        job.queue_seq = q.next_seq()
    ref: list[Job] = []

    def key(job: Job) -> tuple[int, float, int]:
        return (-job.tier, -job.priority, job.queue_seq)

    for op, i in steps:
        job = jobs[i]
        if op == "i" and job not in ref:
            q.insert(job)
            ref.append(job)
        elif op == "r":
            assert q.remove(job) == (job in ref)
            if job in ref:
                ref.remove(job)
        elif op == "b":
            q.to_back(job)
        else:
            assert len(q) == len(ref)
            copy = pickle.loads(pickle.dumps(q))
            assert [j.id for j in copy.jobs()] == [j.id for j in sorted(ref, key=key)]
        ref.sort(key=key)
        assert len(q) == len(ref)
    assert q.jobs() == ref
    assert list(q) == ref
