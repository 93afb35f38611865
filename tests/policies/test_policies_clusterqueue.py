"""``admit/clusterqueue`` in the ``kueue`` profile: scenarios transcribed from Kueue's
documentation (site/content/en/docs/concepts/cluster_queue.md) with the documented outcome,
and what Phalanx adds (flavors chosen knowing placement, messages in quota terms)."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from phalanx.config.clusterspec import cluster_from_yaml
from phalanx.config.queues import queues_from_yaml
from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.queues import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from phalanx.domain.state import JobState, Reason
from phalanx.domain.time import HOUR
from phalanx.policies.catalog import POLICIES
from phalanx.policies.clusterqueue.admission import ClusterQueueAdmission
from phalanx.sched.profile import Profile
from phalanx.testing import EngineDriver, make_job, small_cluster

KUEUE = "apiVersion: kueue.x-k8s.io/v1beta1\n"
FLAVOR = KUEUE + "kind: ResourceFlavor\nmetadata: {name: default-flavor}\n"


def cpu_queue(name: str, nominal: int, *, cohort: str | None = "team-ab", extra: str = "") -> str:
    """A ClusterQueue of Kueue's examples: CPUs of ``default-flavor``, all namespaces."""
    cohort_line = f"  cohort: {cohort}\n" if cohort else ""
    return (
        KUEUE
        + f"kind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n  namespaceSelector: {{}}\n"
        + cohort_line
        + "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
        + "    - name: default-flavor\n      resources:\n"
        + f"      - {{name: cpu, nominalQuota: {nominal}{extra}}}\n"
    )


def local(namespace: str, cq: str, name: str = "default") -> str:
    return (
        KUEUE + f"kind: LocalQueue\nmetadata: {{name: {name}, namespace: {namespace}}}\n"
        f"spec: {{clusterQueue: {cq}}}\n"
    )


def with_queues(cluster: Cluster, *documents: str) -> Cluster:
    return dataclasses.replace(cluster, queues=queues_from_yaml("---\n".join(documents)))


def cpu_job(namespace: str, cpus: int = 1, **extra: object) -> JobSpec:
    return make_job(gpus=0, account=namespace, cpus_per_task=cpus, time_limit=HOUR, **extra)


def team_ab(a_extra: str = "", b_extra: str = "") -> EngineDriver:
    cluster = with_queues(
        small_cluster(nodes=2, gpus=8),
        FLAVOR,
        cpu_queue("team-a-cq", 9, extra=a_extra),
        cpu_queue("team-b-cq", 12, extra=b_extra),
        local("team-a", "team-a-cq"),
        local("team-b", "team-b-cq"),
    )
    return EngineDriver(cluster, "kueue")


def submit(d: EngineDriver, spec: JobSpec, count: int) -> list[int]:
    ids = [d.submit(spec)[0] for _ in range(count)]
    d.settle()
    return ids


def running(d: EngineDriver, ids: list[int]) -> int:
    return sum(d.state(i) is JobState.RUNNING for i in ids)


# -- cluster_queue.md: "Borrowing example" ---------------------------------------------------


def test_borrowing_example_team_a_takes_9_plus_12_while_team_b_is_idle() -> None:
    d = team_ab()
    a = submit(d, cpu_job("team-a"), 22)
    assert running(d, a) == 21
    job = d.job(a[-1])
    assert job.reason == Reason.QUOTA_CPU and job.reason_plugin == "admit/clusterqueue"
    assert "ClusterQueue team-a-cq uses 21 CPUs of its nominal 9 CPUs" in job.reason_message
    assert "cohort team-ab has none to lend; 1 CPUs more needed" in job.reason_message


def test_borrowing_example_team_b_within_its_nominal_quota_goes_before_team_a() -> None:
    """ "If team-b-cq has pending Workloads and team-a-cq has all its nominalQuota used,
    Kueue will admit Workloads in team-b-cq before admitting any new Workloads in
    team-a-cq": a freed CPU goes to team-b's later job, not to team-a's earlier one."""
    d = team_ab()
    a = submit(d, cpu_job("team-a"), 21)
    [a_waiting] = submit(d, cpu_job("team-a"), 1)
    [b_first] = submit(d, cpu_job("team-b"), 1)
    assert d.state(a_waiting) is JobState.PENDING and d.state(b_first) is JobState.PENDING
    d.finish(a[0])
    d.settle()
    assert d.state(b_first) is JobState.RUNNING
    assert d.state(a_waiting) is JobState.PENDING


# -- cluster_queue.md: "BorrowingLimit" ------------------------------------------------------


def test_borrowing_limit_example() -> None:
    """team-a-cq (9, borrowingLimit 1) admits up to 9+1=10 CPUs while team-b-cq is idle;
    team-b-cq (no limit) may borrow up to 12+9."""
    d = team_ab(a_extra=", borrowingLimit: 1")
    a = submit(d, cpu_job("team-a"), 11)
    assert running(d, a) == 10
    assert "at its borrowing limit of 1 CPUs" in d.job(a[-1]).reason_message
    d = team_ab(a_extra=", borrowingLimit: 1")
    b = submit(d, cpu_job("team-b"), 22)
    assert running(d, b) == 21


# -- cluster_queue.md: "LendingLimit" --------------------------------------------------------


def test_lending_limit_example() -> None:
    """team-b-cq (12, lendingLimit 1) lends at most 1 CPU: team-a-cq admits up to 9+1=10,
    and team-b-cq keeps 12-1=11 for itself meanwhile."""
    d = team_ab(b_extra=", lendingLimit: 1")
    a = submit(d, cpu_job("team-a"), 11)
    assert running(d, a) == 10
    b = submit(d, cpu_job("team-b"), 12)
    assert running(d, b) == 11
    d = team_ab()  # without the limit team-b-cq would lend all of its 12
    assert running(d, submit(d, cpu_job("team-a"), 22)) == 21


# -- queueing strategy ---------------------------------------------------------------------


def _fifo(strategy: str) -> tuple[EngineDriver, int, int]:
    """team-a (4 CPUs, no cohort) runs 2; its next job asks 4, the one after 1."""
    cq = cpu_queue("team-a-cq", 4, cohort=None).replace(
        "  namespaceSelector: {}\n", f"  namespaceSelector: {{}}\n  queueingStrategy: {strategy}\n"
    )
    cluster = with_queues(small_cluster(nodes=2, gpus=8), FLAVOR, cq, local("team-a", "team-a-cq"))
    d = EngineDriver(cluster, "kueue")
    submit(d, cpu_job("team-a", cpus=2), 1)
    [head] = d.submit(cpu_job("team-a", cpus=4))
    [later] = d.submit(cpu_job("team-a", cpus=1))
    d.settle()
    return d, head, later


def test_best_effort_fifo_admits_past_a_head_that_does_not_fit() -> None:
    d, head, later = _fifo("BestEffortFIFO")
    assert d.state(head) is JobState.PENDING and d.job(head).reason == Reason.QUOTA_CPU
    assert "has no cohort to borrow from" in d.job(head).reason_message
    assert d.state(later) is JobState.RUNNING


def test_strict_fifo_head_that_does_not_fit_blocks_its_queue() -> None:
    d, head, later = _fifo("StrictFIFO")
    assert d.state(head) is JobState.PENDING and d.job(head).reason == Reason.QUOTA_CPU
    assert d.state(later) is JobState.PENDING and d.job(later).reason == Reason.PRIORITY
    assert f"admits nothing before job {head}" in d.job(later).reason_message


# -- which queue a job goes to -------------------------------------------------------------


def test_jobs_no_queue_takes_wait_saying_why() -> None:
    selective = cpu_queue("team-x-cq", 4, cohort=None).replace(
        "  namespaceSelector: {}\n", "  namespaceSelector: {matchLabels: {team: x}}\n"
    )
    stopped = cpu_queue("team-s-cq", 4, cohort=None).replace(
        "  namespaceSelector: {}\n", "  namespaceSelector: {}\n  stopPolicy: Hold\n"
    )
    cluster = with_queues(
        small_cluster(nodes=2, gpus=8),
        FLAVOR,
        cpu_queue("team-a-cq", 4, cohort=None),
        selective,
        stopped,
        local("team-a", "team-a-cq", name="main"),
        local("team-x", "team-x-cq"),
        local("team-s", "team-s-cq"),
    )
    d = EngineDriver(cluster, "kueue")
    [unnamed] = d.submit(cpu_job("team-a"))
    [named] = d.submit(cpu_job("team-a", extra=((QUEUE_NAME_LABEL, "main"),)))
    [elsewhere] = d.submit(cpu_job("team-x"))
    [held] = d.submit(cpu_job("team-s"))
    [gpus] = d.submit(make_job(gpus=1, account="team-a", extra=((QUEUE_NAME_LABEL, "main"),)))
    d.settle()
    assert d.state(named) is JobState.RUNNING
    assert d.job(unnamed).reason == Reason.INVALID_ACCOUNT
    assert d.job(unnamed).reason_message == "LocalQueue default doesn't exist in namespace team-a"
    assert "doesn't match ClusterQueue selector (team-x-cq)" in d.job(elsewhere).reason_message
    assert d.job(held).reason == Reason.QUEUE_STOPPED
    assert (
        d.job(gpus).reason_message
        == "resource nvidia.com/gpu unavailable in ClusterQueue team-a-cq"
    )


# -- flavors: order, fungibility, placement -------------------------------------------------


def two_pools() -> Cluster:
    """2 H100 nodes (gpu1-2) and 2 A100 nodes (gpu3-4), 8 GPUs each, one leaf each pool."""
    return cluster_from_yaml(
        textwrap.dedent("""\
            nodes:
              - {names: "gpu[1-2]", gpus: 8, gpu_model: H100, cpus: 64, memory: 512G}
              - {names: "gpu[3-4]", gpus: 8, gpu_model: A100, cpus: 64, memory: 512G}
            """),
        "two-pools.yaml",
    )


def gpu_queue(name: str, quotas: dict[str, int], *, cohort: str | None, spec: str = "") -> str:
    flavors = "".join(
        f"    - name: {f}\n      resources:\n"
        f"      - {{name: nvidia.com/gpu, nominalQuota: {n}}}\n"
        f"      - {{name: cpu, nominalQuota: 1000}}\n"
        for f, n in quotas.items()
    )
    return (
        KUEUE
        + f"kind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n  namespaceSelector: {{}}\n"
        + (f"  cohort: {cohort}\n" if cohort else "")
        + spec
        + "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu, cpu]\n    flavors:\n"
        + flavors
    )


POOLS = [
    KUEUE + "kind: ResourceFlavor\nmetadata: {name: h100}\n"
    "spec: {nodeLabels: {nvidia.com/gpu.product: H100}}\n",
    KUEUE + "kind: ResourceFlavor\nmetadata: {name: a100}\n"
    "spec: {nodeLabels: {nvidia.com/gpu.product: A100}}\n",
]
LOCALS = [local("team-a", "team-a"), local("team-b", "team-b")]


def model_of(d: EngineDriver, job_id: int) -> set[str]:
    alloc = d.job(job_id).alloc
    assert alloc is not None
    return {d.engine.cluster.nodes[n].gpu_model for n in alloc.nodes}


def _fungibility(when_can_borrow: str) -> EngineDriver:
    """team-a: 8 H100 and 8 A100 GPUs of quota; team-b lends it 8 H100 in cohort c."""
    spec = f"  flavorFungibility: {{whenCanBorrow: {when_can_borrow}}}\n"
    cluster = with_queues(
        two_pools(),
        *POOLS,
        *LOCALS,
        gpu_queue("team-a", {"h100": 8, "a100": 8}, cohort="c", spec=spec),
        gpu_queue("team-b", {"h100": 8}, cohort="c"),
    )
    return EngineDriver(cluster, "kueue")


def test_the_first_flavor_that_fits_and_may_stop_search_borrows_in_it() -> None:
    d = _fungibility("MayStopSearch")
    first, second = submit(d, make_job(gpus=8, account="team-a"), 2)
    assert model_of(d, first) == {"H100"}  # the first flavor, within its nominal quota
    assert model_of(d, second) == {"H100"}  # fits by borrowing team-b's: search stops


def test_try_next_flavor_prefers_a_flavor_that_needs_no_borrowing() -> None:
    d = _fungibility("TryNextFlavor")
    first, second = submit(d, make_job(gpus=8, account="team-a"), 2)
    assert model_of(d, first) == {"H100"}
    assert model_of(d, second) == {"A100"}


def test_a_flavor_with_quota_but_no_room_gives_way_to_one_with_both() -> None:
    """team-b fills the H100 nodes within its own quota; team-a's first flavor (h100) still
    has quota, but a workload admitted to it could not start (Kueue #1476). Phalanx assigns
    the next flavor, where it starts now."""
    cluster = with_queues(
        two_pools(),
        *POOLS,
        *LOCALS,
        gpu_queue("team-a", {"h100": 8, "a100": 8}, cohort=None),
        gpu_queue("team-b", {"h100": 16}, cohort=None),
    )
    d = EngineDriver(cluster, "kueue")
    b = submit(d, make_job(gpus=8, account="team-b"), 2)
    assert all(model_of(d, j) == {"H100"} for j in b)
    [a] = submit(d, make_job(gpus=8, account="team-a"), 1)
    assert d.state(a) is JobState.RUNNING and model_of(d, a) == {"A100"}


def test_a_job_admitted_to_a_flavor_runs_only_on_its_nodes() -> None:
    """team-a has A100 quota only: its jobs never land on the idle H100 nodes, and one that
    fits the quota but no A100 node waits for resources, not for quota."""
    cluster = with_queues(
        two_pools(),
        *POOLS,
        local("team-a", "team-a"),
        gpu_queue("team-a", {"a100": 24}, cohort=None),
    )
    d = EngineDriver(cluster, "kueue")
    jobs = submit(d, make_job(gpus=8, account="team-a", time_limit=HOUR), 3)
    assert [d.state(j) for j in jobs].count(JobState.RUNNING) == 2
    assert all(model_of(d, j) == {"A100"} for j in jobs if d.state(j) is JobState.RUNNING)
    [waiting] = [j for j in jobs if d.state(j) is JobState.PENDING]
    # admitted: it waits for room (the kueue profile's greedy step says Priority), not quota
    assert d.job(waiting).reason_plugin != "admit/clusterqueue"
    assert d.job(waiting).reason not in (Reason.QUOTA, Reason.QUOTA_CPU)


def test_priority_classes_order_admission() -> None:
    """Within what fits without borrowing, a higher WorkloadPriorityClass goes first."""
    high = KUEUE + "kind: WorkloadPriorityClass\nmetadata: {name: high}\nvalue: 100\n"
    cluster = with_queues(
        small_cluster(nodes=2, gpus=8),
        FLAVOR,
        high,
        cpu_queue("team-a-cq", 2, cohort=None),
        local("team-a", "team-a-cq"),
    )
    d = EngineDriver(cluster, "kueue")
    [blocker] = submit(d, cpu_job("team-a", cpus=2), 1)
    [low] = d.submit(cpu_job("team-a", cpus=2))
    [urgent] = d.submit(cpu_job("team-a", cpus=2, extra=((PRIORITY_CLASS_LABEL, "high"),)))
    d.settle()
    d.finish(blocker)
    d.settle()
    assert d.state(urgent) is JobState.RUNNING and d.state(low) is JobState.PENDING


def test_without_queues_the_kueue_profile_is_admit_quota_with_its_parameters() -> None:
    """No ClusterQueue: admit/quota's per-account quota (its own tests pin it), with the
    parameters a profile gives it under its own id."""
    profile = dataclasses.replace(POLICIES["kueue"], params={"admit/quota": {"borrowing": False}})
    d = EngineDriver(small_cluster(nodes=2, gpus=8, quotas={"a": 8, "b": 8}), profile)
    first, second = submit(d, make_job(gpus=8, account="a"), 2)
    assert d.state(first) is JobState.RUNNING
    assert d.job(second).reason == Reason.QUOTA
    assert d.job(second).reason_plugin == "admit/quota"


# -- quota with reservations and backfill (a profile with a reservation step) ----------------


def _with_queues_profile() -> Profile:
    """``phalanx`` with ClusterQueue admission (EASY backfill inside quotas), in submit
    order so that the scenario below does not hang on the multifactor weights."""
    base = POLICIES["phalanx"]
    params = {**base.params, "admit/clusterqueue": {"without_queues": "none"}}
    return dataclasses.replace(
        base,
        queue_sort="priority/basic",
        calc_period=0,
        pre_filter=("admit/clusterqueue",),
        reserve=("admit/clusterqueue",),
        params=params,
    )


def test_an_admitted_head_holds_its_quota_and_a_reservation_and_short_work_backfills() -> None:
    """team-a's 2-node head fits its quota but not the one free node: it is admitted, holds
    a reservation for when team-a's running job ends, and its quota stays counted, so the
    later team-a job that would fit the free node waits for quota instead of taking it. A
    short team-b job within its own quota backfills the gap."""
    cluster = with_queues(
        small_cluster(nodes=4, gpus=8),
        FLAVOR.replace("default-flavor", "any"),
        *LOCALS,
        gpu_queue("team-a", {"any": 16}, cohort=None),
        gpu_queue("team-b", {"any": 24}, cohort=None),
    )
    d = EngineDriver(cluster, _with_queues_profile())
    submit(d, make_job(gpus=8, account="team-b", time_limit=2 * HOUR), 2)
    [running_a] = submit(d, make_job(gpus=8, account="team-a", time_limit=HOUR), 1)
    [head] = d.submit(make_job(gpus=4, nodes=2, account="team-a", time_limit=HOUR))
    [later_a] = d.submit(make_job(gpus=8, account="team-a", time_limit=HOUR))
    [short_b] = d.submit(make_job(gpus=8, account="team-b", time_limit=HOUR // 2))
    d.settle()
    assert d.state(head) is JobState.PENDING
    assert d.job(head).reason_plugin != "admit/clusterqueue"
    assert d.job(head).expected_start == HOUR  # when team-a's running job ends
    assert d.state(later_a) is JobState.PENDING and d.job(later_a).reason == Reason.QUOTA
    assert d.state(short_b) is JobState.RUNNING
    d.finish(short_b)
    d.finish(running_a)
    d.settle()
    assert d.state(head) is JobState.RUNNING
    # team-a's quota now has room for it (8 + 8 of 16), the nodes do not (4 free on two)
    assert d.state(later_a) is JobState.PENDING
    assert d.job(later_a).reason_plugin != "admit/clusterqueue"


def test_without_queues_none_admits_everything() -> None:
    d = EngineDriver(small_cluster(nodes=2, gpus=8), _with_queues_profile())
    jobs = submit(d, make_job(gpus=8, account="a"), 2)
    assert running(d, jobs) == 2


def test_a_job_waiting_for_quota_says_when_it_expects_to_start() -> None:
    """Issue 11: every pending job says why in quota terms, with its expected start: the
    first expected end in its cohort after which its request fits."""
    d = team_ab()
    a = submit(d, cpu_job("team-a"), 21)  # all started now, with a time limit of an hour
    [late] = submit(d, cpu_job("team-a"), 1)
    job = d.job(late)
    assert job.reason == Reason.QUOTA_CPU
    assert job.reason_message.endswith(
        f"cohort team-ab has none to lend; 1 CPUs more needed; expected start in 01:00:00, "
        f"when job {a[0]} ends"
    )
    # Two CPUs more than any end frees within the cohort's 21: none makes room.
    [big] = submit(d, cpu_job("team-a", cpus=22), 1)
    assert d.job(big).reason_message.endswith("no running job's end makes room for it")


@pytest.mark.parametrize("profile", ["kueue", "phalanx"])
def test_admission_is_never_idle_with_cluster_queues(profile: str) -> None:
    """With ClusterQueues the pass asks ``admit/clusterqueue`` for every job; without them
    only a profile that admits every job then (``without_queues: none``) skips it."""
    queued = with_queues(small_cluster(nodes=2, gpus=8), FLAVOR, cpu_queue("team-a-cq", 9))
    for cluster, expected in ((queued, False), (small_cluster(nodes=2, gpus=8), None)):
        engine = EngineDriver(cluster, profile).engine
        [plugin] = [p for p in engine.points.pre_filter if isinstance(p, ClusterQueueAdmission)]
        if expected is None:
            expected = profile == "phalanx"  # kueue falls back to admit/quota
        assert plugin.idle(engine.view) is expected
