"""Real kubectl (and the ``kubernetes`` Python client) against ``phalanx up``: discovery,
apply, get in its output formats, watch, delete, and objects kept across a restart."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

EXAMPLES = Path("/work/shared/k8s-examples/adapted/kueue/site/static/examples")
if not EXAMPLES.exists():
    EXAMPLES = Path(__file__).parents[3] / "shared/k8s-examples/adapted/kueue/site/static/examples"
QUEUES = EXAMPLES / "admin" / "single-clusterqueue-setup.yaml"

NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
  labels:
    team: a
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
        self.config = root / "kubeconfig"

    def refresh(self) -> None:
        out = _phalanx(["kubeconfig"], self.state)
        assert out.returncode == 0, out.stderr
        self.config.write_text(out.stdout)

    def env(self) -> dict[str, str]:
        # HOME: kubectl's discovery cache stays in the test's directory.
        return dict(os.environ, KUBECONFIG=str(self.config), HOME=str(self.root))

    def run(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        done = subprocess.run(
            [KUBECTL, *args], capture_output=True, text=True, env=self.env(), timeout=60
        )
        if ok:
            assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    if not QUEUES.exists():
        pytest.skip(f"no example manifests at {QUEUES}")
    from phalanx.server.localcluster import cluster_yaml

    root = tmp_path_factory.mktemp("kube")
    state = root / "state"
    config = root / "cluster.yaml"
    config.write_text(cluster_yaml(1, 8))
    up = ["up", "--detach", "--port", "0", "--config", str(config), "--agents", "none"]
    started = _phalanx(up, state)
    assert started.returncode == 0, started.stderr
    assert "kube    https://127.0.0.1:" in started.stdout
    k = Kube(root, state)
    k.refresh()
    try:
        yield k
    finally:
        _phalanx(["down"], state)
        log = (state / "log" / "controller.log").read_text() if (state / "log").exists() else ""
        assert "Traceback" not in log, log


def test_discovery_as_kubectl_reads_it(kube: Kube) -> None:
    out = kube.run("api-resources").stdout
    rows = {tuple(line.split()[:2]) for line in out.splitlines()}
    assert ("clusterqueues", "cq") in rows and ("pods", "po") in rows
    assert "batch.volcano.sh/v1alpha1" in out and "kubeflow.org/v1" in out
    assert "Server Version: v1.32" in kube.run("version").stdout


def test_apply_get_watch_delete_the_kueue_queues(kube: Kube) -> None:
    ns = kube.root / "namespace.yaml"
    ns.write_text(NAMESPACE)
    applied = kube.run("apply", "--validate=false", "-f", str(QUEUES), "-f", str(ns)).stdout
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue created" in applied
    assert "namespace/team-a created" in applied
    again = kube.run("apply", "--validate=false", "-f", str(QUEUES)).stdout
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue unchanged" in again

    wide = kube.run("get", "cq", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[:3] == ["NAME", "COHORT", "STRATEGY"]
    assert wide[1].split()[:2] == ["cluster-queue", "BestEffortFIFO"]
    yaml_out = kube.run("get", "lq", "user-queue", "-n", "default", "-o", "yaml").stdout
    assert (
        "apiVersion: kueue.x-k8s.io/v1beta2" in yaml_out
        and "clusterQueue: cluster-queue" in yaml_out
    )
    quota = kube.run(
        "get",
        "cq",
        "cluster-queue",
        "-o",
        "jsonpath={.spec.resourceGroups[0].flavors[0].resources[1].nominalQuota}",
    ).stdout
    assert quota == "36Gi"
    labelled = kube.run("get", "ns", "-l", "team=a", "-o", "name").stdout.split()
    assert labelled == ["namespace/team-a"]

    # get --watch sees a change made meanwhile, then ends at its timeout.
    assert KUBECTL is not None
    watcher = subprocess.Popen(
        [KUBECTL, "get", "lq", "-A", "--watch", "--request-timeout=8s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=kube.env(),
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(watcher.stdout or []), daemon=True)
    reader.start()
    deadline = time.monotonic() + 20
    while not any("user-queue" in line for line in lines) and time.monotonic() < deadline:
        time.sleep(0.1)
    lq = kube.root / "lq.yaml"
    lq.write_text(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n"
        "  name: team-queue\n  namespace: team-a\nspec:\n  clusterQueue: cluster-queue\n"
    )
    kube.run("apply", "--validate=false", "-f", str(lq))
    while not any("team-queue" in line for line in lines) and time.monotonic() < deadline:
        time.sleep(0.1)
    watcher.terminate()
    watcher.wait(timeout=10)
    reader.join(timeout=10)
    if watcher.stdout is not None:
        watcher.stdout.close()
    assert any("team-queue" in line and "team-a" in line for line in lines), lines

    deleted = kube.run("delete", "-f", str(QUEUES)).stdout
    assert 'clusterqueue.kueue.x-k8s.io "cluster-queue" deleted' in deleted
    missing = kube.run("get", "cq", "cluster-queue", ok=False)
    assert missing.returncode == 1
    assert 'clusterqueues.kueue.x-k8s.io "cluster-queue" not found' in missing.stderr
    kube.run("delete", "-f", str(ns))
    assert "team-queue" not in kube.run("get", "lq", "-A").stdout  # went with its namespace


def test_create_namespace_needs_protobuf(kube: Kube) -> None:
    try:
        import phalanx.kube.protobuf  # noqa: F401
    except ImportError:
        pytest.skip("phalanx.kube.protobuf has not landed: kubectl create namespace sends protobuf")
    kube.run("create", "namespace", "made-by-generator")
    assert "made-by-generator" in kube.run("get", "ns").stdout


def test_a_bad_token_is_unauthorized(kube: Kube) -> None:
    bad = kube.root / "bad-kubeconfig"
    bad.write_text(kube.config.read_text().replace("token: ", "token: x"))
    assert KUBECTL is not None
    done = subprocess.run(
        [KUBECTL, "get", "ns"],
        capture_output=True,
        text=True,
        env=dict(kube.env(), KUBECONFIG=str(bad)),
        timeout=60,
    )
    assert done.returncode == 1 and "Unauthorized" in done.stderr


def test_the_python_client_lists_creates_and_watches(kube: Kube) -> None:
    from kubernetes import client, config, watch

    api_client = config.new_client_from_config(str(kube.config))
    batch = client.BatchV1Api(api_client)
    spec = client.V1JobSpec(
        template=client.V1PodTemplateSpec(
            spec=client.V1PodSpec(
                restart_policy="Never",
                containers=[client.V1Container(name="c", image="busybox", command=["true"])],
            )
        )
    )
    made = batch.create_namespaced_job(
        "default", client.V1Job(metadata=client.V1ObjectMeta(name="py-job"), spec=spec)
    )
    assert made.metadata.uid and made.metadata.resource_version
    names = [j.metadata.name for j in batch.list_namespaced_job("default").items]
    assert "py-job" in names
    seen: list[tuple[str, str]] = []

    def delete_soon() -> None:
        time.sleep(1.0)
        batch.delete_namespaced_job("py-job", "default", propagation_policy="Background")

    threading.Thread(target=delete_soon, daemon=True).start()
    w = watch.Watch()
    for event in w.stream(batch.list_namespaced_job, "default", timeout_seconds=10):
        seen.append((event["type"], event["object"].metadata.name))
        if event["type"] == "DELETED":
            w.stop()
    assert seen[0] == ("ADDED", "py-job") and seen[-1] == ("DELETED", "py-job")
    with pytest.raises(client.ApiException) as err:
        batch.read_namespaced_job("py-job", "default")
    assert err.value.status == 404


def test_objects_survive_a_restart(kube: Kube) -> None:
    kube.run("apply", "--validate=false", "-f", str(QUEUES))
    uid = kube.run("get", "cq", "cluster-queue", "-o", "jsonpath={.metadata.uid}").stdout
    assert _phalanx(["down"], kube.state).returncode == 0
    from phalanx.server.localcluster import cluster_yaml

    config = kube.root / "cluster.yaml"
    config.write_text(cluster_yaml(1, 8))
    up = ["up", "--detach", "--port", "0", "--config", str(config), "--agents", "none"]
    assert _phalanx(up, kube.state).returncode == 0
    kube.refresh()  # a new port
    after = kube.run("get", "cq", "cluster-queue", "-o", "jsonpath={.metadata.uid}").stdout
    assert after == uid


def test_rbac_through_kubectl_with_a_user_kubeconfig(kube: Kube) -> None:
    manifest = kube.root / "rbac.yaml"
    manifest.write_text(
        """\
apiVersion: v1
kind: Namespace
metadata:
  name: lab-a
---
apiVersion: v1
kind: Namespace
metadata:
  name: lab-b
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: bob-batch-user
  namespace: lab-a
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: kueue-batch-user-role
subjects:
- kind: User
  name: bob
"""
    )
    kube.run("apply", "--validate=false", "-f", str(manifest))
    out = _phalanx(["kubeconfig", "--user", "bob"], kube.state)
    assert out.returncode == 0, out.stderr
    assert out.stdout == _phalanx(["kubeconfig", "--user", "bob"], kube.state).stdout  # reread
    bob = kube.root / "bob-kubeconfig"
    bob.write_text(out.stdout)
    assert KUBECTL is not None

    def as_bob(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [KUBECTL, *args],
            capture_output=True,
            text=True,
            env=dict(kube.env(), KUBECONFIG=str(bob)),
            timeout=60,
        )

    assert as_bob("get", "localqueues", "-n", "lab-a").returncode == 0
    denied = as_bob("get", "localqueues", "-n", "lab-b")
    assert denied.returncode == 1
    assert (
        'Error from server (Forbidden): localqueues.kueue.x-k8s.io is forbidden: User "bob" '
        'cannot list resource "localqueues" in API group "kueue.x-k8s.io" in the namespace '
        '"lab-b"' in denied.stderr
    )
