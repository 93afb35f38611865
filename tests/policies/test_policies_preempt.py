"""preempt/checkpoint: QOS high preempts whole normal jobs, least work lost first."""

from __future__ import annotations

import dataclasses

import pytest

from phalanx.domain.cluster import PreemptMode
from phalanx.domain.state import JobState
from phalanx.domain.time import HOUR, MINUTE, SECOND
from phalanx.engine.commands import Kill, Signal
from phalanx.engine.decisions import Preempted, Requeued
from phalanx.errors import ConfigError
from phalanx.policies.catalog import profile as named_profile
from phalanx.policies.preempt_checkpoint import CheckpointPreempt
from phalanx.policies.tiresias import LasPreempt
from phalanx.sched.capacity import Allocation
from phalanx.sched.job import Job
from phalanx.sched.profile import Profile
from phalanx.testing import EngineDriver, make_job, small_cluster


def test_high_qos_preempts_the_victim_with_least_work_since_its_checkpoint() -> None:
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), "slurm")
    [ckpt] = d.submit(make_job(gpus=8, time_limit=10 * HOUR, checkpoint_interval=10 * MINUTE))
    [plain] = d.submit(make_job(gpus=8, time_limit=10 * HOUR))
    d.settle()
    assert d.state(ckpt) is JobState.RUNNING and d.state(plain) is JobState.RUNNING
    d.advance(25 * MINUTE)  # ckpt would lose 5 min of work, plain 25 min
    [high] = d.submit(make_job(gpus=8, qos="high"))
    d.settle()
    preempts = d.decisions(Preempted)
    assert [(e.job_id, e.for_job) for e in preempts] == [(ckpt, high)]
    assert d.sent(Kill, ckpt) and not d.sent(Kill, plain)
    assert d.state(high) is JobState.RUNNING
    assert d.state(plain) is JobState.RUNNING
    victim = d.job(ckpt)
    assert victim.state is JobState.PENDING and victim.restarts == 1
    assert d.decisions(Requeued, ckpt)


def test_a_job_of_an_unknown_qos_is_preempted_as_a_normal_one() -> None:
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "slurm")
    [victim] = d.submit(make_job(gpus=8, qos="nosuchqos", time_limit=10 * HOUR))
    d.settle()
    [high] = d.submit(make_job(gpus=8, qos="high"))
    d.settle()
    assert [(e.job_id, e.for_job) for e in d.decisions(Preempted)] == [(victim, high)]
    assert d.state(high) is JobState.RUNNING and d.job(victim).spec.qos == "nosuchqos"


def test_a_gang_is_preempted_whole_and_victims_not_needed_are_dropped() -> None:
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), "slurm")
    [gang] = d.submit(make_job(gpus=4, nodes=2, time_limit=10 * HOUR))
    d.settle()
    [single] = d.submit(make_job(gpus=4, time_limit=10 * HOUR))
    d.settle()
    alloc = d.job(single).alloc
    assert alloc is not None and alloc.nodes == (0,)  # best fit: node 0 is now full
    d.advance(MINUTE)
    # 8 GPUs on one node: the single job loses least, so it is tried first, but only the
    # gang's removal frees a whole node (node 1); the single job is then not needed.
    [high] = d.submit(make_job(gpus=8, qos="high"))
    d.settle()
    assert [e.job_id for e in d.decisions(Preempted)] == [gang]
    assert d.state(high) is JobState.RUNNING and d.state(single) is JobState.RUNNING
    assert d.state(gang) is JobState.PENDING and d.job(gang).restarts == 1
    d2 = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), "slurm")
    [gang2] = d2.submit(make_job(gpus=8, nodes=2, time_limit=10 * HOUR))
    d2.settle()
    [high2] = d2.submit(make_job(gpus=2, qos="high"))
    d2.settle()
    assert [e.job_id for e in d2.decisions(Preempted)] == [gang2]
    assert d2.job(gang2).state is JobState.PENDING and d2.job(gang2).alloc is None
    alloc = d2.job(high2).alloc
    assert alloc is not None and d2.engine.state.free_gpus == 16 - 2


def test_preemption_with_grace_time_signals_then_kills() -> None:
    cluster = small_cluster(
        nodes=1, gpus=8, per_leaf=1, preempt_mode=PreemptMode.REQUEUE, grace_time=30 * SECOND
    )
    d = EngineDriver(cluster, "slurm")
    [victim] = d.submit(make_job(gpus=8, time_limit=10 * HOUR))
    d.settle()
    [high] = d.submit(make_job(gpus=8, qos="high"))
    d.settle()
    assert d.sent(Signal, victim) and not d.sent(Kill, victim)
    assert d.state(victim) is JobState.RUNNING and d.state(high) is JobState.PENDING
    d.advance(30 * SECOND)
    assert d.sent(Kill, victim)
    assert d.state(victim) is JobState.PENDING and d.state(high) is JobState.RUNNING


def test_no_requeue_means_preempted() -> None:
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "slurm")
    [victim] = d.submit(make_job(gpus=8, time_limit=10 * HOUR, requeue=False))
    d.settle()
    d.submit(make_job(gpus=8, qos="high"))
    d.settle()
    assert d.state(victim) is JobState.PREEMPTED


def test_normal_does_not_preempt_and_fifo_has_no_preemption() -> None:
    for profile in ("slurm", "fifo"):
        d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), profile)
        [first] = d.submit(make_job(gpus=8, time_limit=10 * HOUR))
        d.settle()
        later = d.submit(make_job(gpus=8, qos="normal" if profile == "slurm" else "high"))
        d.settle()
        assert d.decisions(Preempted) == []
        assert d.state(first) is JobState.RUNNING and d.state(later[0]) is JobState.PENDING


def test_preemptor_gets_the_resources_it_freed() -> None:
    # phalanx favours small short jobs: the normal 4-GPU job ranks above the high-QOS job.
    # When the high job's victims leave, the freed GPUs must go to it, not to a job that
    # it would then preempt again (a livelock: start, preempt, requeue, start, ...).
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "phalanx", cleanup_ms=SECOND)
    d.submit(make_job(gpus=6, time_limit=24 * HOUR))
    d.settle()
    [high] = d.submit(make_job(gpus=8, qos="high", time_limit=100 * HOUR))
    [small] = d.submit(make_job(gpus=4, time_limit=MINUTE))
    d.settle()
    d.advance(MINUTE, max_events=10_000)
    assert d.state(high) is JobState.RUNNING
    assert len(d.decisions(Preempted)) <= 2
    assert d.job(small).restarts <= 1


def test_high_qos_job_preempts_even_when_the_cluster_is_full_and_a_job_ranks_above() -> None:
    # The cluster is full; a normal job ranks above the high-QOS job (favour small/short).
    # The high job must still look for victims rather than be skipped by the pass.
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "phalanx")
    [victim] = d.submit(make_job(gpus=8, time_limit=24 * HOUR))
    d.settle()
    [high] = d.submit(make_job(gpus=8, qos="high", time_limit=100 * HOUR))
    [small] = d.submit(make_job(gpus=2, time_limit=MINUTE))
    d.settle()
    assert d.job(small).priority > d.job(high).priority
    assert [e.job_id for e in d.decisions(Preempted)] == [victim]


def _phalanx_with(**preempt: object) -> Profile:
    base = named_profile("phalanx")
    key = "preempt/clusterqueue"  # preempt/checkpoint with queues
    params = {**base.params, key: {**base.params[key], **preempt}}
    return dataclasses.replace(base, params=params)


def _displace(prof: Profile, newcomer_gpus: int) -> tuple[EngineDriver, int, int]:
    """An 8-GPU run fills the only node for 2 hours, checkpointing every 30 minutes; right after
    a checkpoint a newcomer of ``newcomer_gpus`` GPUs arrives."""
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), prof)
    [long] = d.submit(make_job(gpus=8, time_limit=20 * HOUR, checkpoint_interval=30 * MINUTE))
    d.settle()
    d.advance(2 * HOUR + MINUTE)
    [new] = d.submit(make_job(gpus=newcomer_gpus, time_limit=HOUR))
    d.settle()
    return d, long, new


def test_a_new_job_displaces_a_long_run_right_after_its_checkpoint() -> None:
    d, long, new = _displace(named_profile("phalanx"), 8)
    assert [e.job_id for e in d.decisions(Preempted)] == [long]
    assert d.state(new) is JobState.RUNNING
    d, long, new = _displace(named_profile("phalanx"), 1)  # phalanx: victims no bigger
    assert not d.decisions(Preempted)


def test_a_victim_much_bigger_than_the_newcomer_is_not_displaced() -> None:
    # 8 GPUs freed for 1 used would leave 7 idle while the victim waits for a whole node.
    d, long, new = _displace(_phalanx_with(max_victim_gpu_ratio=2), 1)
    assert not d.decisions(Preempted)
    assert d.state(long) is JobState.RUNNING and d.state(new) is JobState.PENDING
    d, long, new = _displace(_phalanx_with(max_victim_gpu_ratio=2), 4)
    assert [e.job_id for e in d.decisions(Preempted)] == [long]


def test_a_victim_over_max_victim_gpus_is_not_displaced() -> None:
    # A whole-node victim would wait again for a whole node; a bound of 4 GPUs spares it.
    d, long, new = _displace(_phalanx_with(max_victim_gpus=4), 8)
    assert not d.decisions(Preempted)
    assert d.state(long) is JobState.RUNNING and d.state(new) is JobState.PENDING
    d, long, new = _displace(_phalanx_with(max_victim_gpus=8), 8)
    assert [e.job_id for e in d.decisions(Preempted)] == [long]


def _displace_on(prof: Profile, gpus: int) -> tuple[EngineDriver, int, int]:
    """``_displace`` on a node of ``gpus`` GPUs that a run of ``gpus`` GPUs fills for 5 hours
    (at least the 10 GPU-hours of service a cheap victim has had); the newcomer asks for as
    many GPUs."""
    d = EngineDriver(small_cluster(nodes=1, gpus=gpus, per_leaf=1), prof)
    [long] = d.submit(make_job(gpus=gpus, time_limit=20 * HOUR, checkpoint_interval=30 * MINUTE))
    d.settle()
    d.advance(5 * HOUR + MINUTE)
    [new] = d.submit(make_job(gpus=gpus, time_limit=HOUR))
    d.settle()
    return d, long, new


def test_a_victim_of_spared_victim_gpus_is_not_displaced() -> None:
    # The phalanx default spares runs of 2 to 4 GPUs: requeued, such a run waits again for
    # that many GPUs on one node, which one-GPU jobs keep taking first.
    d, long, new = _displace_on(named_profile("phalanx"), 4)
    assert not d.decisions(Preempted)
    assert d.state(long) is JobState.RUNNING and d.state(new) is JobState.PENDING
    d, long, new = _displace_on(_phalanx_with(spared_victim_gpus=[2, 3]), 4)
    assert [e.job_id for e in d.decisions(Preempted)] == [long]
    d, long, new = _displace_on(_phalanx_with(spared_victim_gpus=None), 2)
    assert [e.job_id for e in d.decisions(Preempted)] == [long]
    # Whole-node victims are still taken (as in the test above).
    d, long, new = _displace(named_profile("phalanx"), 8)
    assert [e.job_id for e in d.decisions(Preempted)] == [long]


def test_a_malformed_spared_victim_gpus_is_a_configuration_error() -> None:
    for bad in ([4, 2], [2], "2-4", [True, 4], [-1, 4]):
        with pytest.raises(ConfigError, match="spared_victim_gpus"):
            CheckpointPreempt({"spared_victim_gpus": bad})


def test_only_a_short_job_displaces_a_run_with_job_max_limit() -> None:
    # The newcomers ask for an hour; a bound of 30 minutes stops them, one of 2 hours does not.
    d, long, new = _displace(_phalanx_with(job_max_limit_ms=30 * MINUTE), 8)
    assert not d.decisions(Preempted) and d.state(new) is JobState.PENDING
    d, long, new = _displace(_phalanx_with(job_max_limit_ms=2 * HOUR), 8)
    assert [e.job_id for e in d.decisions(Preempted)] == [long]


def test_las_running_order_over_columns_is_the_order_job_by_job() -> None:
    now = 10 * HOUR
    running = []
    for i in range(1, 41):
        spec = make_job(gpus=1 + i % 4)
        job = Job(i, (i * 7919) % 101, spec, 0, "gpu", 1, HOUR)
        job.attained_gpu_ms = (i % 5) * 1500 * SECOND
        if i % 3:
            devices = (tuple(range(1 + i % 4)),)
            job.alloc = Allocation((i % 4,), devices, 250 if i % 7 == 0 else 0, 1, 1)
            job.start = now - (i % 9) * 10 * MINUTE
        if i % 4 == 0:
            job.factors = {"service_base_gpu_ms": float((i % 3) * 600 * SECOND)}
        running.append(job)
    las = LasPreempt({})
    columns = las._by_queue(running, now)
    one_by_one = las._by_queue_unordered(running, now)
    assert columns == one_by_one
    assert {q for q, _, _ in columns} == {0, 1, 2}  # every queue is represented


def test_only_a_job_that_waited_job_min_wait_displaces_a_run() -> None:
    # The newcomer arrives a minute after the run's checkpoint: with 10 minutes' patience it
    # does not displace it then, but does in a pass right after the next checkpoint (2.5 h;
    # a submission makes that pass).
    d, long, new = _displace(_phalanx_with(job_min_wait_ms=10 * MINUTE), 8)
    assert not d.decisions(Preempted) and d.state(new) is JobState.PENDING
    d.advance(2 * HOUR + 31 * MINUTE)
    assert not d.decisions(Preempted)
    d.submit(make_job(gpus=8, time_limit=20 * HOUR))
    d.settle()
    assert [e.job_id for e in d.decisions(Preempted)] == [long]
    assert d.state(new) is JobState.RUNNING


def _gang_needs_a_leaf(prof: Profile, free_elsewhere: bool) -> tuple[EngineDriver, int, int]:
    """Leaf A (nodes 0, 1) and leaf B (nodes 2, 3), each node run by an 8-GPU job; a long one
    on node 0 checkpoints every 30 minutes. Right after its checkpoint the run on node 1 ends
    (and, ``free_elsewhere``, the one on node 3), and a 16-GPU gang arrives that wants one
    leaf (``phalanx`` lets a gang wait 30 minutes for the fewest leaves)."""
    d = EngineDriver(small_cluster(nodes=4, gpus=8, per_leaf=2), prof)
    [long] = d.submit(make_job(gpus=8, time_limit=20 * HOUR, checkpoint_interval=30 * MINUTE))
    d.settle()
    on: dict[int, int] = {}
    for _ in range(3):
        [other] = d.submit(make_job(gpus=8, time_limit=20 * HOUR))
        d.settle()
        alloc = d.job(other).alloc
        assert alloc is not None
        on[alloc.nodes[0]] = other
    alloc = d.job(long).alloc
    assert alloc is not None and alloc.nodes == (0,) and sorted(on) == [1, 2, 3]
    d.advance(2 * HOUR + MINUTE)
    d.finish(on[1])
    if free_elsewhere:
        d.finish(on[3])
    d.settle()
    [gang] = d.submit(make_job(gpus=8, nodes=2, time_limit=HOUR))
    d.settle()
    return d, long, gang


def test_a_whole_node_victim_is_taken_only_where_it_restarts_at_once() -> None:
    covered = _phalanx_with(covered_victim_gpus=1)
    # A node of leaf B is free: the long run moves there and the gang takes leaf A.
    d, long, gang = _gang_needs_a_leaf(covered, True)
    assert [e.job_id for e in d.decisions(Preempted)] == [long]
    d.settle()
    assert d.state(gang) is JobState.RUNNING
    alloc = d.job(gang).alloc
    assert alloc is not None and alloc.nodes == (0, 1)
    d.advance(d.now + MINUTE)
    assert d.state(long) is JobState.RUNNING and d.job(long).restarts == 1
    # No free node: the long run would wait for one, so it is spared (and without the bound
    # it is not).
    d, long, gang = _gang_needs_a_leaf(covered, False)
    assert not d.decisions(Preempted) and d.state(gang) is JobState.PENDING
    d, long, gang = _gang_needs_a_leaf(named_profile("phalanx"), False)
    assert [e.job_id for e in d.decisions(Preempted)] == [long]
