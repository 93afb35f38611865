"""A LocalQueue's status counts the Slurm jobs its ClusterQueue takes from its namespace
(account = namespace): pending, reserving and admitted workloads and the quota they hold
per flavor, as the ClusterQueue's does; and which LocalQueue a job counts in."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from test_queue_objects_store import FLAVOR, KUEUE, World, cluster_queue, world  # noqa: F401

from phalanx.config.clusterspec import regular_cluster
from phalanx.config.queue_objects import active_queues
from phalanx.domain.queues import QUEUE_NAME_LABEL
from phalanx.domain.time import HOUR
from phalanx.kube.queueobjects import QUEUE_RESOURCES
from phalanx.kube.queuestatus import local_queue_of
from phalanx.testing import make_job


def local_queue(namespace: str, name: str, cq: str = "cq") -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cq},
    }


def test_sbatch_jobs_are_counted_in_their_namespaces_local_queue(world: World) -> None:  # noqa: F811
    for ns in ("research", "ops"):
        world.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for obj in (
        FLAVOR,
        cluster_queue(1),
        local_queue("research", "default"),
        local_queue("ops", "default"),
    ):
        world.store.create(copy.deepcopy(obj))
    world.settle()
    spec = make_job(
        gpus=0, account="research", cpus_per_task=1, time_limit=HOUR, command=("sleep", "60")
    )
    world.controller.submit([spec, spec])  # two sbatch jobs: one runs, one waits for quota
    world.settle()
    world.queues.tick()
    resource = QUEUE_RESOURCES["LocalQueue"]
    status = (world.store.get(resource, "research", "default") or {}).get("status") or {}
    counts = {k: status.get(k) for k in ("pendingWorkloads", "reservingWorkloads")}
    assert counts == {"pendingWorkloads": 1, "reservingWorkloads": 1}
    assert status["admittedWorkloads"] == 1
    assert status["flavorsUsage"] == [
        {"name": "default-flavor", "resources": [{"name": "cpu", "total": "1"}]}
    ]
    assert status["flavorsReservation"] == status["flavorsUsage"]
    # another namespace's LocalQueue of the same ClusterQueue holds none of them
    other = (world.store.get(resource, "ops", "default") or {}).get("status") or {}
    assert (other.get("pendingWorkloads"), other.get("admittedWorkloads")) == (0, 0)
    assert other["flavorsUsage"][0]["resources"][0]["total"] == "0"
    # and the ClusterQueue's counts are the sum of its LocalQueues'
    cq = world.cq_status()
    assert (cq["pendingWorkloads"], cq["admittedWorkloads"]) == (1, 1)


def test_which_local_queue_a_job_counts_in() -> None:
    objects: list[dict[str, Any]] = [
        copy.deepcopy(FLAVOR),
        cluster_queue(4),
        {**cluster_queue(4), "metadata": {"name": "gpu-cq"}},
        local_queue("research", "a-team", "gpu-cq"),
        local_queue("research", "b-team"),
        local_queue("research", "c-team"),
        local_queue("research", "default", "gpu-cq"),
    ]
    queues, inactive = active_queues(objects)
    assert not inactive
    base = regular_cluster(2, 1, 2)
    part = next(iter(base.partitions.values()))
    routed = dataclasses.replace(part, cluster_queue="cq")
    cluster = dataclasses.replace(base, queues=queues, partitions={part.name: routed})
    sbatch = make_job(gpus=0, account="research", command=("true",))
    # routed by its partition to cq: the first LocalQueue of its namespace that leads there
    assert local_queue_of(cluster, sbatch) == ("research", "b-team")
    labelled = dataclasses.replace(sbatch, extra=((QUEUE_NAME_LABEL, "c-team"),))
    assert local_queue_of(cluster, labelled) == ("research", "c-team")
    # unrouted: its namespace's LocalQueue "default", as Kueue's default LocalQueue
    plain = dataclasses.replace(base, queues=queues)
    assert local_queue_of(plain, sbatch) == ("research", "default")
    elsewhere = dataclasses.replace(sbatch, account="nobody")
    assert local_queue_of(plain, elsewhere) is None
