"""Kueue's fair sharing converges (issue 11): two ClusterQueues of equal weight and equal
demand, borrowing from a third that lends everything, end with shares that differ by at
most one workload's size, whether they arrive interleaved at random (admission order) or
one fills the cohort before the other arrives (preemption by share, default strategies)."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.config.queues import queues_from_yaml
from phalanx.domain.state import JobState
from phalanx.domain.time import HOUR, MINUTE
from phalanx.testing import EngineDriver, make_job, small_cluster

KUEUE = "apiVersion: kueue.x-k8s.io/v1beta1\n"
ON = (
    "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nfairSharing:\n  enable: true\n"
)


def _queue(name: str, nominal: int) -> str:
    return (
        KUEUE
        + f"kind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n  namespaceSelector: {{}}\n"
        + "  cohort: all\n  preemption: {reclaimWithinCohort: Any}\n"
        + "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
        + f"    - name: f\n      resources:\n      - {{name: cpu, nominalQuota: {nominal}}}\n"
    )


def _driver(lent: int) -> EngineDriver:
    docs = [KUEUE + "kind: ResourceFlavor\nmetadata: {name: f}\n", ON, _queue("lender-cq", lent)]
    for team in ("a", "b"):
        docs.append(_queue(f"{team}-cq", 0))
        docs.append(
            KUEUE + f"kind: LocalQueue\nmetadata: {{name: default, namespace: {team}}}\n"
            f"spec: {{clusterQueue: {team}-cq}}\n"
        )
    cluster = dataclasses.replace(
        small_cluster(nodes=1, gpus=8), queues=queues_from_yaml("---\n".join(docs))
    )
    return EngineDriver(cluster, "kueue")


def _used(d: EngineDriver, ids: list[int], size: int) -> int:
    return size * sum(d.state(i) is JobState.RUNNING for i in ids)


@given(
    lent=st.integers(2, 24),
    size=st.integers(1, 3),
    order=st.lists(st.booleans(), min_size=60, max_size=60),
)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_equal_weights_and_demand_split_evenly(lent: int, size: int, order: list[bool]) -> None:
    d = _driver(lent)
    jobs: dict[bool, list[int]] = {True: [], False: []}
    for team_a in order:
        spec = make_job(
            gpus=0, account="a" if team_a else "b", cpus_per_task=size, time_limit=10 * HOUR
        )
        jobs[team_a].append(d.submit(spec)[0])
    d.settle()
    a, b = _used(d, jobs[True], size), _used(d, jobs[False], size)
    demand_a, demand_b = size * len(jobs[True]), size * len(jobs[False])
    assert a + b <= lent
    if demand_a >= lent and demand_b >= lent:
        assert abs(a - b) <= size
    if a < demand_a and b < demand_b:
        assert lent - (a + b) < size  # no job that fits is left waiting


@given(lent=st.integers(2, 16), size=st.integers(1, 3))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_preemption_evens_out_a_full_cohort(lent: int, size: int) -> None:
    d = _driver(lent)
    count = lent // size + 1

    def submit(team: str) -> list[int]:
        spec = make_job(gpus=0, account=team, cpus_per_task=size, time_limit=10 * HOUR)
        return [d.submit(spec)[0] for _ in range(count)]

    a = submit("a")
    d.settle()
    assert _used(d, a, size) == (lent // size) * size
    b = submit("b")
    for _ in range(2 * count):
        d.run(until=d.now + MINUTE)
    used_a, used_b = _used(d, a, size), _used(d, b, size)
    assert used_a + used_b <= lent
    assert abs(used_a - used_b) <= size
