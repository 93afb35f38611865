"""A v1 Service over two real HTTP servers run as pods by ``phalanx up``: the router spreads
requests over both; ``kill -9`` of one -> once the router knows it dead no request goes to
it; with no endpoint a request is held until a new pod is ready (scale from zero);
``kubectl get svc,endpointslices,endpoints`` with real kubectl; ``phalanx down`` stops the
router."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

SERVER = """\
import http.server, os, sys
port = int(sys.argv[1])
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        body = f"{port}\\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("0.0.0.0", port), H).serve_forever()
"""

SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: http
"""


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def job(name: str, script: Path, port: int, pid_file: Path) -> str:
    """A Job of one pod serving HTTP on ``port`` (container port ``http``); never retried."""
    return f"""\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  backoffLimit: 0
  template:
    metadata:
      labels:
        app: web
    spec:
      restartPolicy: Never
      containers:
      - name: web
        image: python:3.11
        command: ["{sys.executable}", "{script}", "{port}", "{pid_file}"]
        ports:
        - name: http
          containerPort: {port}
"""


class Cluster:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / "state"
        self.kubeconfig = root / "kubeconfig"

    def phalanx(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, PHALANX_STATE_DIR=str(self.state))
        env.pop("PHALANX_DB", None)
        return subprocess.run(
            [sys.executable, "-m", "phalanx", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        assert KUBECTL is not None
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig), HOME=str(self.root))
        done = subprocess.run(
            [KUBECTL, *args], input=stdin, capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def admin(self, path: str) -> str:
        port = (self.state / "router.port").read_text().strip()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return str(r.read().decode())


def get(url: str, timeout: float = 10.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode().strip()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode().strip()


def wait_for(check: object, timeout: float = 60.0, what: str = "") -> None:
    assert callable(check)
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_a_service_over_two_pods_through_the_router(tmp_path: Path) -> None:
    from phalanx.server.localcluster import cluster_yaml

    tmp_path.chmod(0o755)
    c = Cluster(tmp_path)
    config = tmp_path / "cluster.yaml"
    config.write_text(cluster_yaml(1, 8))
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    up = c.phalanx("up", "--detach", "--port", "0", "--config", str(config))
    assert up.returncode == 0, up.stderr
    try:
        assert "router  Services on their cluster IPs" in up.stdout, up.stdout
        config_out = c.phalanx("kubeconfig")
        assert config_out.returncode == 0, config_out.stderr
        c.kubeconfig.write_text(config_out.stdout)
        ports = [free_port(), free_port()]
        pids = [tmp_path / "pid-a", tmp_path / "pid-b"]
        manifests = SERVICE + "---\n" + job("web-a", script, ports[0], pids[0])
        manifests += "---\n" + job("web-b", script, ports[1], pids[1])
        c.kubectl("apply", "-f", "-", stdin=manifests)

        svc = json.loads(c.kubectl("get", "svc", "web", "-o", "json"))
        ip = svc["spec"]["clusterIP"]
        assert ip.startswith("127.77.")
        url = f"http://{ip}:80/"

        def ready_endpoints() -> int:
            snap = json.loads(c.admin("/services/default/web"))
            return int(snap["ready_endpoints"])

        wait_for(lambda: all(p.exists() for p in pids), what="both pods' servers")
        wait_for(lambda: ready_endpoints() == 2, what="two ready endpoints at the router")
        table = c.kubectl("get", "svc,endpointslices,endpoints")
        row = next(line.split() for line in table.splitlines() if line.startswith("service/web"))
        assert row[:5] == ["service/web", "ClusterIP", ip, "<none>", "80/TCP"], table
        assert "endpointslice.discovery.k8s.io/web-" in table
        assert f"127.0.0.1:{min(ports)}" in table and f"127.0.0.1:{max(ports)}" in table

        seen = Counter(get(url)[1] for _ in range(20))
        assert seen == Counter({str(ports[0]): 10, str(ports[1]): 10}), seen

        # kill -9 one server: its first refusal marks it down, the request goes to the other,
        # and no request after that goes to it
        os.kill(int(pids[0].read_text()), signal.SIGKILL)
        answers = [get(url) for _ in range(30)]
        assert all(code == 200 for code, _ in answers), answers
        assert {body for _, body in answers} == {str(ports[1])}
        metrics = c.admin("/metrics")
        assert 'phalanx_router_requests_total{namespace="default",service="web",code="200"} 50' in (
            metrics
        )
        wait_for(lambda: ready_endpoints() == 1, what="the dead pod out of the endpoints")

        # scale to zero and back: a request with no endpoint is held until a pod is ready
        c.kubectl("delete", "job", "web-a", "web-b")
        wait_for(lambda: ready_endpoints() == 0, what="no endpoints")
        wait_for(lambda: _port_free(ports[1]), what="the second server gone")
        pids[1].unlink()
        held: list[tuple[int, str]] = []
        waiter = threading.Thread(target=lambda: held.append(get(url, timeout=60)))
        waiter.start()
        wait_for(lambda: json.loads(c.admin("/services/default/web"))["held"] == 1, what="held")
        c.kubectl("apply", "-f", "-", stdin=job("web-c", script, ports[1], pids[1]))
        waiter.join(60)
        assert held == [(200, str(ports[1]))]
    finally:
        down = c.phalanx("down")
    assert down.returncode == 0, down.stderr
    assert not (c.state / "router.pid").exists()
    log = (c.state / "log" / "router.log").read_text()
    assert "Traceback" not in log, log


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0
