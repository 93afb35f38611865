"""Kueue's fair sharing (docs ``concepts/fair_sharing`` and ``concepts/preemption`` "Fair
Sharing"): the Configuration switch, the weighted share, the admission order it gives and
the preemption it allows, in scenarios with Kueue's documented outcome."""

from __future__ import annotations

import dataclasses

import pytest

from phalanx.config.queues import queues_from_yaml
from phalanx.domain.cluster import Cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.queues import FairSharingStrategy
from phalanx.domain.queues.quota import QuotaTree
from phalanx.domain.state import JobState
from phalanx.domain.time import HOUR
from phalanx.engine import QueuesChange
from phalanx.engine.decisions import Preempted
from phalanx.errors import ConfigError
from phalanx.policies.clusterqueue.fairshare import UNBOUNDED, may_preempt_from, share
from phalanx.testing import EngineDriver, make_job, small_cluster

KUEUE = "apiVersion: kueue.x-k8s.io/v1beta1\n"
FLAVOR = KUEUE + "kind: ResourceFlavor\nmetadata: {name: default-flavor}\n"
FAIR = "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nfairSharing:\n"
ON = FAIR + "  enable: true\n"
COHORT = "team-ab"


def cq(name: str, nominal: int, *, weight: str | None = None, reclaim: str = "Never") -> str:
    """A ClusterQueue of Kueue's examples: CPUs of ``default-flavor`` in cohort team-ab."""
    return (
        KUEUE
        + f"kind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n  namespaceSelector: {{}}\n"
        + f"  cohort: {COHORT}\n"
        + (f"  fairSharing: {{weight: {weight}}}\n" if weight is not None else "")
        + f"  preemption: {{reclaimWithinCohort: {reclaim}, withinClusterQueue: Never}}\n"
        + "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
        + "    - name: default-flavor\n      resources:\n"
        + f"      - {{name: cpu, nominalQuota: {nominal}}}\n"
    )


def local(namespace: str) -> str:
    return (
        KUEUE + f"kind: LocalQueue\nmetadata: {{name: default, namespace: {namespace}}}\n"
        f"spec: {{clusterQueue: {namespace}-cq}}\n"
    )


def driver(*documents: str, namespaces: tuple[str, ...] = ("team-a", "team-b")) -> EngineDriver:
    text = "---\n".join([FLAVOR, *documents, *(local(n) for n in namespaces)])
    base = small_cluster(nodes=1, gpus=8)
    cluster: Cluster = dataclasses.replace(base, queues=queues_from_yaml(text))
    return EngineDriver(cluster, "kueue")


def job(namespace: str, cpus: int = 1) -> JobSpec:
    return make_job(gpus=0, account=namespace, cpus_per_task=cpus, time_limit=10 * HOUR)


def submit(d: EngineDriver, namespace: str, count: int, cpus: int = 1) -> list[int]:
    return [d.submit(job(namespace, cpus))[0] for _ in range(count)]


def running(d: EngineDriver, ids: list[int]) -> int:
    return sum(d.state(i) is JobState.RUNNING for i in ids)


# -- the switch -------------------------------------------------------------------------------


def test_configuration_switch_defaults_and_strategies() -> None:
    assert not queues_from_yaml(FLAVOR).fair_sharing.enable
    plain = queues_from_yaml(FLAVOR + "---\n" + ON).fair_sharing
    assert plain.enable
    assert plain.preemption_strategies == (
        FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
        FairSharingStrategy.LESS_THAN_INITIAL_SHARE,
    )
    one = queues_from_yaml(ON + "  preemptionStrategies: [LessThanInitialShare]\n")
    assert one.fair_sharing.preemption_strategies == (FairSharingStrategy.LESS_THAN_INITIAL_SHARE,)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (ON + "  preemptionStrategies: [Fairest]\n", "Fairest"),
        (ON + "  preemptionStrategies: []\n", "at least one"),
        (ON + "  bogus: 1\n", "bogus"),
        (FAIR + "  enable: maybe\n", "enable"),
        (ON + "---\n" + ON, "duplicate Configuration"),
        (ON.replace("config.kueue.x-k8s.io/v1beta1", "v1"), "not served"),
        (ON + "manageJobsWithoutQueueName: true\n", "manageJobsWithoutQueueName"),
    ],
)
def test_configuration_errors_name_the_field(text: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        queues_from_yaml(text, "queues.yaml")
    message = str(info.value)
    assert words in message and "queues.yaml" in message


# -- the share --------------------------------------------------------------------------------


def _tree(weight_b: str = "1") -> QuotaTree:
    return QuotaTree(
        queues_from_yaml(
            "---\n".join(
                [FLAVOR, cq("team-a-cq", 3), cq("team-b-cq", 3, weight=weight_b), cq("c-cq", 6)]
            )
        )
    )


def test_share_is_borrowed_over_lendable_in_thousandths_over_weight() -> None:
    tree = _tree("2")
    a, b = tree.queues["team-a-cq"], tree.queues["team-b-cq"]
    fr = ("default-flavor", "cpu")
    assert share(a, 1.0) == 0
    a.add(fr, 3 * 1000)
    assert share(a, 1.0) == 0  # within nominal: borrows nothing
    a.add(fr, 3 * 1000)
    assert share(a, 1.0) == 3 * 1000 * 1000 // (12 * 1000)  # 3 of the cohort's 12: 250
    assert share(a, 1.0, {fr: -1000}) == 166  # without one CPU: 2/12
    b.add(fr, 6 * 1000)
    assert share(b, 2.0) == 125  # the same borrowing, twice the weight
    assert share(b, 0.0) == UNBOUNDED
    assert share(a, 0.0, {fr: -3000}) == 0  # weight 0 borrowing nothing: share 0


def test_strategies() -> None:
    lte, lt = (
        FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
        FairSharingStrategy.LESS_THAN_INITIAL_SHARE,
    )
    assert may_preempt_from(lte, 200, 300, 200) and not may_preempt_from(lte, 201, 300, 200)
    assert may_preempt_from(lt, 299, 300, 0) and not may_preempt_from(lt, 300, 300, 0)


# -- admission order --------------------------------------------------------------------------


def _borrowers(fair: bool, weight_b: str) -> tuple[int, int]:
    """team-a-cq and team-b-cq have no quota; lender-cq lends 12 CPUs. team-a submits 12
    jobs, then team-b 12: the running count of each."""
    docs = [cq("team-a-cq", 0), cq("team-b-cq", 0, weight=weight_b), cq("lender-cq", 12)]
    d = driver(*docs, *([ON] if fair else []))
    a = submit(d, "team-a", 12)
    b = submit(d, "team-b", 12)
    d.settle()
    return running(d, a), running(d, b)


def test_off_admission_is_queue_order() -> None:
    assert _borrowers(False, "2") == (12, 0)


def test_fair_admission_splits_borrowing_by_weight() -> None:
    """ "the share value ... determines how resources are shared": with equal weights the
    borrowed 12 CPUs split 6/6; with team-b's weight 2, team-b gets twice team-a's."""
    assert _borrowers(True, "1") == (6, 6)
    assert _borrowers(True, "2") == (4, 8)


def test_weight_zero_borrows_last() -> None:
    """ "A weight of 0 represents an infinite share value": such a queue borrows only once
    nobody else would."""
    assert _borrowers(True, "0") == (12, 0)


# -- preemption -------------------------------------------------------------------------------


def _reclaim(strategies: str = "") -> tuple[EngineDriver, list[int], list[int]]:
    """team-a-cq, team-b-cq and c-cq have 3 CPUs each; team-a runs 9 jobs (borrowing 6,
    share 666) while the others are idle; team-b (reclaimWithinCohort: Any) submits 6."""
    config = ON + (f"  preemptionStrategies: [{strategies}]\n" if strategies else "")
    d = driver(cq("team-a-cq", 3), cq("team-b-cq", 3, reclaim="Any"), cq("c-cq", 3), config)
    a = submit(d, "team-a", 9)
    d.settle()
    assert running(d, a) == 9
    b = submit(d, "team-b", 6)
    for _ in range(6):
        d.settle()
    return d, a, b


def _preempted(d: EngineDriver) -> set[int]:
    return {e.job_id for e in d.decisions(Preempted)}


@pytest.mark.parametrize("strategies", ["", "LessThanOrEqualToFinalShare", "LessThanInitialShare"])
def test_fair_preemption_stops_when_shares_meet(strategies: str) -> None:
    """Within its nominal quota team-b takes back 3; beyond it, it preempts while its share
    after admission stays at most team-a's after the preemption (or below team-a's before):
    its 4th job (share 111 against team-a's 222 once it loses a 4th job) is admitted, its
    5th (222 against 111 after, or against 222 before) is not. Classic preemption stops at
    nominal."""
    d, a, b = _reclaim(strategies)
    assert _preempted(d) <= set(a) and len(_preempted(d)) == 4
    assert running(d, b) == 4 and running(d, a) == 5


def test_weight_zero_is_preempted_first() -> None:
    """team-z-cq (weight 0) and team-a-cq both borrow; team-b reclaims from team-z only."""
    docs = [
        cq("team-a-cq", 2),
        cq("team-z-cq", 2, weight="0"),
        cq("team-b-cq", 4, reclaim="Any"),
        ON,
    ]
    d = driver(*docs, namespaces=("team-a", "team-b", "team-z"))
    a = submit(d, "team-a", 4)
    z = submit(d, "team-z", 4)
    d.settle()
    assert running(d, a) == 4 and running(d, z) == 4
    b = submit(d, "team-b", 2)
    for _ in range(3):
        d.settle()
    assert running(d, b) == 2
    assert _preempted(d) <= set(z) and len(_preempted(d)) == 2


def test_queue_objects_from_the_api_keep_the_managers_fair_sharing() -> None:
    """Kueue's Configuration is no API object: a ``QueuesChange`` (ClusterQueues edited
    through the API) leaves fair sharing as the cluster was started with."""
    d = driver(cq("team-a-cq", 0), cq("team-b-cq", 0), cq("lender-cq", 12), ON)
    edited = queues_from_yaml(
        "---\n".join([FLAVOR, cq("team-a-cq", 0), cq("team-b-cq", 0), cq("lender-cq", 12)])
    )
    assert not edited.fair_sharing.enable
    d.feed(QueuesChange(d.now, edited))
    assert d.engine.cluster.queues.fair_sharing.enable
    assert d.engine.cluster.queues.cluster_queues == edited.cluster_queues


@pytest.mark.parametrize(
    ("strategies", "preempts"),
    [("", True), ("LessThanOrEqualToFinalShare", False), ("LessThanInitialShare", True)],
)
def test_less_than_initial_share_is_the_second_chance(strategies: str, preempts: bool) -> None:
    """lender-cq lends 6 CPUs; team-a runs two 2-CPU jobs (share 666), team-b two 1-CPU jobs
    (333); team-b's third would bring it to 500. Taking a team-a job leaves team-a at 333:
    LessThanOrEqualToFinalShare refuses (500 > 333), LessThanInitialShare allows (500 < 666),
    and the default list tries the second after the first."""
    config = ON + (f"  preemptionStrategies: [{strategies}]\n" if strategies else "")
    d = driver(cq("team-a-cq", 0), cq("team-b-cq", 0, reclaim="Any"), cq("lender-cq", 6), config)
    a = submit(d, "team-a", 2, cpus=2)
    d.settle()
    b = submit(d, "team-b", 2)
    d.settle()
    assert running(d, a) == 2 and running(d, b) == 2
    [third] = submit(d, "team-b", 1)
    for _ in range(3):
        d.settle()
    assert (len(_preempted(d)) == 1) is preempts
    assert _preempted(d) <= set(a)
    assert (d.state(third) is JobState.RUNNING) is preempts
