"""The serving page and the accounts page's usage over time in a real headless Chromium
(Debian's ``/usr/bin/chromium``, through Playwright) against ``phalanx up``: a controller
serving the Kubernetes API, the service router, two agents, real kubectl and real HTTP
servers as a Deployment's pods.

Checked, each without a reload of the page: a HorizontalPodAutoscaler applied while the
serving page is open scales its Deployment from 1 to its ``minReplicas`` 2 (the decision,
from -> to and why, appears; the second replica becomes ready); requests through the router
show as load (requests per second, p50/p99 latency); on the accounts page a ClusterQueue
borrowing from its cohort shows its GPUs used against nominal, and a job's end shows in the
fair-share table; with Kueue's fair sharing on (the queues file's Configuration), each
ClusterQueue's weight and weighted share show, and the share grows as a job starts.
Screenshots as ``test_ui_browser`` (``PHALANX_SCREENSHOTS``). Skipped where chromium,
Playwright or kubectl is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_ui_browser import CHROMIUM, Browser, _shot

from phalanx.server.localcluster import LocalCluster

KUBECTL = shutil.which("kubectl")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not os.access(CHROMIUM, os.X_OK) and shutil.which("chromium") is None:
    pytest.skip("no chromium (apt install chromium)", allow_module_level=True)
if KUBECTL is None:
    pytest.skip("kubectl is not installed", allow_module_level=True)

CLUSTER = """name: lab
nodes:
  - {names: "node[1-2]", gpus: 8, gpu_model: h100, cpus: 32, memory: 64G}
partitions:
  - {name: main, nodes: ALL, default: true, cluster_queue: training}
  - {name: infer, nodes: ALL, cluster_queue: inference}
accounts:
  - {name: research, shares: 60}
  - {name: prod, shares: 40}
"""

# The queues file (``--queues``): training and inference share the cohort ``lab``, Kueue's fair
# sharing on (its Configuration), training weighing twice inference.
QUEUES = """\
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
fairSharing: {enable: true}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: training}
spec:
  cohort: lab
  namespaceSelector: {}
  fairSharing: {weight: 2}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: cpu, nominalQuota: 64}, {name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: inference}
spec:
  cohort: lab
  namespaceSelector: {}
  fairSharing: {weight: 1}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: cpu, nominalQuota: 64}, {name: nvidia.com/gpu, nominalQuota: 8}]
"""

SERVER = """\
import http.server, socket, sys, time
port = int(sys.argv[1])
class S(http.server.ThreadingHTTPServer):
    def server_bind(self):
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        time.sleep(0.02)
        body = b"ok\\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
S(("127.0.0.1", port), H).serve_forever()
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _deployment(script: Path, port: int) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: web
        image: python:3.11
        command: ["{sys.executable}", "{script}", "{port}"]
        ports:
        - {{name: http, containerPort: {port}}}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {{app: web}}
  ports:
  - {{name: http, port: 80, targetPort: http}}
"""


HPA = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2,
        "maxReplicas": 4,
        "metrics": [
            {
                "type": "Object",
                "object": {
                    "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"},
                    "metric": {"name": "requests_in_flight"},
                    "target": {"type": "AverageValue", "averageValue": "50"},
                },
            }
        ],
    },
}


class Stack(LocalCluster):
    """``phalanx up --detach`` (the Kubernetes API, the router, both agents) and kubectl."""

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        assert KUBECTL is not None
        home = self.state_dir.parent
        env = dict(os.environ, KUBECONFIG=str(home / "kubeconfig"), HOME=str(home))
        done = subprocess.run(
            [KUBECTL, *args], input=stdin, capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def phalanx(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "phalanx", *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, str]]:
    root = tmp_path_factory.mktemp("phalanx-serving")
    root.chmod(0o755)
    queues = root / "queues.yaml"
    queues.write_text(QUEUES)
    local = Stack(
        root / "state",
        CLUSTER,
        extra_args=("--horizontal-pod-autoscaler-sync-period", "2", "--queues", str(queues)),
    )
    try:
        local.up()
        (root / "kubeconfig").write_text(local.phalanx("kubeconfig"))
        port = int((local.state_dir / "controller.port").read_text())
        yield local, f"http://127.0.0.1:{port}"
    finally:
        local.phalanx("down")
        local.stop()
    log = local.log_tail("controller", 200)
    assert "Traceback" not in log, log


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        yield p


class Load:
    """A few clients requesting through the router until stopped."""

    def __init__(self, url: str, clients: int = 3) -> None:
        self.url = url
        self.done = 0
        self.errors: list[str] = []
        self.stopped = threading.Event()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(clients)]
        for t in self.threads:
            t.start()

    def _run(self) -> None:
        while not self.stopped.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=10) as r:
                    r.read()
                self.done += 1
            except (urllib.error.URLError, OSError) as e:
                self.errors.append(str(e))
                time.sleep(0.1)

    def stop(self) -> None:
        self.stopped.set()
        for t in self.threads:
            t.join(15)


def _cell(page: Any, selector: str) -> str:
    return str(page.inner_text(selector)).strip()


def test_serving_and_queue_usage_in_chromium(
    stack: tuple[Stack, str], playwright: Any, tmp_path: Path
) -> None:
    local, url = stack
    admin_token = (local.state_dir / "token").read_text().strip()
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    tmp_path.chmod(0o755)
    local.kubectl("apply", "-f", "-", stdin=_deployment(script, _free_port()))
    base = {"workdir": str(tmp_path), "environment": {"PATH": os.environ.get("PATH", "")}}
    # training borrows 4 of inference's 8 GPUs; prod's small job ends during the test
    train = local.submit(
        **base,
        name="train",
        command=["sleep", "300"],
        nodes="2",
        gpus_per_task=6,
        time="10:00",
        account="research",
    )[0]
    short = local.submit(
        **base,
        name="eval",
        command=["sleep", "300"],
        gpus_per_task=2,
        time="10:00",
        account="prod",
        partition="infer",
    )[0]
    local.wait([train, short], ("RUNNING",), final=False, timeout=30)

    admin = Browser(playwright, tmp_path / "admin")
    load = None
    try:
        page = admin.page
        page.goto(f"{url}/ui?token={admin_token}")
        page.wait_for_url(f"{url}/ui")
        page.goto(f"{url}/ui/serving")
        page.evaluate("window.__same_page = true")
        page.wait_for_selector("#served-default-web")
        page.wait_for_function(
            "document.querySelector('#served-default-web .ready').textContent === '1'",
            timeout=30_000,
        )
        assert page.locator("#decisions").count() == 0

        # The HPA, applied with the page open: 1 -> minReplicas 2, shown as it happens.
        local.kubectl("apply", "-f", "-", stdin=json.dumps(HPA))
        page.wait_for_selector("#decisions tr:has-text('Deployment/web')", timeout=30_000)
        decision = _cell(page, "#decisions tbody tr")
        assert "HPA default/web" in decision and "1\t2" in decision, decision
        assert "Current number of replicas below Spec.MinReplicas" in decision
        page.wait_for_function(
            "document.querySelector('#served-default-web .ready').textContent === '2'",
            timeout=30_000,
        )
        assert "HPA web" in _cell(page, "#served-default-web")

        # Load through the router: requests per second and latency quantiles arrive.
        ip = local.kubectl("get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}").strip()
        load = Load(f"http://{ip}:80/")
        page.wait_for_function(
            "parseFloat(document.querySelector('#served-default-web .rps').textContent) > 1",
            timeout=30_000,
        )
        row = _cell(page, "#served-default-web")
        assert " ms" in row and "requests_in_flight on Service/web" in row, row
        page.wait_for_selector("#rps-chart polyline", state="attached", timeout=30_000)
        time.sleep(6)  # one more sample: the charts show a line, not a point
        _shot(page, "serving")
        assert page.evaluate("window.__same_page") is True  # all of it without a reload
        assert load.done > 0

        # Accounts: training uses 12 of its nominal 8 GPUs (4 borrowed); prod's job ends.
        page.goto(f"{url}/ui/accounts")
        page.evaluate("window.__same_page = true")
        quotas = _cell(page, "#quotas")
        assert "training\tlab\t8.0\t12.0\t4.0" in quotas, quotas
        page.wait_for_selector('.queue-chart[data-queue="training"] polyline', state="attached")
        prod = "#fairshare tr:has(td:text-is('prod')) td:nth-child(8)"
        assert _cell(page, prod) == "2.0"
        local.call("DELETE", f"/v1/jobs/{short}")
        page.wait_for_function(
            "document.querySelector('#quotas').textContent.includes('inference')"
            " && [...document.querySelectorAll('#fairshare tr')].some("
            "r => r.cells[0].textContent === 'prod' && r.cells[7].textContent === '0.0')",
            timeout=30_000,
        )
        assert page.evaluate("window.__same_page") is True

        # Kueue's fair sharing: training borrows 4 of the cohort's 16 GPUs, 250 per mille,
        # over its weight 2: 125; inference borrows nothing. A 2-GPU training job more: 6 of
        # 16, 375 / 2 = 187, shown without a reload.
        share = "#fair-sharing tr[data-queue='{}'] td.{}"
        assert _cell(page, share.format("training", "weight")) == "2"
        assert _cell(page, share.format("training", "share")) == "125"
        assert _cell(page, share.format("inference", "weight")) == "1"
        assert _cell(page, share.format("inference", "share")) == "0"
        more = local.submit(
            **base,
            name="more",
            command=["sleep", "300"],
            gpus_per_task=2,
            time="10:00",
            account="research",
        )[0]
        page.wait_for_function(
            "document.querySelector(\"#fair-sharing tr[data-queue='training'] td.share\")"
            ".textContent === '187'",
            timeout=30_000,
        )
        page.wait_for_selector("#fair-chart polyline", state="attached", timeout=30_000)
        assert page.evaluate("window.__same_page") is True
        time.sleep(6)
        _shot(page, "accounts-queues")
        assert admin.errors == [], admin.errors
    finally:
        if load is not None:
            load.stop()
        admin.close()
    local.call("DELETE", f"/v1/jobs/{train}")
    local.call("DELETE", f"/v1/jobs/{more}")
