"""``fairSharing.weightedShare`` in the ClusterQueue status: Kueue's integer, present only
with fair sharing on."""

from __future__ import annotations

import dataclasses

from phalanx.config.queues import queues_from_yaml
from phalanx.domain.time import HOUR
from phalanx.kube.queuestatus import cluster_queue_status
from phalanx.testing import EngineDriver, make_job, small_cluster

KUEUE = "apiVersion: kueue.x-k8s.io/v1beta1\n"
ON = (
    "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nfairSharing:\n  enable: true\n"
)


def _queue(name: str, nominal: int, weight: int) -> str:
    return (
        KUEUE
        + f"kind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n  namespaceSelector: {{}}\n"
        + f"  cohort: all\n  fairSharing: {{weight: {weight}}}\n"
        + "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
        + f"    - name: f\n      resources:\n      - {{name: cpu, nominalQuota: {nominal}}}\n"
    )


def _status(fair: bool) -> dict[str, dict[str, object]]:
    docs = [
        KUEUE + "kind: ResourceFlavor\nmetadata: {name: f}\n",
        _queue("a-cq", 2, 2),
        _queue("lender-cq", 8, 1),
        KUEUE + "kind: LocalQueue\nmetadata: {name: default, namespace: a}\n"
        "spec: {clusterQueue: a-cq}\n",
        *([ON] if fair else []),
    ]
    cluster = dataclasses.replace(
        small_cluster(nodes=1, gpus=8), queues=queues_from_yaml("---\n".join(docs))
    )
    d = EngineDriver(cluster, "kueue")
    for _ in range(5):  # 5 CPUs: 3 borrowed of the cohort's 10
        d.submit(make_job(gpus=0, account="a", cpus_per_task=1, time_limit=10 * HOUR))
    d.settle()
    return cluster_queue_status(cluster, [d.job(i) for i in range(1, 6)])


def test_weighted_share_reported_when_fair_sharing_is_on() -> None:
    status = _status(True)
    assert status["a-cq"]["admittedWorkloads"] == 5
    # 3 borrowed of 10 lendable: 300 per mille, over weight 2.
    assert status["a-cq"]["fairSharing"] == {"weightedShare": 150}
    assert status["lender-cq"]["fairSharing"] == {"weightedShare": 0}
    assert "fairSharing" not in _status(False)["a-cq"]
