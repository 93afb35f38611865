"""Autoscaling on loopback, end to end: ``phalanx up`` with this machine's agents and the
service router, real kubectl, real processes.

``hpa`` (default): a Deployment of small HTTP servers (each request takes ``--work-ms``), a
Service, and a HorizontalPodAutoscaler on the router's ``requests_in_flight`` of the Service
(an Object metric, ``AverageValue`` ``--per-pod``). A closed-loop load generator with a bounded
number of clients runs at 1x (``--clients``), steps to 10x, then back to 1x. Printed: seconds
from the step to the first scale-out and to the replicas 10x needs, and from the drop back to
1x to the scale-in (after the scale-down stabilization window, ``--window``; Kubernetes'
default is 300 s).

``isvc``: an InferenceService with ``minReplicas: 0`` left idle until Knative's autoscaler
scales it to zero (a stable window of 60 s, then the 30 s grace), then one request: printed,
the seconds to scale to zero and the first request's latency (held by the router while the
first replica starts).

Replicas share the host's network: the server binds its port with SO_REUSEPORT, so the
kernel spreads the router's connections over however many replicas run.

    python bench/autoscale_step.py hpa [--window 300]
    python bench/autoscale_step.py isvc
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

SERVER = """\
import http.server, socket, sys, time
port, work = int(sys.argv[1]), float(sys.argv[2]) / 1000
class S(http.server.ThreadingHTTPServer):
    def server_bind(self):
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        time.sleep(work)
        body = b"ok\\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
S(("127.0.0.1", port), H).serve_forever()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Stack:
    def __init__(self, root: Path, agents: int) -> None:
        self.root = root
        self.state = root / "state"
        self.env = dict(os.environ, PHALANX_STATE_DIR=str(self.state))
        self.env.pop("PHALANX_DB", None)
        from phalanx.server.localcluster import cluster_yaml

        config = root / "cluster.yaml"
        config.write_text(cluster_yaml(agents, 0))
        up = ["up", "--detach", "--port", "0", "--config", str(config), "--agents", "all"]
        self.phalanx(*up)
        (root / "kubeconfig").write_text(self.phalanx("kubeconfig"))

    def phalanx(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "phalanx", *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"phalanx {' '.join(args)}: {done.stderr}")
        return done.stdout

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        kubectl = shutil.which("kubectl")
        assert kubectl is not None, "kubectl is needed"
        env = dict(os.environ, KUBECONFIG=str(self.root / "kubeconfig"), HOME=str(self.root))
        done = subprocess.run(
            [kubectl, *args], input=stdin, capture_output=True, text=True, env=env, timeout=60
        )
        if done.returncode != 0:
            raise SystemExit(f"kubectl {' '.join(args)}: {done.stderr}")
        return done.stdout

    def replicas(self, deployment: str) -> tuple[int, int]:
        """(spec.replicas, status.readyReplicas)."""
        out = self.kubectl(
            "get",
            "deploy",
            deployment,
            "--ignore-not-found",
            "-o",
            "jsonpath={.spec.replicas} {.status.readyReplicas}",
        ).split()
        if not out:
            return -1, -1  # not made yet
        return int(out[0]), int(out[1]) if len(out) > 1 else 0

    def cluster_ip(self, service: str) -> str:
        for _ in range(300):
            ip = self.kubectl("get", "svc", service, "-o", "jsonpath={.spec.clusterIP}").strip()
            if ip and ip != "None":
                return ip
            time.sleep(0.1)
        raise SystemExit(f"service {service} got no cluster IP")

    def down(self) -> None:
        subprocess.run(
            [sys.executable, "-m", "phalanx", "down"],
            env=self.env,
            capture_output=True,
            timeout=120,
            check=False,
        )


class Load:
    """Closed-loop clients, their number changed on the fly."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.wanted = 0
        self.stop = False
        self.done = 0
        self.errors = 0
        self.threads: list[threading.Thread] = []
        self.lock = threading.Lock()

    def set(self, clients: int) -> None:
        self.wanted = clients
        while len(self.threads) < clients:
            t = threading.Thread(target=self._client, args=(len(self.threads),), daemon=True)
            self.threads.append(t)
            t.start()

    def _client(self, index: int) -> None:
        while not self.stop:
            if index >= self.wanted:
                time.sleep(0.05)
                continue
            try:
                with urllib.request.urlopen(self.url, timeout=30) as r:
                    r.read()
                with self.lock:
                    self.done += 1
            except (urllib.error.URLError, OSError):
                with self.lock:
                    self.errors += 1
                time.sleep(0.1)


def deployment(port: int, script: Path, work_ms: int) -> str:
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
        command: ["{sys.executable}", "{script}", "{port}", "{work_ms}"]
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


def hpa(per_pod: int, window: int) -> str:
    return json.dumps(
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1,
                "maxReplicas": 20,
                "metrics": [
                    {
                        "type": "Object",
                        "object": {
                            "describedObject": {
                                "apiVersion": "v1",
                                "kind": "Service",
                                "name": "web",
                            },
                            "metric": {"name": "requests_in_flight"},
                            "target": {"type": "AverageValue", "averageValue": str(per_pod)},
                        },
                    }
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": window}},
            },
        }
    )


def run_hpa(stack: Stack, args: argparse.Namespace) -> None:
    script = stack.root / "server.py"
    script.write_text(SERVER)
    stack.kubectl("apply", "-f", "-", stdin=deployment(free_port(), script, args.work_ms))
    stack.kubectl("apply", "-f", "-", stdin=hpa(args.per_pod, args.window))
    load = Load(f"http://{stack.cluster_ip('web')}/")
    while stack.replicas("web")[1] < 1:
        time.sleep(0.5)
    target = math.ceil(10 * args.clients / args.per_pod)
    print(
        f"1x = {args.clients} clients, 10x = {10 * args.clients}; "
        f"in flight per pod {args.per_pod}: 10x needs {target} replicas",
        flush=True,
    )
    load.set(args.clients)
    time.sleep(args.settle)
    before = stack.replicas("web")[0]
    start = time.monotonic()
    step = start
    load.set(10 * args.clients)
    first = reached = drop = back = None
    while True:
        time.sleep(1)
        now = time.monotonic()
        want, ready = stack.replicas("web")
        print(
            f"t={now - start:6.1f}s replicas={want:2d} ready={ready:2d} "
            f"done={load.done} errors={load.errors}",
            flush=True,
        )
        if first is None and want > before:
            first = now - step
        if reached is None and want >= target:
            reached = now - step
        if drop is None and (reached is not None or now - step > 120):
            time.sleep(args.hold)
            load.set(args.clients)
            drop = time.monotonic()
        if drop is not None and want <= 1:
            back = now - drop
            break
        if drop is not None and now - drop > args.window + 120:
            break
    load.stop = True
    print(
        f"scale-out: from {before} replica(s), first {first:.1f}s and {target} replicas "
        f"{reached:.1f}s after the step; back to 1 {back:.1f}s after the drop "
        f"(scale-down window {args.window}s)"
        if first and reached and back
        else f"incomplete: first={first} reached={reached} back={back}"
    )


def run_isvc(stack: Stack, args: argparse.Namespace) -> None:
    script = stack.root / "server.py"
    script.write_text(SERVER)
    port = free_port()
    isvc = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "echo"},
        "spec": {
            "predictor": {
                "minReplicas": 0,
                "containers": [
                    {
                        "name": "kserve-container",
                        "image": "python:3.11",
                        "command": [sys.executable, str(script), str(port), str(args.work_ms)],
                        "ports": [{"containerPort": port}],
                    }
                ],
            }
        },
    }
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(isvc))
    start = time.monotonic()
    while stack.replicas("echo-predictor") != (0, 0):
        if time.monotonic() - start > 300:
            raise SystemExit("not scaled to zero in 300 s")
        time.sleep(1)
    zero = time.monotonic() - start
    print(f"scaled to zero {zero:.1f}s after creation (idle)", flush=True)
    time.sleep(5)
    url = f"http://{stack.cluster_ip('echo-predictor')}/"
    sent = time.monotonic()
    with urllib.request.urlopen(url, timeout=120) as r:
        r.read()
    print(
        f"first request after idling answered in {time.monotonic() - sent:.2f}s (status {r.status})"
    )
    print(stack.kubectl("get", "isvc"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=("hpa", "isvc"), nargs="?", default="hpa")
    p.add_argument("--agents", type=int, default=1)
    p.add_argument("--clients", type=int, default=2, help="1x: concurrent clients")
    p.add_argument("--per-pod", type=int, default=2, help="requests in flight per replica")
    p.add_argument("--work-ms", type=int, default=200, help="each request's service time")
    p.add_argument("--window", type=int, default=300, help="scale-down stabilization (s)")
    p.add_argument("--settle", type=float, default=20.0, help="seconds at 1x before the step")
    p.add_argument("--hold", type=float, default=30.0, help="seconds at 10x once reached")
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="phalanx-autoscale-"))
    stack = Stack(root, args.agents)
    try:
        (run_hpa if args.what == "hpa" else run_isvc)(stack, args)
    finally:
        stack.down()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
