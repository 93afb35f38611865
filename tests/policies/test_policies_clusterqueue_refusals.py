"""A pass answers a job of a kind it already refused (same shape, same queue route) without
looking its ClusterQueue up again: the answer must be the one the full check gives."""

from __future__ import annotations

import dataclasses

from phalanx.config.queues import queues_from_yaml
from phalanx.domain.cluster import Cluster, Qos
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.queues import QUEUE_NAME_LABEL
from phalanx.domain.state import JobState, Reason
from phalanx.domain.time import HOUR
from phalanx.testing import EngineDriver, make_job, small_cluster

KUEUE = "apiVersion: kueue.x-k8s.io/v1beta1\n"
FLAVOR = KUEUE + "kind: ResourceFlavor\nmetadata: {name: default-flavor}\n"


def cpu_queue(name: str, nominal: int, strategy: str = "BestEffortFIFO") -> str:
    """A ClusterQueue of ``nominal`` CPUs of ``default-flavor``, all namespaces, no cohort."""
    return (
        KUEUE
        + f"kind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n  namespaceSelector: {{}}\n"
        + f"  queueingStrategy: {strategy}\n"
        + "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
        + "    - name: default-flavor\n      resources:\n"
        + f"      - {{name: cpu, nominalQuota: {nominal}}}\n"
    )


def local(namespace: str, cq: str) -> str:
    return (
        KUEUE + f"kind: LocalQueue\nmetadata: {{name: default, namespace: {namespace}}}\n"
        f"spec: {{clusterQueue: {cq}}}\n"
    )


def with_queues(*documents: str) -> Cluster:
    cluster = small_cluster(nodes=2, gpus=8)
    return dataclasses.replace(cluster, queues=queues_from_yaml("---\n".join(documents)))


def cpu_job(namespace: str, cpus: int, **extra: object) -> JobSpec:
    return make_job(gpus=0, account=namespace, cpus_per_task=cpus, time_limit=HOUR, **extra)


def _one_queue(strategy: str) -> EngineDriver:
    """team-a-cq: 4 CPUs, no cohort; it runs a 4-CPU job, so it has no quota left."""
    cluster = with_queues(FLAVOR, cpu_queue("team-a-cq", 4, strategy), local("team-a", "team-a-cq"))
    d = EngineDriver(cluster, "kueue")
    d.submit(cpu_job("team-a", cpus=4))
    d.settle()
    return d


def test_jobs_of_a_refused_kind_are_refused_alike_in_best_effort_fifo() -> None:
    d = _one_queue("BestEffortFIFO")
    ids = [d.submit(cpu_job("team-a", cpus=2))[0] for _ in range(3)]
    d.settle()
    jobs = [d.job(i) for i in ids]
    assert all(j.state is JobState.PENDING and j.reason == Reason.QUOTA_CPU for j in jobs)
    assert "has no cohort to borrow from" in jobs[0].reason_message
    assert {j.reason_message for j in jobs} == {jobs[0].reason_message}


def test_jobs_behind_a_strict_fifo_head_all_wait_for_it() -> None:
    d = _one_queue("StrictFIFO")
    head, *later = (d.submit(cpu_job("team-a", cpus=2))[0] for _ in range(3))
    d.settle()
    assert d.job(head).reason == Reason.QUOTA_CPU
    for job_id in later:
        job = d.job(job_id)
        assert job.reason == Reason.PRIORITY
        assert f"admits nothing before job {head}" in job.reason_message


def test_naming_the_default_local_queue_is_another_route_than_naming_none() -> None:
    # QOS "routed" sends jobs that name no LocalQueue to full-cq (no quota left); a job that
    # names LocalQueue "default" goes where that points (team-a-cq, with room), although
    # both ask the same of the same namespace and QOS.
    cluster = with_queues(
        FLAVOR, cpu_queue("team-a-cq", 8), cpu_queue("full-cq", 1), local("team-a", "team-a-cq")
    )
    qos = Qos("routed", cluster_queue="full-cq")
    cluster = dataclasses.replace(cluster, qos={**cluster.qos, "routed": qos})
    d = EngineDriver(cluster, "kueue")
    [by_qos] = d.submit(cpu_job("team-a", cpus=2, qos="routed"))
    [named] = d.submit(
        cpu_job("team-a", cpus=2, qos="routed", extra=((QUEUE_NAME_LABEL, "default"),))
    )
    d.settle()
    assert d.state(by_qos) is JobState.PENDING
    assert "full-cq" in d.job(by_qos).reason_message
    assert d.state(named) is JobState.RUNNING
