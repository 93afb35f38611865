"""A partition or QOS that names a ClusterQueue (issue 11: "Slurm on the same model"): Slurm
users' jobs (``sbatch -p``, ``--qos``) land in a Kueue ClusterQueue without Kubernetes'
labels; a job that names a LocalQueue still goes by it; a name that no ClusterQueue has is a
configuration error naming the field."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from phalanx.config.clusterspec import check_queue_routes, cluster_from_yaml
from phalanx.domain.queues import QUEUE_NAME_LABEL
from phalanx.domain.state import JobState
from phalanx.domain.time import HOUR
from phalanx.errors import ConfigError
from phalanx.testing import EngineDriver, make_job

QUEUES = """
  - {apiVersion: kueue.x-k8s.io/v1beta1, kind: ResourceFlavor, metadata: {name: gpus}}
  - apiVersion: kueue.x-k8s.io/v1beta1
    kind: ClusterQueue
    metadata: {name: train}
    spec:
      namespaceSelector: {}
      resourceGroups:
      - coveredResources: [cpu, nvidia.com/gpu]
        flavors:
        - name: gpus
          resources: [{name: cpu, nominalQuota: 256}, {name: nvidia.com/gpu, nominalQuota: 8}]
  - apiVersion: kueue.x-k8s.io/v1beta1
    kind: ClusterQueue
    metadata: {name: urgent}
    spec:
      namespaceSelector: {}
      resourceGroups:
      - coveredResources: [cpu, nvidia.com/gpu]
        flavors:
        - name: gpus
          resources: [{name: cpu, nominalQuota: 256}, {name: nvidia.com/gpu, nominalQuota: 4}]
  - apiVersion: kueue.x-k8s.io/v1beta1
    kind: LocalQueue
    metadata: {name: mine, namespace: research}
    spec: {clusterQueue: urgent}
"""


def _cluster(partition_cq: str = "train", qos_cq: str = "urgent", queues: str = QUEUES) -> str:
    return (
        textwrap.dedent(
            f"""\
        nodes:
          - {{names: "n[1-4]", gpus: 8, gpu_model: H100, cpus: 64, memory: 512G}}
        partitions:
          - {{name: batch, default: true, cluster_queue: {partition_cq}}}
          - {{name: debug}}
        accounts:
          - {{name: research}}
        qos:
          - {{name: fast, priority: 10, cluster_queue: {qos_cq}}}
        queues:
        """
        )
        + queues
    )


def test_yaml_reads_the_routes() -> None:
    cluster = cluster_from_yaml(_cluster())
    assert cluster.partitions["batch"].cluster_queue == "train"
    assert cluster.partitions["debug"].cluster_queue is None
    assert cluster.qos["fast"].cluster_queue == "urgent"
    check_queue_routes(cluster, "c.yaml")  # both exist: no error


def test_routing_order_label_then_qos_then_partition_then_default_local_queue() -> None:
    cluster = cluster_from_yaml(_cluster())

    def cq(**extra: object) -> str | None:
        found, why = cluster.cluster_queue_of(make_job(gpus=1, account="research", **extra))
        return found.name if found is not None else why

    assert cq() == "train"  # the default partition's
    assert cq(partition="batch") == "train"
    assert cq(qos="fast") == "urgent"  # the QOS's comes before the partition's
    assert cq(partition="batch", extra=((QUEUE_NAME_LABEL, "mine"),)) == "urgent"
    # No route and no LocalQueue "default" in the namespace: Kueue's message.
    assert cq(partition="debug") == "LocalQueue default doesn't exist in namespace research"


def test_a_route_to_a_missing_cluster_queue_names_the_field() -> None:
    cluster = cluster_from_yaml(_cluster(partition_cq="nosuch"))
    with pytest.raises(ConfigError) as err:
        check_queue_routes(cluster, "c.yaml")
    text = str(err.value)
    assert "c.yaml" in text and "partitions.batch.cluster_queue" in text
    assert "no ClusterQueue named 'nosuch' (ClusterQueues: train, urgent)" in text


def test_jobs_of_a_routed_partition_are_held_to_its_nominal_quota() -> None:
    """Partition ``batch`` -> ClusterQueue ``train`` (8 GPUs, no cohort): of three 4-GPU jobs
    two run and the third waits in quota terms, though the cluster has 32 GPUs; a QOS
    ``fast`` job goes to ``urgent`` (4 GPUs) and runs beside them."""
    cluster = cluster_from_yaml(_cluster())
    d = EngineDriver(cluster, "kueue")
    batch = [d.submit(make_job(gpus=4, account="research", time_limit=HOUR))[0] for _ in range(3)]
    fast = d.submit(make_job(gpus=4, account="research", qos="fast", time_limit=HOUR))[0]
    d.settle()
    states = [d.state(i) for i in batch]
    assert states.count(JobState.RUNNING) == 2 and states.count(JobState.PENDING) == 1
    waiting = d.job(batch[states.index(JobState.PENDING)])
    assert "train" in (waiting.reason_message or "")
    assert d.state(fast) is JobState.RUNNING


def test_queues_replaced_later_are_checked_too() -> None:
    """``--queues FILE`` replaces the YAML's queue objects: the routes are checked against
    what the cluster finally runs with."""
    cluster = cluster_from_yaml(_cluster(queues="  []\n"))
    cluster = dataclasses.replace(cluster, queues=cluster_from_yaml(_cluster()).queues)
    check_queue_routes(cluster, "q.yaml")
    with pytest.raises(ConfigError, match=r"partitions\.batch\.cluster_queue"):
        check_queue_routes(cluster_from_yaml(_cluster(queues="  []\n")), "c.yaml")
