"""Real kubectl against ``phalanx up --queues`` with Kueue's quickstart ClusterQueue (9 CPUs):
Kueue's own sample PyTorchJob, applied while a Job holds the quota, waits suspended with no
pods and its Workload says why (QuotaReserved False); once the quota frees it is admitted,
unsuspended, its pods made, and it succeeds."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from test_kubectl_kueue import EXAMPLES, KUBECTL, QUEUES, Kube, _condition, _until, kube_up

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

SAMPLE_PYTORCHJOB = EXAMPLES / "jobs" / "sample-pytorchjob.yaml"

HOLDER = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: holder
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "sleep 300"]
        resources:
          requests: {cpu: "8", memory: 1Gi}
"""


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    if not SAMPLE_PYTORCHJOB.exists():
        pytest.skip(f"no example manifest at {SAMPLE_PYTORCHJOB}")
    with kube_up(tmp_path_factory.mktemp("kueuetraining"), 1, 8, "--queues", str(QUEUES)) as k:
        yield k


def _workload(kube: Kube, kind: str, name: str) -> dict[str, object] | None:
    uid = kube.run("get", kind, name, "-o", "jsonpath={.metadata.uid}")
    found = json.loads(
        kube.run("get", "workloads", "-l", f"kueue.x-k8s.io/job-uid={uid}", "-o", "json")
    )["items"]
    return found[0] if found else None


def _pods(kube: Kube, job: str) -> list[str]:
    return kube.run(
        "get", "pods", "-l", f"training.kubeflow.org/job-name={job}", "-o", "name"
    ).split()


def test_a_pytorchjob_over_quota_waits_suspended_without_pods(kube: Kube) -> None:
    holder = kube.root / "holder.yaml"
    holder.write_text(HOLDER)
    kube.run("apply", "-f", str(holder))
    assert _until(lambda: _condition(_workload(kube, "job", "holder"), "Admitted") != {})

    kube.run("apply", "-f", str(SAMPLE_PYTORCHJOB))
    suspend = "jsonpath={.spec.runPolicy.suspend}"
    assert kube.run("get", "pytorchjob", "pytorch-simple", "-o", suspend) == "true"
    assert _until(
        lambda: _condition(_workload(kube, "pytorchjob", "pytorch-simple"), "QuotaReserved") != {}
    )
    pending = _condition(_workload(kube, "pytorchjob", "pytorch-simple"), "QuotaReserved")
    assert pending["status"] == "False" and pending["reason"] == "Pending"
    assert pending["message"].startswith("couldn't assign flavors to pod set master: ")
    assert "in flavor default-flavor" in pending["message"]
    rows = kube.run("get", "workloads").splitlines()
    mine = [r.split() for r in rows[1:] if r.startswith("pytorchjob-pytorch-simple-")]
    # RESERVED IN and ADMITTED blank, as Kueue's printer columns leave them while pending
    assert len(mine) == 1 and mine[0][1] == "user-queue" and len(mine[0]) == 3
    assert _pods(kube, "pytorch-simple") == []
    assert kube.run("get", "pytorchjob", "pytorch-simple", "-o", suspend) == "true"

    kube.run("delete", "-f", str(holder))
    kube.run(
        "wait",
        "--for=condition=Succeeded",
        "pytorchjob/pytorch-simple",
        "--timeout=120s",
    )
    assert kube.run("get", "pytorchjob", "pytorch-simple", "-o", suspend) == "false"
    assert sorted(_pods(kube, "pytorch-simple")) == [
        "pod/pytorch-simple-master-0",
        "pod/pytorch-simple-worker-0",
    ]
    done = _workload(kube, "pytorchjob", "pytorch-simple")
    assert _condition(done, "Admitted")["status"] == "True"
    assert _condition(done, "Finished")["reason"] == "Succeeded"
    kube.run("delete", "-f", str(SAMPLE_PYTORCHJOB))
