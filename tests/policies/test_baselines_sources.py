"""Each baseline reproduces one behaviour its source documents (docs/baselines.md).

Every test builds the small scenario its source describes and checks the documented outcome;
its docstring names the source and the passage.
"""

from __future__ import annotations

import dataclasses

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.state import JobState, Reason
from phalanx.domain.time import HOUR, MINUTE, SECOND
from phalanx.engine.decisions import Held, Preempted
from phalanx.policies.catalog import POLICIES
from phalanx.policies.priority_simple import DEFAULT_THRESHOLDS
from phalanx.sched.profile import Profile
from phalanx.sim.executor import CHECKPOINT_RESTORE_MS, CHECKPOINT_SAVE_MS
from phalanx.sim.records import JobRecord
from phalanx.sim.simulator import Simulator
from phalanx.sim.workload import TraceJob
from phalanx.testing import EngineDriver, make_job, small_cluster

# -- fifo: Slurm sched/builtin ----------------------------------------------------------------


def test_fifo_no_lower_priority_job_starts_while_the_first_cannot() -> None:
    """Slurm 22.05 slurm.conf(5), SchedulerType=sched/builtin: "the FIFO scheduler which
    initiates jobs in priority order. If any job in the partition can not be scheduled, no
    lower priority job in that partition will be scheduled." A 1-GPU job behind a blocked
    8-GPU job waits although 2 GPUs are free, and starts only after the blocked one."""
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "fifo")
    [running] = d.submit(make_job(gpus=6, time_limit=HOUR), runtime=HOUR)
    d.settle()
    [head] = d.submit(make_job(gpus=8, time_limit=HOUR), runtime=HOUR)
    [small] = d.submit(make_job(gpus=1, time_limit=10 * MINUTE), runtime=10 * MINUTE)
    d.settle()
    assert d.engine.state.free_gpus == 2
    assert d.state(small) is JobState.PENDING and d.job(small).reason == Reason.PRIORITY
    d.advance(HOUR)
    assert d.state(running) is JobState.COMPLETED
    assert d.state(head) is JobState.RUNNING and d.state(small) is JobState.PENDING
    d.advance(2 * HOUR)
    assert d.job(small).start == 2 * HOUR


# -- slurm: sched/backfill (EASY) ------------------------------------------------------------


def test_slurm_backfill_starts_a_job_that_ends_before_the_reservation_and_not_a_longer_one() -> (
    None
):
    """Slurm 22.05 sched_config / slurm.conf(5), SchedulerType=sched/backfill: "starts lower
    priority jobs if doing so does not delay the expected start time of any higher priority
    job"; the top job gets a reservation at its expected start (bf_max_job_test, EASY with the
    reference configuration's one reservation). Of two 2-GPU jobs behind a blocked 8-GPU job
    that can start in 1 h, the 30-minute one starts at the next backfill pass (bf_interval,
    30 s by default, after the one at 0); the 2-hour one would delay it and waits."""
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), "slurm")
    d.submit(make_job(gpus=6, time_limit=HOUR), runtime=HOUR)
    d.settle()
    [top] = d.submit(make_job(gpus=8, time_limit=HOUR), runtime=HOUR)
    [long] = d.submit(make_job(gpus=2, time_limit=2 * HOUR), runtime=2 * HOUR)
    [short] = d.submit(make_job(gpus=2, time_limit=30 * MINUTE), runtime=30 * MINUTE)
    d.advance(30 * SECOND)
    assert d.job(top).expected_start == HOUR
    assert d.state(short) is JobState.RUNNING and d.job(short).start == 30 * SECOND
    assert d.state(long) is JobState.PENDING
    d.advance(HOUR)
    assert d.state(top) is JobState.RUNNING and d.job(top).start == HOUR
    assert d.state(long) is JobState.PENDING


# -- k8s-default: kube-scheduler v1.32 defaults ----------------------------------------------


def test_k8s_least_allocated_places_a_pod_on_the_emptiest_node() -> None:
    """kube-scheduler v1.32 default profile, NodeResourcesFit with scoringStrategy
    LeastAllocated, which scores highest the nodes with the least allocated. A 1-GPU pod goes
    to the node with the most free GPUs, not the fullest one that fits."""
    d = EngineDriver(small_cluster(nodes=3, gpus=8, per_leaf=3), "k8s-default")
    [a] = d.submit(make_job(gpus=6, time_limit=10 * HOUR))
    [b] = d.submit(make_job(gpus=2, time_limit=10 * HOUR))
    d.settle()
    nodes = {d.job(j).alloc.nodes[0] for j in (a, b)}  # type: ignore[union-attr]
    assert len(nodes) == 2  # spread: b did not join a's node
    [pod] = d.submit(make_job(gpus=1, time_limit=HOUR))
    d.settle()
    alloc = d.job(pod).alloc
    assert alloc is not None and alloc.nodes[0] not in nodes  # the empty node


def test_k8s_places_the_pods_of_two_gangs_independently_and_they_deadlock() -> None:
    """kube-scheduler schedules one pod at a time, with no notion of the job the pod belongs
    to (scheduling framework: each scheduling cycle is for a single pod); distributed training
    on it can deadlock when two jobs each hold part of the cluster (kubeflow/training-operator
    #165, the reason for coscheduling). 3 nodes of 4 GPUs, a 2-GPU pod running: gang A
    (3 pods of 4 GPUs) gets two nodes, gang B (3 pods of 2 GPUs) the GPUs left: neither can
    ever complete, and their placed pods hold every free GPU idle."""
    d = EngineDriver(small_cluster(nodes=3, gpus=4, per_leaf=3), "k8s-default")
    [busy] = d.submit(make_job(gpus=2, time_limit=10 * HOUR))
    d.settle()
    [a] = d.submit(make_job(gpus=4, nodes=3, time_limit=HOUR))
    [b] = d.submit(make_job(gpus=2, nodes=3, time_limit=HOUR))
    d.settle()
    assert d.state(busy) is JobState.RUNNING
    assert len(d.job(a).holds) == 2 and len(d.job(b).holds) == 1
    assert d.state(a) is JobState.PENDING and d.state(b) is JobState.PENDING
    assert d.engine.state.free_gpus == 0 and d.engine.deadlocks == 1


# -- kueue: Kueue v0.10, v1beta1 ClusterQueue -----------------------------------------------


def test_kueue_best_effort_fifo_admits_a_later_workload_that_fits_past_a_blocked_head() -> None:
    """Kueue v0.10 ClusterQueue queueingStrategy BestEffortFIFO (the default): older
    workloads that cannot be admitted do not block newer workloads that fit in the available
    quota (StrictFIFO: they do). With borrowing off, queue ``a`` (nominal 8 GPUs) runs 4; its
    8-GPU head does not fit the quota left and waits for quota, and the 4-GPU workload behind
    it is admitted."""
    profile = dataclasses.replace(POLICIES["kueue"], params={"admit/quota": {"borrowing": False}})
    cluster = small_cluster(nodes=2, gpus=8, per_leaf=2, quotas={"a": 8, "b": 8})
    d = EngineDriver(cluster, profile)
    [first] = d.submit(make_job(gpus=4, account="a"))
    d.settle()
    [head] = d.submit(make_job(gpus=8, account="a"))
    [later] = d.submit(make_job(gpus=4, account="a"))
    d.settle()
    assert d.state(first) is JobState.RUNNING
    assert d.state(head) is JobState.PENDING and d.job(head).reason == Reason.QUOTA
    assert d.state(later) is JobState.RUNNING


def test_kueue_borrows_unused_quota_of_the_cohort() -> None:
    """Kueue v0.10 cohorts: ClusterQueues of one cohort borrow each other's unused quota
    (borrowingLimit unset: no limit). Queue ``a`` (nominal 8) gets 16 GPUs while
    ``b`` uses nothing; once ``b`` submits, it is admitted within its nominal quota as ``a``'s
    borrowed workloads end."""
    cluster = small_cluster(nodes=2, gpus=8, per_leaf=2, quotas={"a": 8, "b": 8})
    d = EngineDriver(cluster, "kueue")
    a_jobs = [d.submit(make_job(gpus=8, account="a"), runtime=HOUR)[0] for _ in range(2)]
    d.settle()
    assert all(d.state(j) is JobState.RUNNING for j in a_jobs)  # 8 nominal + 8 borrowed
    [b] = d.submit(make_job(gpus=8, account="b"), runtime=HOUR)
    d.settle()
    assert d.state(b) is JobState.PENDING  # no preemption to reclaim in this profile
    d.advance(HOUR)
    assert d.state(b) is JobState.RUNNING


# -- volcano: Volcano v1.10 default scheduler configuration --------------------------------


def test_volcano_gang_never_starts_a_partial_job() -> None:
    """Volcano v1.10 gang plugin: a job is dispatched only when minAvailable tasks can be
    allocated together (all or nothing); unlike kube-scheduler no pod of it holds a node
    meanwhile. A 3-node gang on a cluster with 2 free nodes gets nothing; a 1-node job
    behind it starts (allocate skips the gang, no reservation)."""
    d = EngineDriver(small_cluster(nodes=3, gpus=8, per_leaf=3), "volcano")
    [busy] = d.submit(make_job(gpus=8, time_limit=10 * HOUR))
    d.settle()
    [gang] = d.submit(make_job(gpus=8, nodes=3, time_limit=HOUR))
    [single] = d.submit(make_job(gpus=8, time_limit=HOUR))
    d.settle()
    assert d.state(busy) is JobState.RUNNING
    assert d.state(gang) is JobState.PENDING
    assert d.job(gang).holds == [] and d.decisions(Held) == []
    assert d.state(single) is JobState.RUNNING


def test_volcano_drf_serves_the_queue_with_the_lowest_dominant_share_first() -> None:
    """Volcano v1.10 drf plugin (the lowest dominant resource share is scheduled
    first) and proportion plugin (queues ordered by their share of what they
    deserve; equal weights here): the queue with the lowest dominant share is served first.
    Account ``a`` already holds 4 of 8 GPUs; of the pending 4-GPU jobs, ``b``'s is served
    before ``a``'s older one."""
    cluster = small_cluster(nodes=1, gpus=8, per_leaf=1, accounts={"a": 1, "b": 1})
    d = EngineDriver(cluster, "volcano")
    [a1] = d.submit(make_job(gpus=4, account="a"), runtime=HOUR)
    d.settle()
    [a2] = d.submit(make_job(gpus=4, account="a"))
    [b1] = d.submit(make_job(gpus=4, account="b"))
    d.settle()
    assert d.state(a1) is JobState.RUNNING and d.state(b1) is JobState.RUNNING
    assert d.state(a2) is JobState.PENDING


def test_volcano_binpack_fills_the_fullest_node_first() -> None:
    """Volcano v1.10 binpack plugin: nodes score higher the more of them is allocated, so
    pods fill busy nodes first and whole nodes stay free. A 1-GPU job goes
    to the node that has 2 GPUs left, not to an empty one."""
    d = EngineDriver(small_cluster(nodes=3, gpus=8, per_leaf=3), "volcano")
    [a] = d.submit(make_job(gpus=6, time_limit=10 * HOUR))
    d.settle()
    [pod] = d.submit(make_job(gpus=1, time_limit=HOUR))
    d.settle()
    assert d.job(pod).alloc.nodes == d.job(a).alloc.nodes  # type: ignore[union-attr]


# -- tiresias: Gu et al., NSDI'19, and the authors' release ----------------------------------


def test_tiresias_demotes_a_job_once_its_gpu_time_passes_the_threshold() -> None:
    """Tiresias (NSDI'19) §3.2, discretised 2D-LAS: a job is demoted to the next queue when
    its attained service (GPUs x time) passes the queue's threshold; a job of a higher queue
    preempts it. Release default: Q0 up to 3250 GPU-seconds. A 1-GPU job that has run just
    under that is not preempted by a new job; once past it, it is."""
    threshold = DEFAULT_THRESHOLDS[0]
    assert threshold == 3250 * SECOND
    d = EngineDriver(small_cluster(nodes=1, gpus=1, per_leaf=1), "tiresias")
    [old] = d.submit(make_job(gpus=1, time_limit=100 * HOUR))
    d.settle()
    d.advance(threshold - SECOND)
    [new] = d.submit(make_job(gpus=1, time_limit=HOUR))
    d.settle()
    assert d.decisions(Preempted) == [] and d.state(new) is JobState.PENDING
    d.advance(threshold + 5 * MINUTE)  # demoted to Q1; the next recalculation looks again
    [preempt] = d.decisions(Preempted)
    assert preempt.job_id == old
    grace = POLICIES["tiresias"].suspend_grace  # time to save before the kill
    d.advance(preempt.at + grace)
    assert d.state(new) is JobState.RUNNING and d.state(old) is JobState.PENDING


def test_tiresias_promotes_a_starved_job_and_counts_its_service_from_zero() -> None:
    """Tiresias (NSDI'19) §3.2 PromoteKnob, as the release implements it (``dlas_sim_jobs``):
    a job of a lower queue that has waited ``PromoteKnob`` times as long as it ran goes back
    to Q0 with its LAS service counted again from zero, and preempts as a Q0 job."""
    knob = 2.0
    base = POLICIES["tiresias"]
    profile = dataclasses.replace(base, params={"priority/las": {"promote_knob": knob}})
    d = EngineDriver(small_cluster(nodes=1, gpus=8, per_leaf=1), profile)
    [old] = d.submit(make_job(gpus=8, time_limit=100 * HOUR))
    d.settle()
    d.advance(HOUR)  # 8 GPU-hours: Q2
    [new] = d.submit(make_job(gpus=8, time_limit=100 * HOUR))
    d.advance(HOUR + MINUTE)  # preempted at 1 h, killed after its 1-minute grace
    assert d.state(old) is JobState.PENDING and d.state(new) is JobState.RUNNING
    ran = HOUR + MINUTE
    assert d.job(old).factors["queue"] == 2 and d.job(old).attained_gpu_ms == 8 * ran
    d.advance(3 * ran - 5 * MINUTE)  # waited 2 h - 5 min < knob x ran
    assert d.state(old) is JobState.PENDING
    d.advance(3 * ran + 10 * MINUTE)  # waited knob x ran: promoted, preempts ``new``
    assert d.state(old) is JobState.RUNNING and d.state(new) is JobState.PENDING
    assert d.job(old).factors["service_base_gpu_ms"] == 8 * ran


def _suspend_run(profile: Profile) -> dict[int, JobRecord]:
    """One 8-GPU node: a 10-hour job, preempted at 2 h by a 1-hour job of a higher queue."""
    # The job does not declare that it checkpoints on SIGTERM: Tiresias' suspension asks it to.
    spec = JobSpec(gpus_per_task=8, time_limit=20 * HOUR, checkpoint_interval=30 * MINUTE)
    work = [TraceJob(0, spec, 10 * HOUR, "long"), TraceJob(2 * HOUR + MINUTE, spec, HOUR, "new")]
    sim = Simulator(regular_cluster(1, 8, 1), profile, work, cleanup_ms=0)
    sim.run()
    return sim.records


def test_tiresias_suspends_a_preempted_job_which_resumes_where_it_was_preempted() -> None:
    """Tiresias (NSDI'19) §4: a preempted job is suspended, its model checkpointed at the
    preemption, and resumed later from that checkpoint (on any GPUs); the cost is the
    checkpoint save and restore, seconds, not the work since an earlier checkpoint. The long
    job loses nothing; its GPU time over the runtime is the save (evict) and the restore
    (launch)."""
    records = _suspend_run(POLICIES["tiresias"])
    long, new = records[1], records[2]
    assert long.preemptions == 1 and long.state == new.state == "COMPLETED"
    assert long.lost_gpu_ms == 0
    assert long.compute_gpu_ms == 8 * 10 * HOUR  # resumed from the point it was preempted
    assert long.evict_gpu_ms == 8 * CHECKPOINT_SAVE_MS
    assert long.launch_gpu_ms == 8 * (2 * 2 * SECOND + CHECKPOINT_RESTORE_MS)
    assert long.end is not None and long.end < 11 * HOUR + 2 * MINUTE


def test_without_the_suspend_grace_the_victim_loses_the_work_since_its_last_checkpoint() -> None:
    """The contrast (the profile before this model): killed at once, the long job keeps only
    its periodic checkpoints and redoes the rest."""
    records = _suspend_run(dataclasses.replace(POLICIES["tiresias"], suspend_grace=0))
    long = records[1]
    assert long.preemptions == 1 and long.evict_gpu_ms == 0
    assert long.lost_gpu_ms == 8 * (MINUTE - 2 * SECOND)  # 2 h 1 min, checkpoint at 2 h 0 min 2 s
    assert long.compute_gpu_ms == 8 * 10 * HOUR
