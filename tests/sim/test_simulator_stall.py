"""A replay ends when nothing more can happen, though jobs are left waiting: a job no
LocalQueue admits waits forever (as in Kueue), and the priority recalculation's timer, set
while the queue is not empty, used to keep the run going forever."""

from __future__ import annotations

import dataclasses

from phalanx.config.clusterspec import regular_cluster
from phalanx.config.queues import queues_from_yaml
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import HOUR, MINUTE
from phalanx.policies.catalog import profile
from phalanx.sim.simulator import Simulator
from phalanx.sim.workload import TraceJob

QUEUES = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: lab}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu]
    flavors:
    - name: gpu
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 16}
      - {name: cpu, nominalQuota: 1000}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: default, namespace: research}
spec: {clusterQueue: lab}
"""


def test_a_job_no_queue_admits_is_left_unfinished_and_the_replay_ends() -> None:
    cluster = dataclasses.replace(regular_cluster(2, 8, 2), queues=queues_from_yaml(QUEUES))
    admitted = JobSpec(account="research", gpus_per_task=8, time_limit=2 * HOUR)
    orphan = JobSpec(account="nobody", gpus_per_task=8, time_limit=2 * HOUR)
    work = [
        TraceJob(0, admitted, HOUR, "a"),
        TraceJob(MINUTE, orphan, HOUR, "o"),
        TraceJob(2 * MINUTE, admitted, 3 * HOUR, "b"),
    ]
    for name in ("phalanx", "kueue", "slurm"):
        run = Simulator(cluster, profile(name), work).run()
        ends = {j.job_id: j.end for j in run.jobs}
        assert ends[1] is not None and ends[3] is not None, name
        if name != "slurm":  # slurm's profile does not use ClusterQueues
            assert ends[2] is None, name
