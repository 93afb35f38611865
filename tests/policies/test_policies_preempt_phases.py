"""preempt/checkpoint finds running jobs near a checkpoint by bisection over the phases of
their starts: the same jobs as testing each one, at any time, as the running set changes."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field

import pytest

from phalanx.domain.cluster import Cluster
from phalanx.domain.time import MINUTE
from phalanx.policies.preempt_checkpoint import CheckpointPreempt
from phalanx.sched.capacity import Allocation
from phalanx.sched.job import Job
from phalanx.sched.occupancy import Occupancy
from phalanx.testing import make_job, small_cluster


def _state() -> Occupancy:
    # A real one (of which only ``starts`` is read): compiled (tools/native.py), the plugin
    # checks the type of what it is given.
    return Occupancy(small_cluster(nodes=1, gpus=8, per_leaf=1))


@dataclass
class _Ctx:
    """The part of a pass context ``_near_checkpoint`` reads."""

    now: int = 0
    state: Occupancy = field(default_factory=_state)
    cluster: Cluster = field(default_factory=lambda: small_cluster(nodes=1, gpus=8, per_leaf=1))
    jobs: list[Job] = field(default_factory=list)
    order: str = "started"
    """How ``running`` lists the jobs: as they started (the engine), by id, or shuffled."""
    rng: random.Random = field(default_factory=lambda: random.Random(3))

    def running(self) -> list[Job]:
        if self.order == "by id":
            return sorted(self.jobs, key=lambda j: j.id)
        if self.order == "shuffled":
            return self.rng.sample(self.jobs, len(self.jobs))
        return list(self.jobs)


def _running(seq: int, start: int, interval: int | None) -> Job:
    job = Job(seq, seq, make_job(checkpoint_interval=interval), 0, "gpu", 1, 60 * MINUTE)
    job.start = start
    return job


def _near(jobs: list[Job], now: int, max_loss: int) -> set[int]:
    """The test the bisection replaces, job by job."""
    return {
        j.id
        for j in jobs
        if j.start is not None
        and (i := j.spec.checkpoint_interval)
        and (now - j.start) % i <= max_loss
    }


@pytest.mark.parametrize("order", ["started", "by id", "shuffled"])
def test_near_checkpoint_is_the_job_by_job_test(order: str) -> None:
    # Listed as they started, the runs that ended are found by walking the last list beside
    # the new one; listed otherwise (a job started again keeps its place by id), job by job.
    rng = random.Random(7)
    for max_loss in (0, 3 * MINUTE, 29 * MINUTE, 40 * MINUTE):
        plugin = CheckpointPreempt({"max_loss_ms": max_loss})
        ctx = _Ctx(order=order)
        seq = 0
        for _ in range(150):
            # Jobs start (the state counts starts) and leave; time moves on.
            for _ in range(rng.randint(0, 4)):
                seq += 1
                interval = rng.choice([None, 30 * MINUTE, 30 * MINUTE, 7 * MINUTE])
                ctx.jobs.append(_running(seq, ctx.now - rng.randint(0, 600) * MINUTE, interval))
                ctx.state.starts += 1
            for _ in range(rng.randint(0, 2)):
                if ctx.jobs:
                    ctx.jobs.pop(rng.randrange(len(ctx.jobs)))
            if ctx.jobs and rng.random() < 0.3:
                # Requeued and started again (a new run, a new start) between two looks.
                again = ctx.jobs.pop(rng.randrange(len(ctx.jobs)))
                again.run += 1
                again.start = ctx.now - rng.randint(0, 60) * MINUTE
                ctx.jobs.append(again)
                ctx.state.starts += 1
            for _ in range(3):
                # Whole minutes mostly: jobs exactly at the window's edges are tested too.
                ctx.now += rng.randint(0, 40) * MINUTE + rng.choice([0, 0, rng.randint(1, 59_999)])
                found = plugin._near_checkpoint(ctx)  # type: ignore[arg-type]
                assert len(found) == len({j.id for j in found})
                assert {j.id for j in found} == _near(ctx.jobs, ctx.now, max_loss)


def test_cheap_candidates_test_again_a_run_updated_or_a_cluster_reconfigured() -> None:
    # What a run cannot change while it lasts is tested once per run, with the spec, the
    # allocation and the cluster it was tested with: a job updated (a new spec) or a cluster
    # reconfigured (a new one) is tested again.
    plugin = CheckpointPreempt({"opportunistic": True, "lease_ms": 0, "victim_attained_gpu_ms": 0})
    ctx = _Ctx(now=60 * MINUTE)
    victim = _running(1, 0, 30 * MINUTE)  # at a checkpoint: ran 60 minutes
    victim.alloc = Allocation((0,), ((0,),), 0, 1, 1)
    ctx.jobs.append(victim)
    ctx.state.starts += 1
    job = Job(2, 2, make_job(), 0, "gpu", 1, 60 * MINUTE)

    def cheap() -> list[int]:
        ctx.state.version += 1  # a new pass: the memo is emptied
        return [r.id for r in plugin._cheap_candidates(job, ctx)]  # type: ignore[arg-type]

    assert cheap() == [1]
    victim.spec = dataclasses.replace(victim.spec, requeue=False)
    assert cheap() == []
    victim.spec = dataclasses.replace(victim.spec, requeue=True, qos="high")
    assert cheap() == []  # a victim of a higher QOS priority than the job's
    high = dataclasses.replace(ctx.cluster.qos["high"], priority=0)
    ctx.cluster = dataclasses.replace(ctx.cluster, qos={**ctx.cluster.qos, "high": high})
    assert cheap() == [1]
