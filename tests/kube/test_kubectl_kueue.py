"""Real kubectl against ``phalanx up --queues`` with Kueue's quickstart (single ClusterQueue,
9 CPUs): a Job with a queue name is created suspended, unsuspended once admitted, and its
Workload shows in ``kubectl get workloads``; a Job over quota stays suspended with
QuotaReserved False and the reason; deleting the Job that holds the quota admits it."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

EXAMPLES = Path("/work/shared/k8s-examples/adapted/kueue/site/static/examples")
if not EXAMPLES.exists():
    EXAMPLES = Path(__file__).parents[3] / "shared/k8s-examples/adapted/kueue/site/static/examples"
QUEUES = EXAMPLES / "admin" / "single-clusterqueue-setup.yaml"
SAMPLE_JOB = EXAMPLES / "jobs" / "sample-job.yaml"

BIG_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
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
        command: ["sh", "-c", "sleep {seconds}"]
        resources:
          requests: {{cpu: "5", memory: 1Gi}}
"""


def _phalanx(args: list[str], state: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PHALANX_STATE_DIR=str(state))
    env.pop("PHALANX_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "phalanx", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


class Kube:
    def __init__(self, root: Path, state: Path) -> None:
        self.root = root
        self.state = state
        made = _phalanx(["kubeconfig"], state)
        assert made.returncode == 0, made.stderr
        self.config = root / "kubeconfig"
        self.config.write_text(made.stdout)

    def run(self, *args: str) -> str:
        assert KUBECTL is not None
        env = dict(os.environ, KUBECONFIG=str(self.config), HOME=str(self.root))
        done = subprocess.run(
            [KUBECTL, *args], capture_output=True, text=True, env=env, timeout=120, check=False
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def fails(self, *args: str) -> str:
        """kubectl's error output for a command that must fail."""
        assert KUBECTL is not None
        env = dict(os.environ, KUBECONFIG=str(self.config), HOME=str(self.root))
        done = subprocess.run(
            [KUBECTL, *args], capture_output=True, text=True, env=env, timeout=120, check=False
        )
        assert done.returncode != 0, f"kubectl {' '.join(args)} succeeded: {done.stdout}"
        return done.stderr

    def workload_of(self, job: str) -> dict[str, Any] | None:
        uid = self.run("get", "job", job, "-o", "jsonpath={.metadata.uid}")
        found = json.loads(
            self.run("get", "workloads", "-l", f"kueue.x-k8s.io/job-uid={uid}", "-o", "json")
        )["items"]
        return found[0] if found else None

    def suspended(self, job: str) -> bool:
        return self.run("get", "job", job, "-o", "jsonpath={.spec.suspend}") == "true"


def _until(check: Callable[[], bool], timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _condition(workload: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for c in ((workload or {}).get("status") or {}).get("conditions") or ():
        if c["type"] == kind:
            return dict(c)
    return {}


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    if not QUEUES.exists():
        pytest.skip(f"no example manifests at {QUEUES}")
    with kube_up(tmp_path_factory.mktemp("kueuejobs"), 1, 8, "--queues", str(QUEUES)) as k:
        yield k


@contextlib.contextmanager
def kube_up(root: Path, nodes: int, gpus: int, *up_args: str) -> Iterator[Kube]:
    """``phalanx up`` in ``root`` (``nodes`` emulated nodes of ``gpus`` GPUs) with this
    machine's agents, as a ``Kube``; ``phalanx down`` after, and no traceback in the
    controller's log."""
    from phalanx.server.localcluster import cluster_yaml

    state = root / "state"
    config = root / "cluster.yaml"
    config.write_text(cluster_yaml(nodes, gpus))
    up = ["up", "--detach", "--port", "0", "--config", str(config), "--agents", "all"]
    started = _phalanx([*up, *up_args], state)
    assert started.returncode == 0, started.stderr
    try:
        yield Kube(root, state)
    finally:
        _phalanx(["down"], state)
        log = (state / "log" / "controller.log").read_text() if (state / "log").exists() else ""
        assert "Traceback" not in log, log


def test_the_queues_file_objects_are_served_without_an_apply(kube: Kube) -> None:
    names = kube.run("get", "resourceflavors,clusterqueues,localqueues", "-A", "-o", "name")
    assert sorted(names.split()) == [
        "clusterqueue.kueue.x-k8s.io/cluster-queue",
        "localqueue.kueue.x-k8s.io/user-queue",
        "resourceflavor.kueue.x-k8s.io/default-flavor",
    ]


def test_the_sample_job_is_suspended_then_admitted_and_listed(kube: Kube) -> None:
    kube.run("apply", "-f", str(QUEUES))
    made = kube.run(
        "create", "-f", str(SAMPLE_JOB), "-o", "jsonpath={.metadata.name} {.spec.suspend}"
    )
    name, suspend = made.split()
    assert suspend == "true"  # Kueue's webhook
    kube.run("wait", "--for=condition=complete", f"job/{name}", "--timeout=90s")
    assert not kube.suspended(name)
    rows = kube.run("get", "workloads").splitlines()
    assert rows[0].split() == ["NAME", "QUEUE", "RESERVED", "IN", "ADMITTED", "FINISHED", "AGE"]
    mine = [r.split() for r in rows[1:] if r.startswith(f"job-{name}-")]
    assert len(mine) == 1 and mine[0][1:5] == ["user-queue", "cluster-queue", "True", "True"]


def test_a_job_over_quota_waits_suspended_until_the_quota_frees(kube: Kube) -> None:
    kube.run("apply", "-f", str(QUEUES))
    first = kube.root / "first.yaml"
    first.write_text(BIG_JOB.format(name="big-first", seconds=120))
    kube.run("create", "-f", str(first))
    assert _until(
        lambda: _condition(kube.workload_of("big-first"), "Admitted").get("status") == "True"
    )
    assert _until(lambda: not kube.suspended("big-first"))

    second = kube.root / "second.yaml"
    second.write_text(BIG_JOB.format(name="big-second", seconds=1))
    kube.run("create", "-f", str(second))
    assert _until(lambda: _condition(kube.workload_of("big-second"), "QuotaReserved") != {})
    pending = _condition(kube.workload_of("big-second"), "QuotaReserved")
    assert pending["status"] == "False" and pending["reason"] == "Pending"
    assert pending["message"].startswith("couldn't assign flavors to pod set main: ")
    assert "in flavor default-flavor" in pending["message"]
    assert kube.suspended("big-second")
    assert _until(
        lambda: (
            kube.run("get", "localqueue", "user-queue", "-o", "jsonpath={.status}")
            and {
                k: v
                for k, v in json.loads(
                    kube.run("get", "localqueue", "user-queue", "-o", "jsonpath={.status}")
                ).items()
                if k in ("pendingWorkloads", "admittedWorkloads")
            }
            == {"pendingWorkloads": 1, "admittedWorkloads": 1}
        ),
        20,
    )

    first_uid = kube.run("get", "job", "big-first", "-o", "jsonpath={.metadata.uid}")
    kube.run("delete", "job", "big-first")
    owned = ["get", "workloads", "-l", f"kueue.x-k8s.io/job-uid={first_uid}", "-o", "name"]
    assert _until(lambda: kube.run(*owned) == "", 20)  # collected with its owner
    assert _until(
        lambda: _condition(kube.workload_of("big-second"), "Admitted").get("status") == "True"
    )
    kube.run("wait", "--for=condition=complete", "job/big-second", "--timeout=90s")
    assert not kube.suspended("big-second")


OLD_CLUSTER_QUEUE = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: old-style
spec:
  cohort: everyone
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: default-flavor
      resources:
      - name: cpu
        nominalQuota: 1
"""


def test_a_v1beta1_cluster_queue_reads_as_v1beta2_and_back(kube: Kube) -> None:
    path = kube.root / "old.yaml"
    path.write_text(OLD_CLUSTER_QUEUE)
    kube.run("apply", "-f", str(path))
    new = "clusterqueues.v1beta2.kueue.x-k8s.io"
    old = "clusterqueues.v1beta1.kueue.x-k8s.io"
    assert kube.run("get", new, "old-style", "-o", "jsonpath={.spec.cohortName}") == "everyone"
    assert kube.run("get", new, "old-style", "-o", "jsonpath={.spec.cohort}") == ""
    assert kube.run("get", old, "old-style", "-o", "jsonpath={.spec.cohort}") == "everyone"
    kube.run("patch", new, "old-style", "--type=merge", "-p", '{"spec":{"cohortName":"others"}}')
    assert kube.run("get", old, "old-style", "-o", "jsonpath={.spec.cohort}") == "others"
    rows = kube.run("get", "cq", "old-style").splitlines()
    assert rows[1].split()[:2] == ["old-style", "others"]
