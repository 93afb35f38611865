"""``QueuesChange``: queue objects applied through the Kubernetes API change the engine's
queues; pending jobs are admitted against the new quota from the next pass on, and the
journal keeps the change as its objects (read again on replay)."""

from __future__ import annotations

import json
from typing import Any

from phalanx.config.queue_objects import active_queues
from phalanx.domain.state import JobState
from phalanx.domain.time import HOUR
from phalanx.engine import QueuesChange
from phalanx.live.codec import decode, encode
from phalanx.testing import EngineDriver, make_job, small_cluster

KUEUE = "kueue.x-k8s.io/v1beta1"


def objects(cpus: int) -> list[dict[str, Any]]:
    groups = [
        {
            "coveredResources": ["cpu"],
            "flavors": [
                {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": cpus}]}
            ],
        }
    ]
    return [
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}},
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "team-a-cq"},
            "spec": {"namespaceSelector": {}, "resourceGroups": groups},
        },
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "default", "namespace": "team-a"},
            "spec": {"clusterQueue": "team-a-cq"},
        },
    ]


def change(at: int, cpus: int) -> QueuesChange:
    docs = objects(cpus)
    queues, inactive = active_queues(docs)
    assert not inactive
    return QueuesChange(at, queues, tuple(json.dumps(d) for d in docs))


def running(d: EngineDriver, ids: list[int]) -> int:
    return sum(d.state(i) is JobState.RUNNING for i in ids)


def test_new_quota_admits_pending_jobs_and_no_queues_admit_all() -> None:
    d = EngineDriver(small_cluster(nodes=2, gpus=8), "kueue")
    d.feed(change(d.now, 9))
    spec = make_job(gpus=0, account="team-a", cpus_per_task=1, time_limit=HOUR)
    ids = [d.submit(spec)[0] for _ in range(11)]
    d.settle()
    assert running(d, ids) == 9
    assert d.job(ids[-1]).reason_plugin == "admit/clusterqueue"
    d.feed(change(d.now + 1, 10))
    d.settle()
    assert running(d, ids) == 10
    d.feed(QueuesChange(d.now + 1, active_queues([])[0], ()))  # every queue object deleted
    d.settle()
    assert running(d, ids) == 11
    assert not d.engine.cluster.queues


def test_the_journal_keeps_the_objects_and_reads_the_same_queues_back() -> None:
    event = change(5, 12)
    kind, body = encode(event)
    assert kind == "queues"
    back = decode(kind, body)
    assert back == event
    assert isinstance(back, QueuesChange)
    quota = back.queues.cluster_queues["team-a-cq"].resource_groups[0].flavors[0].resources[0]
    assert quota.nominal == 12_000
