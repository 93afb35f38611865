"""Baselines: k8s-default pod-by-pod gang wait and deadlock, Kueue quota, Tiresias, Volcano."""

from __future__ import annotations

import dataclasses

from phalanx.domain.state import JobState, Reason
from phalanx.domain.time import HOUR, MINUTE, SECOND
from phalanx.engine.commands import Signal
from phalanx.engine.decisions import Deadlocked, Preempted, Unheld
from phalanx.policies.catalog import POLICIES
from phalanx.testing import EngineDriver, make_job, small_cluster


def k8s_deadlock() -> tuple[EngineDriver, int, int, int]:
    """3 nodes x 4 GPUs. A 2-GPU pod runs on node 0; gang A wants 3 pods of 4 GPUs, gang B
    3 pods of 2 GPUs. A takes nodes 1 and 2, B the last 2 GPUs of node 0: neither can ever
    complete, even if the running pod ended."""
    d = EngineDriver(small_cluster(nodes=3, gpus=4, per_leaf=3), "k8s-default")
    [small] = d.submit(make_job(gpus=2, time_limit=10 * HOUR))
    d.settle()
    [a] = d.submit(make_job(gpus=4, nodes=3, time_limit=HOUR))
    [b] = d.submit(make_job(gpus=2, nodes=3, time_limit=HOUR))
    d.settle()
    return d, small, a, b


def test_k8s_holds_partial_pods_and_counts_the_deadlock_once() -> None:
    d, small, a, b = k8s_deadlock()
    assert d.state(small) is JobState.RUNNING
    assert d.state(a) is JobState.PENDING and d.state(b) is JobState.PENDING
    assert len(d.job(a).holds) == 2 and len(d.job(b).holds) == 1
    assert d.job(a).reason == Reason.GANG_WAIT and d.job(b).reason == Reason.GANG_WAIT
    assert d.engine.state.free_gpus == 0
    assert d.engine.deadlocks == 1
    [entry] = d.decisions(Deadlocked)
    assert entry.jobs == (a, b)
    d.advance(5 * MINUTE)  # more passes while stuck do not count the same deadlock again
    d.run_pass()
    assert d.engine.deadlocks == 1


def test_k8s_releases_holds_after_the_timeout() -> None:
    d, _, a, b = k8s_deadlock()
    d.advance(10 * MINUTE)
    unheld = {e.job_id for e in d.decisions(Unheld)}
    assert unheld == {a, b}
    assert all(e.at == 10 * MINUTE for e in d.decisions(Unheld))


def test_k8s_a_gang_that_timed_out_queues_behind_the_others() -> None:
    # Found by the backfill property (random seed): 2 nodes x 16 GPUs, three 2-pod gangs.
    # When the 1-minute job ends, gang 14 holds node 1, gangs 10 and 6 node 0: none can
    # complete. At 10 minutes gangs 14 and 6 time out. Had they kept their places, gang 14
    # would take node 1 back at once, and the three would time out in turn for ever.
    d = EngineDriver(small_cluster(nodes=2, gpus=16, per_leaf=2), "k8s-default")
    [small, g14, g10, g6] = [
        d.submit(make_job(gpus=gpus, nodes=nodes, time_limit=MINUTE), runtime=MINUTE)[0]
        for nodes, gpus in [(1, 7), (2, 14), (2, 10), (2, 6)]
    ]
    d.run(until=2 * MINUTE)
    assert d.state(small) is JobState.COMPLETED
    assert [len(d.job(j).holds) for j in (g14, g10, g6)] == [1, 1, 1]
    assert d.engine.state.free_gpus == 2  # on node 1, beside gang 14's pod
    d.run(until=10 * MINUTE)
    # Behind gang 10 now, in the order they were before: gang 10 takes node 1 and runs.
    assert d.job(g10).queue_seq < d.job(g14).queue_seq < d.job(g6).queue_seq
    assert d.job(g14).seq < d.job(g10).seq  # the submit order is kept
    assert d.job(g10).start == 10 * MINUTE and d.job(g6).start == 10 * MINUTE
    d.run(max_events=1_000)  # gang 14 runs once they end
    assert d.state(g14) is JobState.COMPLETED and d.job(g14).end == 12 * MINUTE


def test_k8s_gang_runs_once_its_last_pod_is_placed() -> None:
    d = EngineDriver(small_cluster(nodes=2, gpus=4, per_leaf=2), "k8s-default")
    [first] = d.submit(make_job(gpus=4, time_limit=HOUR), runtime=HOUR)
    d.settle()
    [gang] = d.submit(make_job(gpus=4, nodes=2, time_limit=HOUR))
    d.settle()
    assert len(d.job(gang).holds) == 1 and d.state(gang) is JobState.PENDING
    d.advance(HOUR)
    assert d.state(first) is JobState.COMPLETED
    assert d.state(gang) is JobState.RUNNING and d.job(gang).holds == []
    alloc = d.job(gang).alloc
    assert alloc is not None and sorted(alloc.nodes) == [0, 1]


def test_kueue_admits_within_quota_and_borrows_what_the_cohort_leaves() -> None:
    cluster = small_cluster(nodes=2, gpus=8, per_leaf=2, quotas={"a": 8, "b": 8})
    d = EngineDriver(cluster, "kueue")
    [a1] = d.submit(make_job(gpus=8, account="a"))
    [a2] = d.submit(make_job(gpus=4, account="a"))
    [a3] = d.submit(make_job(gpus=8, account="a"))
    [b1] = d.submit(make_job(gpus=4, account="b"))
    d.settle()
    assert d.state(a1) is JobState.RUNNING and d.state(a2) is JobState.RUNNING  # borrowed
    assert d.state(a3) is JobState.PENDING
    assert d.job(a3).reason == Reason.QUOTA and d.job(a3).reason_plugin == "admit/quota"
    assert d.state(b1) is JobState.RUNNING  # within its own quota


def test_kueue_without_borrowing_holds_an_account_at_its_quota() -> None:
    profile = dataclasses.replace(POLICIES["kueue"], params={"admit/quota": {"borrowing": False}})
    cluster = small_cluster(nodes=2, gpus=8, per_leaf=2, quotas={"a": 8, "b": 8})
    d = EngineDriver(cluster, profile)
    [a1] = d.submit(make_job(gpus=8, account="a"))
    [a2] = d.submit(make_job(gpus=4, account="a"))
    [b1] = d.submit(make_job(gpus=8, account="b"))
    d.settle()
    assert d.state(a1) is JobState.RUNNING and d.state(b1) is JobState.RUNNING
    assert d.state(a2) is JobState.PENDING and d.job(a2).reason == Reason.QUOTA


def test_kueue_quota_from_shares_when_none_is_set() -> None:
    profile = dataclasses.replace(POLICIES["kueue"], params={"admit/quota": {"borrowing": False}})
    cluster = small_cluster(nodes=2, gpus=8, per_leaf=2, accounts={"a": 1, "b": 3})
    d = EngineDriver(cluster, profile)
    [a1] = d.submit(make_job(gpus=4, account="a"))
    [a2] = d.submit(make_job(gpus=1, account="a"))
    d.settle()
    # Nominal quota of "a": 16 GPUs x 1 share out of the shares of the accounts seen (a).
    assert d.state(a1) is JobState.RUNNING and d.state(a2) is JobState.RUNNING


def test_tiresias_preempts_a_job_of_a_lower_priority_queue() -> None:
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "tiresias")
    [old] = d.submit(make_job(gpus=8, time_limit=100 * HOUR))
    d.settle()
    d.advance(2 * HOUR)  # 16 GPU-hours attained: queue 2
    [new] = d.submit(make_job(gpus=8, time_limit=HOUR))
    d.settle()
    assert [e.job_id for e in d.decisions(Preempted)] == [old]
    assert [s.job_id for s in d.sent(Signal)] == [old]  # suspended: asked to checkpoint now
    d.advance(2 * HOUR + MINUTE)  # the kill after the suspend grace
    assert d.state(new) is JobState.RUNNING
    assert d.state(old) is JobState.PENDING and d.job(old).restarts == 1
    assert d.job(old).attained_gpu_ms == 8 * (2 * HOUR + MINUTE)


def test_tiresias_does_not_preempt_within_the_same_queue() -> None:
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "tiresias")
    [old] = d.submit(make_job(gpus=8, time_limit=100 * HOUR))
    d.settle()
    d.advance(5 * MINUTE)  # 40 GPU-minutes: still queue 0
    [new] = d.submit(make_job(gpus=8))
    d.settle()
    assert d.decisions(Preempted) == []
    assert d.state(old) is JobState.RUNNING and d.state(new) is JobState.PENDING


def test_volcano_serves_the_account_with_the_lowest_share_first() -> None:
    cluster = small_cluster(nodes=1, gpus=8, per_leaf=1, accounts={"a": 1, "b": 1})
    d = EngineDriver(cluster, "volcano")
    [a1] = d.submit(make_job(gpus=4, account="a"), runtime=HOUR)
    d.settle()
    [a2] = d.submit(make_job(gpus=4, account="a"))
    [b1] = d.submit(make_job(gpus=4, account="b"))
    [a3] = d.submit(make_job(gpus=4, account="a"))
    d.settle()
    assert d.state(a1) is JobState.RUNNING and d.state(b1) is JobState.RUNNING
    assert d.state(a2) is JobState.PENDING and d.state(a3) is JobState.PENDING


def test_tiresias_waits_for_a_victim_still_saving_rather_than_preempting_another() -> None:
    d = EngineDriver(small_cluster(nodes=2, gpus=8, per_leaf=2), "tiresias")
    [a] = d.submit(make_job(gpus=8, time_limit=100 * HOUR))
    [b] = d.submit(make_job(gpus=8, time_limit=100 * HOUR))
    d.settle()
    d.advance(2 * HOUR)  # both in the last queue
    [new] = d.submit(make_job(gpus=8, time_limit=HOUR))
    d.settle()
    [first] = d.decisions(Preempted)
    d.advance(2 * HOUR + 10 * SECOND)
    d.run_pass()  # another pass within the victim's grace
    assert d.decisions(Preempted) == [first]
    d.advance(2 * HOUR + MINUTE)
    assert d.state(new) is JobState.RUNNING
    assert sorted(d.state(j) is JobState.RUNNING for j in (a, b)) == [False, True]


def test_tiresias_preempts_by_the_queues_of_the_priority_plugin() -> None:
    # Thresholds set on priority/las alone also decide whom sched/tiresias may preempt.
    base = POLICIES["tiresias"]
    params = {"priority/las": {"thresholds_gpu_ms": [100 * HOUR]}}
    d = EngineDriver(
        small_cluster(nodes=1, gpus=8, per_leaf=1), dataclasses.replace(base, params=params)
    )
    [old] = d.submit(make_job(gpus=8, time_limit=100 * HOUR))
    d.settle()
    d.advance(2 * HOUR)  # 16 GPU-hours: still the first of two queues
    [new] = d.submit(make_job(gpus=8, time_limit=HOUR))
    d.advance(3 * HOUR)
    assert d.decisions(Preempted) == [] and d.state(new) is JobState.PENDING
    assert d.state(old) is JobState.RUNNING
