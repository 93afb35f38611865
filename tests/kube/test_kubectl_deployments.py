"""Real kubectl against ``phalanx up`` with this machine's agents: a Deployment applied, rolled
out, scaled, rolled to a new template and back (``rollout status``/``history``/``undo``), and
self-healing when a replica's node agent is killed -9."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

DEAD_AFTER_S = 4

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    kubernetes.io/change-cause: first version
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: busybox:1.36
        command: ["sh", "-c", "echo $$$$ >> {pids}; exec sleep 600"]
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
        out = _phalanx(["kubeconfig"], state)
        assert out.returncode == 0, out.stderr
        self.config.write_text(out.stdout)

    def run(self, *args: str, ok: bool = True, timeout: float = 90) -> str:
        assert KUBECTL is not None
        env = dict(os.environ, KUBECONFIG=str(self.config), HOME=str(self.root))
        done = subprocess.run(
            [KUBECTL, *args], capture_output=True, text=True, env=env, timeout=timeout
        )
        if ok:
            assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout + done.stderr

    def running(self) -> list[tuple[str, str]]:
        """(pod, node) of the Running pods of ``app=web``."""
        out = self.run(
            "get", "pods", "-l", "app=web", "--field-selector=status.phase=Running",
            "-o", "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName}{'\\n'}{end}",
        )  # fmt: skip
        return [(line.split()[0], line.split()[1]) for line in out.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    from phalanx.server.localcluster import cluster_yaml

    root = tmp_path_factory.mktemp("kubedeploy")
    state = root / "state"
    config = root / "cluster.yaml"
    config.write_text(cluster_yaml(2, 8))
    up = ["up", "--detach", "--port", "0", "--config", str(config), "--agents", "all"]
    started = _phalanx([*up, "--dead-after", str(DEAD_AFTER_S)], state)
    assert started.returncode == 0, started.stderr
    pids = root / "pids"
    try:
        yield Kube(root, state)
    finally:
        _phalanx(["down"], state)
        # the replicas a killed agent left behind
        for pid in pids.read_text().split() if pids.exists() else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        log = (state / "log" / "controller.log").read_text() if (state / "log").exists() else ""
        assert "Traceback" not in log, log


def _wait(check: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(check) and check():
            return True
        time.sleep(0.2)
    return False


def test_apply_rollout_scale_undo_and_self_heal(kube: Kube) -> None:
    manifest = kube.root / "web.yaml"
    manifest.write_text(DEPLOYMENT.format(pids=kube.root / "pids"))
    assert "deployment.apps/web created" in kube.run("apply", "-f", str(manifest))
    status = kube.run("rollout", "status", "deployment/web", "--timeout=60s")
    assert 'deployment "web" successfully rolled out' in status
    table = kube.run("get", "deploy", "web").splitlines()
    assert table[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert table[1].split()[:4] == ["web", "2/2", "2", "2"]

    assert "deployment.apps/web scaled" in kube.run("scale", "deployment/web", "--replicas=3")
    kube.run("rollout", "status", "deployment/web", "--timeout=60s")
    assert len(kube.running()) == 3

    # a new template: a second ReplicaSet, the first at zero
    kube.run("set", "env", "deployment/web", "VERSION=v2")
    kube.run("annotate", "deployment/web", "kubernetes.io/change-cause=second version")
    kube.run("rollout", "status", "deployment/web", "--timeout=90s")
    sets = kube.run("get", "rs", "-l", "app=web", "--no-headers").splitlines()
    desired = sorted(line.split()[1] for line in sets)
    assert desired == ["0", "3"], sets
    history = kube.run("rollout", "history", "deployment/web")
    assert "REVISION" in history and "CHANGE-CAUSE" in history
    rows = [line.split(None, 1) for line in history.splitlines()[2:] if line.strip()]
    assert [r[0] for r in rows] == ["1", "2"], history
    assert rows[0][1].strip() == "first version"

    # back to revision 1: its ReplicaSet takes the replicas again, as revision 3
    assert "deployment.apps/web rolled back" in kube.run("rollout", "undo", "deployment/web")
    kube.run("rollout", "status", "deployment/web", "--timeout=90s")
    env = kube.run(
        "get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].env}"
    )  # fmt: skip
    assert "VERSION" not in env
    revision = kube.run(
        "get", "deploy", "web",
        "-o", "jsonpath={.metadata.annotations.deployment\\.kubernetes\\.io/revision}",
    )  # fmt: skip
    assert revision == "3"
    # the first ReplicaSet came back (no third one): it is revision 3, 1 kept as its history
    sets = kube.run(
        "get", "rs", "-l", "app=web", "-o",
        "jsonpath={range .items[*]}{.spec.replicas} {.metadata.annotations}{'\\n'}{end}",
    )  # fmt: skip
    assert len(sets.splitlines()) == 2, sets
    back = [line for line in sets.splitlines() if line.startswith("3 ")]
    assert len(back) == 1 and '"deployment.kubernetes.io/revision-history":"1"' in back[0], sets
    assert "pod/" in kube.run("get", "rs,pods", "-o", "name")
    assert "deployment.apps/web paused" in kube.run("rollout", "pause", "deployment/web")
    assert "deployment.apps/web resumed" in kube.run("rollout", "resume", "deployment/web")
    assert "deployment.apps/web restarted" in kube.run("rollout", "restart", "deployment/web")
    kube.run("rollout", "status", "deployment/web", "--timeout=90s")
    assert len(kube.run("get", "rs", "-l", "app=web", "--no-headers").splitlines()) == 3
    described = kube.run("describe", "deployment", "web")
    assert "RollingUpdateStrategy:  25% max unavailable, 25% max surge" in described
    assert "NewReplicaSetAvailable" in described and "ScalingReplicaSet" in described

    # kill -9 of the agent of a replica's node: the replicas are back within 10 s
    pods = kube.running()
    assert len(pods) == 3
    node = pods[0][1]
    agent = int((kube.state / "agents" / f"{node}.pid").read_text().split()[0])
    os.kill(agent, signal.SIGKILL)
    killed = time.monotonic()
    lost = {p for p, n in pods if n == node}

    def healed() -> bool:
        now = kube.running()
        return len(now) == 3 and not lost & {p for p, _ in now}

    assert _wait(healed, 30), kube.run("get", "pods", "-o", "wide")
    took = time.monotonic() - killed
    print(f"replicas back {took:.1f} s after kill -9 of the agent (--dead-after {DEAD_AFTER_S})")
    assert took <= 10, took

    # deleting the Deployment takes its ReplicaSets and pods with it
    assert 'deployment.apps "web" deleted' in kube.run("delete", "deployment", "web")
    gone = _wait(lambda: not kube.run("get", "rs,pods", "-l", "app=web", "-o", "name").strip(), 30)
    assert gone, kube.run("get", "rs,pods", "-l", "app=web")
