"""Real kubectl against ``phalanx up`` with an agent (its back-off shortened through
``PHALANX_RESTART_BACKOFF``): a bare pod with restartPolicy Always that exits 1 restarts in
place in CrashLoopBackOff, RESTARTS counting; an httpGet readiness probe makes a pod READY 1/1
only once its server answers; a failing liveness probe restarts the container."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")
TERMINATED = ".status.containerStatuses[0].lastState.terminated"

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

CRASH = """\
apiVersion: v1
kind: Pod
metadata:
  name: crash
spec:
  restartPolicy: Always
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo started; exit 1"]
"""

WEB = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: python
    command: ["sh", "-c", "sleep 3; exec {python} -m http.server {port} --bind 127.0.0.1"]
    ports:
    - name: http
      containerPort: {port}
    readinessProbe:
      httpGet: {{path: /, port: http}}
      periodSeconds: 1
"""

SICK = """\
apiVersion: v1
kind: Pod
metadata:
  name: sick
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: python
    command: ["sleep", "300"]
    livenessProbe:
      tcpSocket: {{port: {port}}}
      periodSeconds: 1
      failureThreshold: 2
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _phalanx(args: list[str], state: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PHALANX_STATE_DIR=str(state), PHALANX_RESTART_BACKOFF="0.5")
    env.pop("PHALANX_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "phalanx", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


class Cluster:
    def __init__(self, root: Path, state: Path) -> None:
        self.root = root
        self.state = state
        made = _phalanx(["kubeconfig"], state)
        assert made.returncode == 0, made.stderr
        self.config = root / "kubeconfig"
        self.config.write_text(made.stdout)

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        assert KUBECTL is not None
        env = dict(os.environ, KUBECONFIG=str(self.config), HOME=str(self.root))
        done = subprocess.run(
            [KUBECTL, *args], capture_output=True, text=True, env=env, timeout=60, input=stdin
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def row(self, pod: str) -> list[str]:
        """``kubectl get pod`` 's row: NAME READY STATUS RESTARTS AGE."""
        return self.kubectl("get", "pod", pod, "--no-headers").split()

    def wait(self, what: Callable[[], bool], timeout: float, message: str) -> None:
        deadline = time.monotonic() + timeout
        while not what():
            assert time.monotonic() < deadline, message
            time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    from phalanx.server.localcluster import cluster_yaml

    root = tmp_path_factory.mktemp("podrestarts")
    state = root / "state"
    config = root / "cluster.yaml"
    config.write_text(cluster_yaml(1, 8))
    up = ["up", "--detach", "--port", "0", "--config", str(config), "--agents", "all"]
    started = _phalanx(up, state)
    assert started.returncode == 0, started.stderr
    try:
        yield Cluster(root, state)
    finally:
        _phalanx(["down"], state)
        for name in ("controller.log", "agent-node1.log"):
            log = state / "log" / name
            text = log.read_text() if log.exists() else ""
            assert "Traceback" not in text, text


def test_a_crashing_pod_restarts_in_place_in_crash_loop_back_off(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=CRASH)
    seen: set[str] = set()

    def restarted() -> bool:
        row = cluster.row("crash")
        seen.add(row[2])
        return int(row[3]) >= 3

    cluster.wait(restarted, 30, f"RESTARTS did not reach 3: {cluster.row('crash')}")
    assert "CrashLoopBackOff" in seen, seen
    # in place: one engine job, on its node, its output appended at every start
    job_id = cluster.kubectl(
        "get", "pod", "crash", "-o", "jsonpath={.metadata.annotations.phalanx\\.io/job-id}"
    )
    assert job_id
    assert cluster.kubectl("logs", "crash").count("started\n") >= 3
    last = cluster.kubectl("get", "pod", "crash", "-o", f"jsonpath={{{TERMINATED}.exitCode}}")
    assert last == "1"
    described = cluster.kubectl("describe", "pod", "crash")
    assert "Back-off restarting failed container main in pod crash_default(" in described
    cluster.kubectl("delete", "pod", "crash", "--wait=false")


def test_readiness_gates_ready_until_the_server_answers(cluster: Cluster) -> None:
    port = _free_port()
    cluster.kubectl("apply", "-f", "-", stdin=WEB.format(python=sys.executable, port=port))
    cluster.wait(lambda: cluster.row("web")[2] == "Running", 20, "the pod did not run")
    assert cluster.row("web")[1] == "0/1"  # the server sleeps 3 s before it listens

    def answers() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    def ready() -> bool:
        shown = cluster.row("web")[1] == "1/1"
        # READY 1/1 only once the server answers (once up, it stays up: asked after)
        assert not shown or answers()
        return shown

    cluster.wait(ready, 15, "the pod did not become ready")
    assert cluster.row("web")[3] == "0"  # no restart on the way
    ready = cluster.kubectl(
        "get", "pod", "web", "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}"
    )
    assert ready == "True"

    # kill -9 of the server: the agent reports at once, the pod is not ready within a second
    # or two (kubectl's own time included), and it is back after its restart in place
    [pid] = _pids(f"http.server {port}")
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    cluster.wait(lambda: cluster.row("web")[1] == "0/1", 10, "still ready after kill -9")
    took = time.monotonic() - killed
    print(f"not ready {took:.2f} s after kill -9 (kubectl's calls included)")
    assert took < 2.5
    # READY 1/1 with RESTARTS 1: in place, after its back-off and the server's 3 s sleep
    cluster.wait(lambda: cluster.row("web")[1:4:2] == ["1/1", "1"], 20, "not ready again")
    cluster.kubectl("delete", "pod", "web", "--wait=false")


def _pids(needle: str) -> list[int]:
    """Processes whose command line holds ``needle``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if needle in cmdline and "sh -c" not in cmdline:
                found.append(int(entry.name))
    return found


def test_a_failing_liveness_probe_restarts_the_container(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=SICK.format(port=_free_port()))
    cluster.wait(lambda: int(cluster.row("sick")[3]) >= 1, 30, "no restart after liveness")
    message = cluster.kubectl("get", "pod", "sick", "-o", f"jsonpath={{{TERMINATED}.message}}")
    assert message == "Container failed liveness probe, will be restarted"
    described = cluster.kubectl("describe", "pod", "sick")
    assert "Liveness probe failed: dial tcp 127.0.0.1:" in described
    assert "Container main failed liveness probe, will be restarted" in described
    cluster.kubectl("delete", "pod", "sick", "--wait=false")
