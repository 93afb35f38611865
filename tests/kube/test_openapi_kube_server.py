"""kubectl 1.32 against Phalanx's own Kubernetes API (phalanx.kube.server) with these documents:
field validation end to end, in kube-apiserver's words."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from openapi_data import EXAMPLES, needs_data, needs_examples

from phalanx.kube.kubeconfig import kubeconfig as kubeconfig_for
from phalanx.kube.server import create_app
from phalanx.kube.store import ObjectStore
from phalanx.kube.tls import ensure_certificates

KUBECTL = shutil.which("kubectl")
pytestmark = [
    needs_data,
    needs_examples,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed"),
]
TOKEN = "test-token"


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The kube app on TLS, as the controller serves it (kubectl sends no token over http)."""
    tmp = tmp_path_factory.mktemp("kube")
    certs = ensure_certificates(tmp, ["127.0.0.1"])
    app = create_app(ObjectStore(), {TOKEN: ("admin", ("system:masters",))})
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        ssl_certfile=str(certs.cert),
        ssl_keyfile=str(certs.key),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()
    # Generous: on a loaded machine the server thread can take long to start, and a kubectl
    # run before it has would fail for the wrong reason.
    deadline = time.monotonic() + 120
    while not server.started and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.05)
    assert server.started, "the kube API did not start"
    path = tmp / "kubeconfig"
    path.write_text(
        json.dumps(
            kubeconfig_for(f"https://127.0.0.1:{port}", certs.ca.read_bytes(), "admin", TOKEN)
        )
    )
    try:
        yield path
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def _kubectl(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    return subprocess.run(
        [KUBECTL, "--kubeconfig", str(config), "--cache-dir", str(config.parent / "cache"), *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


DERIVED = EXAMPLES / "derived"


@pytest.mark.parametrize(
    ("name", "kind"),
    [("unknown-field-job.yaml", "Job"), ("unknown-field-pytorchjob.yaml", "PyTorchJob")],
)
def test_strict_unknown_field_is_refused_naming_it(kubeconfig: Path, name: str, kind: str) -> None:
    done = _kubectl(kubeconfig, "apply", "--validate=strict", "-v=6", "-f", str(DERIVED / name))
    assert done.returncode == 1
    assert "fieldValidation=Strict" in done.stderr
    assert (
        f'Error from server (BadRequest): error when creating "{DERIVED / name}": {kind} in '
        f'version "v1" cannot be handled as a {kind}: strict decoding error: unknown field '
        '"spec.bogusHoldoutField"'
    ) in done.stderr
    assert (
        "NotFound" in _kubectl(kubeconfig, "get", kind.lower(), "k8s-holdout-unknown-field").stderr
    )


def test_invalid_value_and_name_are_422(kubeconfig: Path) -> None:
    done = _kubectl(kubeconfig, "apply", "-f", str(DERIVED / "invalid-value-job.yaml"))
    assert done.returncode == 1
    assert (
        'The Job "k8s-holdout-invalid-value" is invalid: spec.parallelism: Invalid value: -1: '
        "must be greater than or equal to 0"
    ) in done.stderr
    done = _kubectl(kubeconfig, "apply", "-f", str(DERIVED / "invalid-name-job.yaml"))
    assert 'The Job "K8s_Holdout_Bad_Name" is invalid: metadata.name: Invalid value' in done.stderr


def test_warn_creates_and_warns(kubeconfig: Path) -> None:
    done = _kubectl(
        kubeconfig, "create", "--validate=warn", "-f", str(DERIVED / "unknown-field-job.yaml")
    )
    assert done.returncode == 0, done.stderr
    assert 'Warning: unknown field "spec.bogusHoldoutField"' in done.stderr
    got = _kubectl(kubeconfig, "get", "job", "k8s-holdout-unknown-field", "-o", "json")
    assert "bogusHoldoutField" not in json.loads(got.stdout)["spec"]  # dropped, as upstream


def test_an_unknown_field_named_in_any_script_is_warned_in_utf8(kubeconfig: Path) -> None:
    """The Warning header travels as UTF-8, as Go writes it (it was a 500: Starlette encodes
    a header as latin-1); kubectl prints it as it is."""
    path = kubeconfig.parent / "cjk-job.yaml"
    path.write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: cjk\nspec:\n  名前: 1\n"
        "  template:\n    spec:\n      restartPolicy: Never\n"
        "      containers: [{name: c, image: busybox}]\n",
        encoding="utf-8",
    )
    done = _kubectl(kubeconfig, "create", "--validate=warn", "-f", str(path))
    assert done.returncode == 0, done.stderr
    assert 'Warning: unknown field "spec.名前"' in done.stderr


def test_every_adapted_manifest_passes_strict_validation(kubeconfig: Path) -> None:
    # (kubectl create namespace would send protobuf; a manifest goes as JSON.)
    ns = kubeconfig.parent / "ns.yaml"
    ns.write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kubeflow\n")
    assert _kubectl(kubeconfig, "create", "-f", str(ns)).returncode == 0
    for path in sorted((EXAMPLES / "adapted").rglob("*.yaml")):
        # create, not apply: kubectl apply refuses generateName (sample-job.yaml has one).
        done = _kubectl(
            kubeconfig, "create", "--validate=strict", "--dry-run=server", "-f", str(path)
        )
        assert done.returncode == 0, (path, done.stderr)


_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: web
        image: nginx
        env:
        - {{name: A, value: "1"}}
{extra}"""


def test_apply_patches_with_the_documents_merge_keys_and_strict_checks_them(
    kubeconfig: Path,
) -> None:
    """kubectl apply on an existing object computes a strategic merge patch from the v3
    documents' x-kubernetes-patch-* (env merged by name) and sends it with
    fieldValidation=Strict; an unknown field in it is refused, in Warn it is dropped."""
    path = kubeconfig.parent / "web.yaml"

    def apply(replicas: int, extra: str, *flags: str) -> subprocess.CompletedProcess[str]:
        path.write_text(_DEPLOYMENT.format(replicas=replicas, extra=extra))
        return _kubectl(kubeconfig, "apply", *flags, "-f", str(path))

    assert apply(1, "").returncode == 0
    assert apply(2, '        - {name: B, value: "2"}\n').returncode == 0
    got = json.loads(_kubectl(kubeconfig, "get", "deploy", "web", "-o", "json").stdout)
    assert got["spec"]["replicas"] == 2
    assert [e["name"] for e in got["spec"]["template"]["spec"]["containers"][0]["env"]] == [
        "A",
        "B",
    ]
    done = apply(3, "  bogus: 1\n")
    assert done.returncode == 1
    assert (
        'error when patching "' + str(path) + '": Deployment in version "v1" cannot be handled '
        'as a Deployment: strict decoding error: unknown field "spec.bogus"'
    ) in done.stderr
    done = apply(3, "  bogus: 1\n", "--validate=warn")
    assert done.returncode == 0 and 'Warning: unknown field "spec.bogus"' in done.stderr
    got = json.loads(_kubectl(kubeconfig, "get", "deploy", "web", "-o", "json").stdout)
    assert got["spec"]["replicas"] == 3 and "bogus" not in got["spec"]
