"""``preempt/clusterqueue``: Kueue's preemption policies, scenarios transcribed from Kueue's
documentation (concepts/cluster_queue.md "Preemption", concepts/preemption.md "Classic
Preemption") with the documented outcome; and, in the ``phalanx`` profile, victims that free
a placement the preemptor can use."""

from __future__ import annotations

import dataclasses

import pytest

from phalanx.config.queues import queues_from_yaml
from phalanx.domain.cluster import Cluster, PreemptMode
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.queues import PRIORITY_CLASS_LABEL
from phalanx.domain.state import JobState
from phalanx.domain.time import HOUR, MINUTE, SECOND
from phalanx.engine.decisions import Preempted
from phalanx.errors import ConfigError
from phalanx.policies.catalog import profile as named_profile
from phalanx.policies.clusterqueue import ClusterQueuePreempt
from phalanx.sched.profile import Profile
from phalanx.testing import EngineDriver, make_job, small_cluster

KUEUE = "apiVersion: kueue.x-k8s.io/v1beta1\n"
FLAVOR = KUEUE + "kind: ResourceFlavor\nmetadata: {name: default-flavor}\n"
GRACE = 30 * SECOND


def cpu_queue(name: str, nominal: int, *, cohort: str | None) -> str:
    """A ClusterQueue of Kueue's examples: CPUs of ``default-flavor``, all namespaces."""
    return (
        KUEUE
        + f"kind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n  namespaceSelector: {{}}\n"
        + (f"  cohort: {cohort}\n" if cohort else "")
        + "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
        + "    - name: default-flavor\n      resources:\n"
        + f"      - {{name: cpu, nominalQuota: {nominal}}}\n"
    )


def gpu_queue(name: str, nominal: int, *, cohort: str, spec: str = "") -> str:
    return (
        KUEUE
        + f"kind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n  namespaceSelector: {{}}\n"
        + f"  cohort: {cohort}\n"
        + spec
        + "\n  resourceGroups:\n  - coveredResources: [nvidia.com/gpu, cpu]\n    flavors:\n"
        + "    - name: default-flavor\n      resources:\n"
        + f"      - {{name: nvidia.com/gpu, nominalQuota: {nominal}}}\n"
        + "      - {name: cpu, nominalQuota: 1000}\n"
    )


def local(namespace: str, cq: str) -> str:
    return (
        KUEUE + f"kind: LocalQueue\nmetadata: {{name: default, namespace: {namespace}}}\n"
        f"spec: {{clusterQueue: {cq}}}\n"
    )


def with_queues(cluster: Cluster, *documents: str) -> Cluster:
    return dataclasses.replace(cluster, queues=queues_from_yaml("---\n".join(documents)))


def submit(d: EngineDriver, spec: JobSpec, count: int) -> list[int]:
    ids = [d.submit(spec)[0] for _ in range(count)]
    d.settle()
    return ids


def running(d: EngineDriver, ids: list[int]) -> int:
    return sum(d.state(i) is JobState.RUNNING for i in ids)


def classes(*pairs: tuple[str, int]) -> list[str]:
    return [
        KUEUE + f"kind: WorkloadPriorityClass\nmetadata: {{name: {name}}}\nvalue: {value}\n"
        for name, value in pairs
    ]


PRIORITIES = classes(("low", 50), ("mid", 150), ("high", 200))


def preemption(
    within: str = "Never",
    reclaim: str = "Never",
    borrow: str = "Never",
    threshold: int | None = None,
) -> str:
    limit = f", maxPriorityThreshold: {threshold}" if threshold is not None else ""
    return (
        "\n  preemption:\n"
        f"    withinClusterQueue: {within}\n"
        f"    reclaimWithinCohort: {reclaim}\n"
        f"    borrowWithinCohort: {{policy: {borrow}{limit}}}\n"
    )


def queue(name: str, nominal: int, policy: str = "", cohort: str | None = "team-ab") -> str:
    """``cpu_queue`` with a preemption stanza (inserted in its spec)."""
    text = cpu_queue(name, nominal, cohort=cohort)
    return text.replace("spec:\n", "spec:" + policy + "\n", 1) if policy else text


def job(namespace: str, priority: str | None = None, cpus: int = 1) -> JobSpec:
    labels = ((PRIORITY_CLASS_LABEL, priority),) if priority else ()
    return make_job(
        gpus=0, account=namespace, cpus_per_task=cpus, time_limit=10 * HOUR, extra=labels
    )


def driver(*queues: str, profile: str = "kueue") -> EngineDriver:
    namespaces = [q.split("name: ")[1].split("}")[0] for q in queues]
    cluster: Cluster = with_queues(
        small_cluster(nodes=1, gpus=8),
        FLAVOR,
        *PRIORITIES,
        *queues,
        *(local(n.removesuffix("-cq"), n) for n in namespaces),
    )
    return EngineDriver(cluster, profile)


def preempted(d: EngineDriver) -> list[int]:
    return [e.job_id for e in d.decisions(Preempted)]


# -- withinClusterQueue ----------------------------------------------------------------------


def _within(policy: str, incoming: str) -> tuple[EngineDriver, list[int], int]:
    """team-a-cq (4 CPUs, no cohort) runs four 1-CPU low jobs; a 2-CPU job comes."""
    d = driver(queue("team-a-cq", 4, preemption(within=policy), cohort=None))
    low = submit(d, job("team-a", "low"), 4)
    [new] = submit(d, job("team-a", incoming, cpus=2), 1)
    d.settle()
    return d, low, new


def test_within_cluster_queue_lower_priority_preempts_the_fewest_newest_low_jobs() -> None:
    """ "LowerPriority: only preempt Workloads in the ClusterQueue that have lower priority
    than the pending Workload"; targets are taken most recently admitted first, and only as
    many as the pending one needs."""
    d, low, new = _within("LowerPriority", "high")
    assert sorted(preempted(d)) == sorted(low[-2:])
    assert d.state(new) is JobState.RUNNING
    assert running(d, low) == 2


def test_within_cluster_queue_never_and_equal_priority_preempt_nothing() -> None:
    d, _, new = _within("Never", "high")
    assert preempted(d) == [] and d.state(new) is JobState.PENDING
    d, _, new = _within("LowerPriority", "low")
    assert preempted(d) == [] and d.state(new) is JobState.PENDING


def test_lower_or_newer_equal_priority_preempts_equal_jobs_submitted_after() -> None:
    """ "LowerOrNewerEqualPriority: ... also preempt Workloads that have the same priority
    but are newer": a 4-CPU job that waited behind an older one takes back the quota that
    newer jobs of its own priority filled meanwhile; under LowerPriority it keeps waiting."""
    for policy, expect in (("LowerOrNewerEqualPriority", True), ("LowerPriority", False)):
        d = driver(queue("team-a-cq", 4, preemption(within=policy), cohort=None))
        [old] = submit(d, job("team-a", "low", cpus=2), 1)
        [big] = submit(d, job("team-a", "low", cpus=4), 1)
        newer = submit(d, job("team-a", "low"), 2)
        assert running(d, newer) == 2 and d.state(big) is JobState.PENDING
        d.finish(old)
        d.settle()
        assert (sorted(preempted(d)) == sorted(newer)) is expect
        assert (d.state(big) is JobState.RUNNING) is expect


# -- reclaimWithinCohort ---------------------------------------------------------------------


def _reclaim(
    policy: str, a_priority: str, b_count: int = 1
) -> tuple[EngineDriver, list[int], list[int]]:
    """cluster_queue.md's team-a-cq (9 CPUs) and team-b-cq (12): team-a borrows all 12 of
    team-b's while team-b is idle; then team-b submits ``b_count`` 1-CPU mid jobs."""
    d = driver(
        queue("team-a-cq", 9),
        queue("team-b-cq", 12, preemption(reclaim=policy)),
    )
    a = submit(d, job("team-a", a_priority), 21)
    assert running(d, a) == 21
    b = submit(d, job("team-b", "mid"), b_count)
    d.settle()
    return d, a, b


def test_reclaim_any_takes_back_borrowed_quota() -> None:
    """ "Any: if the pending Workload fits within the nominal quota of its ClusterQueue,
    preempt any Workload in the cohort, irrespective of priority"."""
    d, a, [b] = _reclaim("Any", "high")
    assert len(preempted(d)) == 1 and preempted(d)[0] in a
    assert d.state(b) is JobState.RUNNING


def test_reclaim_lower_priority_only_from_lower_priority_borrowers() -> None:
    d, _, [b] = _reclaim("LowerPriority", "high")
    assert preempted(d) == [] and d.state(b) is JobState.PENDING
    d, _, [b] = _reclaim("LowerPriority", "low")
    assert len(preempted(d)) == 1 and d.state(b) is JobState.RUNNING


def test_reclaim_never_waits() -> None:
    d, _, [b] = _reclaim("Never", "low")
    assert preempted(d) == [] and d.state(b) is JobState.PENDING


def test_reclaim_stops_at_the_lenders_nominal_quota() -> None:
    """A victim of another queue only while that queue borrows: team-b gets its 12 back,
    its 13th job (which would borrow) preempts nothing, and team-a keeps its nominal 9."""
    d, a, b = _reclaim("Any", "low", b_count=13)
    assert len(preempted(d)) == 12
    assert running(d, b) == 12 and running(d, a) == 9


# -- borrowWithinCohort ----------------------------------------------------------------------


def _borrow(threshold: int, b_priority: str) -> tuple[EngineDriver, list[int], int]:
    """team-a-cq (9) uses its nominal quota; team-b-cq (12) borrows 3 of idle team-c-cq's;
    a high 2-CPU job of team-a would have to borrow."""
    policy = preemption(reclaim="Any", borrow="LowerPriority", threshold=threshold)
    d = driver(queue("team-a-cq", 9, policy), queue("team-b-cq", 12), queue("team-c-cq", 3))
    a = submit(d, job("team-a", "low"), 9)
    b = submit(d, job("team-b", b_priority), 15)
    assert running(d, a) == 9 and running(d, b) == 15
    [new] = submit(d, job("team-a", "high", cpus=2), 1)
    d.settle()
    return d, b, new


def test_borrow_within_cohort_preempts_lower_priority_borrowers_under_the_threshold() -> None:
    """ "LowerPriority: if the pending Workload requires borrowing, only preempt Workloads in
    the cohort that have lower priority than the pending Workload", "with priority less than
    or equal to" maxPriorityThreshold."""
    d, b, new = _borrow(100, "low")
    assert len(preempted(d)) == 2 and set(preempted(d)) <= set(b)
    assert d.state(new) is JobState.RUNNING


def test_borrow_within_cohort_spares_jobs_over_the_threshold() -> None:
    d, _, new = _borrow(10, "low")
    assert preempted(d) == [] and d.state(new) is JobState.PENDING
    d, _, new = _borrow(100, "mid")  # lower than high, but over the threshold
    assert preempted(d) == [] and d.state(new) is JobState.PENDING


# -- beyond Kueue: victims that free a placement ---------------------------------------------


def test_reclaim_frees_a_node_the_gang_can_use_not_scattered_gpus() -> None:
    """Kueue #10815: 2 nodes x 8 GPUs, team-b (nominal 8) borrows team-a's 8 with four
    4-GPU jobs, two per node; the two that lost least since their checkpoints sit on
    different nodes. team-a's 8-GPU job reclaims two on one node, so it starts, and team-b
    keeps its nominal 8."""
    cluster = with_queues(
        small_cluster(nodes=2, gpus=8, per_leaf=2),
        FLAVOR,
        gpu_queue("team-a", 8, cohort="pool", spec=preemption(reclaim="Any")),
        gpu_queue("team-b", 8, cohort="pool"),
        local("team-a", "team-a"),
        local("team-b", "team-b"),
    )
    d = EngineDriver(cluster, "phalanx")
    b = []
    for interval in (30 * MINUTE, 7 * HOUR, 30 * MINUTE, 7 * HOUR):
        [j] = d.submit(
            make_job(gpus=4, account="team-b", time_limit=10 * HOUR, checkpoint_interval=interval)
        )
        d.settle()
        b.append(j)
    assert running(d, b) == 4
    nodes = {j: d.job(j).alloc.nodes for j in b}  # type: ignore[union-attr]
    d.advance(d.now + 2 * HOUR + MINUTE)
    [a] = d.submit(make_job(gpus=8, account="team-a", time_limit=HOUR))
    d.settle()
    victims = preempted(d)
    assert len(victims) == 2
    assert nodes[victims[0]] == nodes[victims[1]]
    assert d.state(a) is JobState.RUNNING
    assert running(d, b) == 2


# -- what a reclaim frees stays with the reclaiming queue (issue 11) --------------------------


def _reclaiming(nominals: tuple[int, int], borrower: list[int]) -> EngineDriver:
    """4 nodes x 8 GPUs; ClusterQueues q0 and q1 of one cohort, both reclaiming ``Any``; q0's
    jobs of ``borrower`` GPUs run (borrowing q1's idle quota); victims get 30 s of grace."""
    cluster = with_queues(
        small_cluster(nodes=4, gpus=8, preempt_mode=PreemptMode.REQUEUE, grace_time=GRACE),
        FLAVOR,
        *(
            gpu_queue(f"q{i}", nominal, cohort="c", spec=preemption(reclaim="Any"))
            for i, nominal in enumerate(nominals)
        ),
        local("q0", "q0"),
        local("q1", "q1"),
    )
    d = EngineDriver(cluster, "phalanx")
    for gpus in borrower:
        d.submit(make_job(gpus=gpus, account="q0", time_limit=100 * HOUR))
    d.settle()
    return d


def test_gpus_freed_for_a_reclaim_are_not_borrowed_back_by_the_lender() -> None:
    """The property's counterexample: nominal quotas 24 and 8, q0 runs 1,1,1,1,4,4,8,8,4,4
    GPUs (32); q1's five 1-GPU jobs preempt an 8- and a 4-GPU job of q0. After the grace,
    q0's requeued 4-GPU job fits its nominal quota again, but its pending 4-GPU job (which
    fitted it too at the pass's start, alone) would borrow what q1 reclaimed: q1's five run,
    and that job waits."""
    d = _reclaiming((24, 8), [1, 1, 1, 1, 4, 4, 8, 8, 4, 4])
    [last] = [j for j in d.engine.jobs if d.state(j) is JobState.PENDING]
    q1 = submit(d, make_job(gpus=1, account="q1", time_limit=100 * HOUR), 5)
    assert len(preempted(d)) == 2
    d.advance(d.now + GRACE)
    d.settle()
    assert running(d, q1) == 5
    assert d.state(last) is JobState.PENDING
    assert len(preempted(d)) == 2  # no second round


def test_quota_other_victims_freed_admits_a_job_that_then_waits_for_them() -> None:
    """Nominal quotas 20 and 12; q0 runs 26 GPUs, q1 asks for 11. Six start; four preempt a
    1-GPU job each, the fourth's victim holds 4 GPUs, so the eleventh fits the quota that
    victim frees beyond what the fourth needs (it is not refused as the first was, by
    shape), and waits for it rather than preempting more: all eleven run after the grace."""
    d = _reclaiming((20, 12), [1, 1, 1, 4, 4, 4, 4, 4, 1, 1, 1])
    q1 = submit(d, make_job(gpus=1, account="q1", time_limit=100 * HOUR), 11)
    assert running(d, q1) == 6
    d.advance(d.now + GRACE)
    d.settle()
    assert running(d, q1) == 11


# -- beyond Kueue: a queue just below its nominal quota tops up (top_up) ----------------------


def _topping_up(
    profile: str | Profile, q0_jobs: int, q1_runs: tuple[int, ...] = (8,)
) -> tuple[EngineDriver, list[int], int]:
    """4 nodes x 8 GPUs; ClusterQueues q0, q1, q2 (nominal 8, 12, 12) of one cohort, all
    reclaiming ``Any``. q1 runs jobs of ``q1_runs`` GPUs (one 8-GPU job: 4 below its
    nominal); q0 runs ``q0_jobs`` 1-GPU jobs (borrowing), q2 1-GPU jobs on the rest (within
    its nominal): the cluster is full. Then q1 asks 8 more GPUs: 16 > 12, so Kueue's reclaim
    does not apply to it."""
    cluster = with_queues(
        small_cluster(nodes=4, gpus=8, preempt_mode=PreemptMode.REQUEUE, grace_time=GRACE),
        FLAVOR,
        *(
            gpu_queue(f"q{i}", nominal, cohort="c", spec=preemption(reclaim="Any"))
            for i, nominal in enumerate((8, 12, 12))
        ),
        *(local(f"q{i}", f"q{i}") for i in range(3)),
    )
    d = EngineDriver(cluster, profile)
    for gpus in q1_runs:
        submit(d, make_job(gpus=gpus, account="q1", time_limit=100 * HOUR), 1)
    q0 = submit(d, make_job(gpus=1, account="q0", time_limit=100 * HOUR), q0_jobs)
    submit(d, make_job(gpus=1, account="q2", time_limit=100 * HOUR), 32 - sum(q1_runs) - q0_jobs)
    assert running(d, q0) == q0_jobs
    [job] = submit(d, make_job(gpus=8, account="q1", time_limit=HOUR), 1)
    return d, q0, job


def test_a_queue_below_its_nominal_quota_tops_up_from_a_queue_borrowing_more() -> None:
    """q0 borrows 16; q1 will borrow 4 with its second job: eight of q0's jobs make room
    (q0 still borrows 8 >= 4), and the job starts after the grace; under ``kueue`` (Kueue's
    rule: reclaim only for a job within its nominal quota) nothing is preempted."""
    d, q0, job = _topping_up("phalanx", 24)
    victims = preempted(d)
    assert len(victims) == 8 and set(victims) <= set(q0)
    d.advance(d.now + GRACE)
    d.settle()
    assert d.state(job) is JobState.RUNNING
    d, _, job = _topping_up("kueue", 24)
    assert preempted(d) == [] and d.state(job) is JobState.PENDING


def test_a_queue_tops_up_only_to_recover_at_least_half_what_the_job_asks() -> None:
    """q1 runs 8 + 2 GPUs, 2 below its nominal 12: its 8-GPU job would borrow 6 to recover 2
    (``top_up_min_gap`` 0.5, the default, asks 4): it waits, nothing is preempted. With the
    bound off (0) eight of q0's jobs go for it, as before the bound; on the first 20,000
    Philly jobs such top-ups (1 or 2 GPUs recovered: 212 of 341) were most of a reclaim
    storm (module docstring)."""
    d, _, job = _topping_up("phalanx", 22, (8, 2))
    assert preempted(d) == [] and d.state(job) is JobState.PENDING
    base = named_profile("phalanx")
    params = dict(base.params)
    params["preempt/clusterqueue"] = {**params["preempt/clusterqueue"], "top_up_min_gap": 0}
    d, q0, job = _topping_up(dataclasses.replace(base, params=params), 22, (8, 2))
    victims = preempted(d)
    assert len(victims) == 8 and set(victims) <= set(q0)


def test_topping_up_never_leaves_the_lender_borrowing_less_than_the_reclaimer() -> None:
    """q0 borrows 6: after any eight of its jobs it would borrow -2, less than q1's 4, so
    nothing is preempted and q1's job waits."""
    d, _, job = _topping_up("phalanx", 14)
    assert preempted(d) == [] and d.state(job) is JobState.PENDING


def test_a_top_up_judges_the_lender_by_its_running_jobs_not_its_pending_admissions() -> None:
    """q2's nominal quota is 20, so the cohort's (40) exceeds the 32 GPUs: q0 runs fourteen
    1-GPU jobs (borrowing 6) and its pending 8-GPU job, submitted first, is admitted by quota
    in every pass (borrowing 14 more) but finds no placement. For q1's 8-GPU job (4 below its
    nominal 12) q0 seems to borrow 14 with eight victims gone, but its running jobs would be
    2 below its nominal: at the next pass q0 would reclaim them straight back (the ping-pong
    of the first 30,000 Philly jobs). Nothing is preempted; q1's job waits."""
    cluster = with_queues(
        small_cluster(nodes=4, gpus=8, preempt_mode=PreemptMode.REQUEUE, grace_time=GRACE),
        FLAVOR,
        *(
            gpu_queue(f"q{i}", nominal, cohort="c", spec=preemption(reclaim="Any"))
            for i, nominal in enumerate((8, 12, 20))
        ),
        *(local(f"q{i}", f"q{i}") for i in range(3)),
    )
    d = EngineDriver(cluster, "phalanx")
    submit(d, make_job(gpus=8, account="q1", time_limit=100 * HOUR), 1)
    q0 = submit(d, make_job(gpus=1, account="q0", time_limit=100 * HOUR), 14)
    submit(d, make_job(gpus=1, account="q2", time_limit=100 * HOUR), 10)
    assert running(d, q0) == 14
    [pending] = submit(d, make_job(gpus=8, account="q0", time_limit=HOUR), 1)
    assert d.state(pending) is JobState.PENDING and preempted(d) == []
    [job] = submit(d, make_job(gpus=8, account="q1", time_limit=HOUR), 1)
    assert preempted(d) == [] and d.state(job) is JobState.PENDING


# -- a reclaim spares the guarantees of other queues where it can (spare_guarantees) ----------


def _sparing(spare: bool) -> tuple[EngineDriver, list[int], list[int], int]:
    """4 nodes x 8 GPUs; ClusterQueues qa, qb, qc (nominal 12, 4, 16) of one cohort, all
    reclaiming ``Any``. qb runs twelve 1-GPU jobs (borrowing 8), qc four (12 below its
    nominal), qa an 8-GPU job; 20 minutes later qa's second 8-GPU job starts on the last node
    (qa borrows 4, as after a top-up). A minute later qc asks one GPU: within its nominal, it
    reclaims. qa's second job has lost the least work (8 GPU-minutes against 20 for each of
    qb's), but taking it leaves qa 4 below its nominal with that job pending again."""
    cluster = with_queues(
        small_cluster(nodes=4, gpus=8, preempt_mode=PreemptMode.REQUEUE, grace_time=GRACE),
        FLAVOR,
        *(
            gpu_queue(name, nominal, cohort="c", spec=preemption(reclaim="Any"))
            for name, nominal in (("qa", 12), ("qb", 4), ("qc", 16))
        ),
        *(local(name, name) for name in ("qa", "qb", "qc")),
    )
    base = named_profile("phalanx")
    params = dict(base.params)
    params["preempt/clusterqueue"] = {
        **params.get("preempt/clusterqueue", {}),
        "spare_guarantees": spare,
    }
    d = EngineDriver(cluster, dataclasses.replace(base, params=params))
    qb = submit(d, make_job(gpus=1, account="qb", time_limit=100 * HOUR), 12)
    submit(d, make_job(gpus=1, account="qc", time_limit=100 * HOUR), 4)
    first = submit(d, make_job(gpus=8, account="qa", time_limit=100 * HOUR), 1)
    d.advance(d.now + 20 * MINUTE)
    second = submit(d, make_job(gpus=8, account="qa", time_limit=100 * HOUR), 1)
    assert running(d, qb) == 12 and running(d, first + second) == 2
    d.advance(d.now + MINUTE)
    [job] = submit(d, make_job(gpus=1, account="qc", time_limit=HOUR), 1)
    return d, qb, second, job


def test_a_reclaim_takes_a_borrower_that_stays_at_its_nominal_before_one_that_would_not() -> None:
    """With ``spare_guarantees`` (the ``phalanx`` default) qc's job takes one of qb's, which
    still borrows 7 after: qa keeps its quota and both its jobs run. Without it, it takes
    qa's second job (the least work lost): qa stands 4 below its nominal quota with that job
    pending (no top-up frees a whole node for it: qb's jobs share their nodes with qc's), a
    guarantee violation moved from qc to qa, until qc's job ends."""
    d, qb, [second], job = _sparing(True)
    victims = preempted(d)
    assert len(victims) == 1 and set(victims) <= set(qb)
    d.advance(d.now + GRACE)
    d.settle()
    assert d.state(job) is JobState.RUNNING and d.state(second) is JobState.RUNNING
    assert len(preempted(d)) == 1

    d, qb, [second], job = _sparing(False)
    assert preempted(d) == [second]
    d.advance(d.now + GRACE)
    d.settle()
    assert d.state(job) is JobState.RUNNING and d.state(second) is JobState.PENDING
    assert running(d, qb) == 12


def test_top_up_min_gap_must_be_a_fraction() -> None:
    for bad in (-0.1, 1.5, "half"):
        with pytest.raises(ConfigError, match="top_up_min_gap"):
            ClusterQueuePreempt({"top_up_min_gap": bad})
