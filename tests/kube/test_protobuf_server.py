"""kubectl's generator commands, which send protobuf only, create objects on Phalanx's Kubernetes
API (phalanx.kube.server over TLS, as the controller serves it): what `kubectl get -o json`
then shows holds everything `--dry-run=client -o json` says kubectl sent."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from capture_kubectl import COMMANDS

from phalanx.kube.server import create_app
from phalanx.kube.store import ObjectStore
from phalanx.kube.tls import ensure_certificates

pytestmark = pytest.mark.skipif(
    not Path("/usr/bin/kubectl").exists(), reason="kubectl is not installed at /usr/bin/kubectl"
)

# (fixture name, the resource to get it back as); Secrets and Nodes (create clusterrole
# --resource=nodes) are not served yet.
CREATED = [
    ("create-namespace", "namespace/x"),
    ("create-job", "job/j"),
    ("create-deployment", "deployment/d"),
    ("create-configmap", "configmap/cm"),
    ("create-priorityclass", "priorityclass/high"),
    ("create-role", "role/r"),
    ("create-rolebinding", "rolebinding/rb"),
    ("create-clusterrolebinding", "clusterrolebinding/crb"),
    ("create-service-clusterip", "service/svc"),
]


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    tmp = tmp_path_factory.mktemp("kube")
    certs = ensure_certificates(tmp, ["127.0.0.1"])
    app = create_app(ObjectStore(), {"token": ("admin", ("system:masters",))})
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning",
        ssl_certfile=str(certs.cert), ssl_keyfile=str(certs.key),
    ))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the API server did not start"
        time.sleep(0.05)
    config = tmp / "config"
    config.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}",
                                               "certificate-authority": str(certs.ca)}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u",
                                               "namespace": "default"}}],
        "users": [{"name": "u", "user": {"token": "token"}}],
    }))
    try:
        yield ["/usr/bin/kubectl", f"--kubeconfig={config}", f"--cache-dir={tmp}/cache"]
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _holds(sent: Any, served: Any, path: str = "") -> None:
    """`served` holds all of `sent`; the server may add (uid, defaults) but not drop."""
    if isinstance(sent, dict):
        assert isinstance(served, dict), path
        for key, value in sent.items():
            if value not in (None, {}, []):
                _holds(value, served.get(key), f"{path}.{key}")
    elif isinstance(sent, list):
        assert isinstance(served, list) and len(served) == len(sent), path
        for i, (a, b) in enumerate(zip(sent, served, strict=True)):
            _holds(a, b, f"{path}[{i}]")
    else:
        assert served == sent, path


@pytest.mark.parametrize(("name", "resource"), CREATED)
def test_generator_commands_create_through_protobuf(
    kubectl: list[str], name: str, resource: str
) -> None:
    args = COMMANDS[name][0]
    split = args.index("--") if "--" in args else len(args)
    sent = json.loads(subprocess.run(
        [*kubectl, *args[:split], "--dry-run=client", "-o", "json", *args[split:]],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout)
    created = subprocess.run([*kubectl, *args], capture_output=True, text=True, timeout=60)
    assert created.returncode == 0, created.stderr
    got = subprocess.run([*kubectl, "get", resource, "-o", "json"], capture_output=True,
                         text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    # Status is the server's: kube-apiserver drops what a create sends there.
    sent.pop("status", None)
    _holds(sent, json.loads(got.stdout))
