"""A serving stack on loopback for benchmarks and integration tests: ``phalanx up`` (controller,
this machine's agents, the service router) driven with real kubectl, a small HTTP model
server to run as pods, and a closed-loop load generator that keeps every request's latency.

``ServingStack(root, agents)`` starts it (``phalanx up --detach`` on a state directory under
``root``) and ``down()`` stops it. ``MODEL_SERVER`` is the pod's program: each request burns
``burn_ms`` of CPU and waits ``work_ms`` more, at most ``slots`` at a time per replica (0:
no limit; a model server has a few workers, and requests beyond them queue); replicas share
the host's network and bind one port with ``SO_REUSEPORT`` (the kernel spreads the router's
connections over them). With an
access-log directory, each process writes ``pod-PID`` (its pod's name, from the downward API's
``POD_NAME``) at start and appends one line per request to ``access-PID`` (arrival time, wall
clock), so a test can count what reached a process that was meant to be dead.

``Load(url)``: ``set(n)`` clients, each sending a request as soon as its previous one is
answered; every answer is kept as ``(sent, latency_s, ok)`` on the monotonic clock.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from phalanx.client.address import ControllerAddress
from phalanx.client.wirecall import WireCaller
from phalanx.server.localcluster import cluster_yaml
from phalanx.server.statedir import StateDir

__all__ = [
    "MODEL_SERVER",
    "Load",
    "Sample",
    "ServingStack",
    "deployment_yaml",
    "free_cluster_ip",
    "free_port",
    "percentile",
]

MODEL_SERVER = """\
import http.server, os, socket, sys, time
import threading
port, work, burn = int(sys.argv[1]), float(sys.argv[2]) / 1000, float(sys.argv[3]) / 1000
slots = threading.Semaphore(int(sys.argv[4])) if int(sys.argv[4]) > 0 else None
logs = sys.argv[5] if len(sys.argv) > 5 else ""
access = None
if logs:
    pid = os.getpid()
    with open(f"{logs}/pod-{pid}.tmp", "w") as f:
        f.write(os.environ.get("POD_NAME", ""))
    os.rename(f"{logs}/pod-{pid}.tmp", f"{logs}/pod-{pid}")
    access = open(f"{logs}/access-{pid}", "a", buffering=1)
class S(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    def server_bind(self):
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if access is not None:
            access.write(f"{time.time():.6f}\\n")
        if slots is not None:
            slots.acquire()
        try:
            end = time.thread_time() + burn
            x = 0
            while time.thread_time() < end:
                x += 1
            time.sleep(work)
        finally:
            if slots is not None:
                slots.release()
        body = f"{os.getpid()}\\n".encode()
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


def free_cluster_ip(port: int = 80) -> str:
    """An address of 127.77.0.0/16 (the cluster IP range) where nothing listens on ``port``.

    Each ``phalanx up`` allocates cluster IPs from the bottom of the range, so two stacks on
    one machine (tests run side by side) would both want 127.77.0.1:80; the second router
    cannot listen there and the first one's Service answers its requests. A stack for tests
    asks for an address picked at random instead (Kubernetes' ``spec.clusterIP``)."""
    rng = random.Random()
    for _ in range(200):
        ip = f"127.77.{rng.randrange(1, 255)}.{rng.randrange(1, 255)}"
        with socket.socket() as s:
            try:
                s.bind((ip, port))
            except OSError:
                continue
            return ip
    raise RuntimeError("no free cluster IP")


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (0-100) of ``values``; NaN when there are none."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def deployment_yaml(
    name: str,
    script: Path,
    port: int,
    *,
    replicas: int = 1,
    work_ms: int = 200,
    burn_ms: int = 5,
    slots: int = 0,
    logs: Path | None = None,
    priority_class: str | None = None,
    gpus: int = 0,
    service: bool = True,
) -> str:
    """A Deployment of ``MODEL_SERVER`` (saved at ``script``) labelled ``app: NAME``, and a
    ClusterIP Service of the same name on port 80 -> the container port ``http``."""
    argv = [sys.executable, str(script), str(port), str(work_ms), str(burn_ms), str(slots)]
    argv += [str(logs)] if logs is not None else []
    container: dict[str, Any] = {
        "name": name,
        "image": "python:3.11",
        "command": argv,
        "ports": [{"name": "http", "containerPort": port}],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    }
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    pod_spec: dict[str, Any] = {"containers": [container]}
    if priority_class:
        pod_spec["priorityClassName"] = priority_class
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
        },
    }
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {
            "clusterIP": free_cluster_ip(80),
            "selector": {"app": name},
            "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
        },
    }
    docs = [deploy, svc] if service else [deploy]
    return yaml.safe_dump_all(docs, sort_keys=False)


class ServingStack:
    """``phalanx up --detach`` on ``root/state`` with ``agents`` emulated nodes of ``gpus``
    GPUs each (``cluster_yaml``; or the cluster YAML ``config``), and kubectl pointed at it
    (``root/kubeconfig``)."""

    def __init__(
        self,
        root: Path,
        agents: int = 1,
        *,
        gpus: int = 0,
        up_args: Sequence[str] = (),
        kubectl: str | None = None,
        config: str | None = None,
    ) -> None:
        self.root = root
        self.state = root / "state"
        self.env = dict(os.environ, PHALANX_STATE_DIR=str(self.state))
        self.env.pop("PHALANX_DB", None)
        self.env.pop("PHALANX_URL", None)
        found = kubectl or shutil.which("kubectl")
        if found is None:
            raise RuntimeError("kubectl is needed")
        self.kubectl_path = found
        path = root / "cluster.yaml"
        path.write_text(cluster_yaml(agents, gpus) if config is None else config)
        up = ["up", "--detach", "--port", "0", "--config", str(path), "--agents", "all"]
        self.phalanx(*up, *up_args)
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
            raise RuntimeError(f"phalanx {' '.join(args)}: {done.stderr}")
        return done.stdout

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        env = dict(os.environ, KUBECONFIG=str(self.root / "kubeconfig"), HOME=str(self.root))
        done = subprocess.run(
            [self.kubectl_path, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {done.stderr}")
        return done.stdout

    def apply(self, manifests: str) -> None:
        self.kubectl("apply", "-f", "-", stdin=manifests)

    def replicas(self, deployment: str) -> tuple[int, int]:
        """(spec.replicas, status.readyReplicas); (-1, -1) before the Deployment exists."""
        out = self.kubectl(
            "get",
            "deploy",
            deployment,
            "--ignore-not-found",
            "-o",
            "jsonpath={.spec.replicas} {.status.readyReplicas}",
        ).split()
        if not out:
            return -1, -1
        return int(out[0]), int(out[1]) if len(out) > 1 else 0

    def cluster_ip(self, service: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ip = self.kubectl("get", "svc", service, "-o", "jsonpath={.spec.clusterIP}").strip()
            if ip and ip != "None":
                return ip
            time.sleep(0.1)
        raise RuntimeError(f"service {service} got no cluster IP")

    def router(self, path: str) -> Any:
        """The router's admin endpoint ``path`` (JSON); None while the router does not
        serve it (not started yet, or a 404: the Service is not known to it yet)."""
        port_file = self.state / "router.port"
        if not port_file.exists():
            return None
        url = f"http://127.0.0.1:{port_file.read_text().strip()}{path}"
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return json.loads(r.read())
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def service(self, name: str, namespace: str = "default") -> dict[str, Any]:
        """The router's view of a Service (``phalanx.router`` docstring); {} when unknown."""
        got = self.router(f"/services/{namespace}/{name}")
        return got if isinstance(got, dict) else {}

    def ready_endpoints(self, name: str) -> int:
        return int(self.service(name).get("ready_endpoints", 0))

    def call(self, method: str, path: str, **kw: Any) -> Any:
        """The controller's REST API (``/v1``) on its socket, as root."""
        caller = WireCaller(ControllerAddress(socket_path=str(self.state / "controller.sock")))
        return caller.call_ok(method, path, **kw)

    def nodes(self) -> dict[str, dict[str, Any]]:
        """name -> the node as the REST API shows it (``GET /v1/nodes``: ``state``...)."""
        return {str(n["name"]): n for n in self.call("GET", "/v1/nodes")}

    def agents(self) -> dict[str, list[int]]:
        """node -> PIDs of its running agents."""
        return StateDir(self.state).live_agents()

    def down(self) -> None:
        subprocess.run(
            [sys.executable, "-m", "phalanx", "down"],
            env=self.env,
            capture_output=True,
            timeout=120,
            check=False,
        )


@dataclass(frozen=True, slots=True)
class Sample:
    sent: float
    """When it was sent (monotonic seconds)."""
    latency: float
    ok: bool


class Load:
    """Closed-loop clients, their number changed on the fly (``set``)."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        self.url = url
        self.timeout = timeout
        self.wanted = 0
        self.stopped = False
        self.samples: list[Sample] = []
        self.in_flight = 0
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    @property
    def done(self) -> int:
        return sum(1 for s in self.samples if s.ok)

    @property
    def errors(self) -> int:
        return sum(1 for s in self.samples if not s.ok)

    def set(self, clients: int) -> None:
        self.wanted = clients
        while len(self._threads) < clients:
            t = threading.Thread(target=self._client, args=(len(self._threads),), daemon=True)
            self._threads.append(t)
            t.start()

    def stop(self) -> None:
        self.stopped = True
        for t in self._threads:
            t.join(self.timeout + 5)

    def between(self, start: float, end: float) -> list[Sample]:
        """The samples sent in [start, end)."""
        with self._lock:
            return [s for s in self.samples if start <= s.sent < end]

    def _client(self, index: int) -> None:
        while not self.stopped:
            if index >= self.wanted:
                time.sleep(0.05)
                continue
            sent = time.monotonic()
            ok = False
            with self._lock:
                self.in_flight += 1
            try:
                with urllib.request.urlopen(self.url, timeout=self.timeout) as r:
                    r.read()
                    ok = r.status == 200
            except (urllib.error.URLError, OSError):
                pass
            with self._lock:
                self.in_flight -= 1
                self.samples.append(Sample(sent, time.monotonic() - sent, ok))
            if not ok:
                time.sleep(0.1)
