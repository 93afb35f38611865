"""Real kubectl: ``v1`` Secrets (``kubectl create secret generic`` sends protobuf;
``stringData`` is kept as base64 ``data``), read by a Job's pod through
``valueFrom.secretKeyRef`` and ``configMapKeyRef``; and server-side apply's conflict
between two field managers, which ``--force-conflicts`` settles."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from test_kubectl_kueue import KUBECTL, Kube, kube_up

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: reader}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "echo password=$PASSWORD mode=$MODE token=$TOKEN"]
        env:
        - name: PASSWORD
          valueFrom: {secretKeyRef: {name: db, key: password}}
        - name: TOKEN
          valueFrom: {secretKeyRef: {name: api, key: token}}
        - name: MODE
          valueFrom: {configMapKeyRef: {name: settings, key: mode}}
"""

STRING_DATA = """\
apiVersion: v1
kind: Secret
metadata: {name: api}
stringData: {token: abc-123}
"""


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    with kube_up(tmp_path_factory.mktemp("secrets"), 1, 0) as k:
        yield k


def test_a_generic_secret_is_kept_as_base64_and_listed(kube: Kube) -> None:
    kube.run("create", "secret", "generic", "db", "--from-literal=password=s3cret")
    data = kube.run("get", "secret", "db", "-o", "jsonpath={.data.password}")
    assert base64.b64decode(data) == b"s3cret"
    rows = kube.run("get", "secrets").splitlines()
    assert rows[0].split() == ["NAME", "TYPE", "DATA", "AGE"]
    assert [r.split()[:3] for r in rows[1:] if r.startswith("db ")] == [["db", "Opaque", "1"]]
    path = kube.root / "api.yaml"
    path.write_text(STRING_DATA)
    kube.run("apply", "-f", str(path))
    token = kube.run("get", "secret", "api", "-o", "jsonpath={.data.token}")
    assert base64.b64decode(token) == b"abc-123"
    assert kube.run("get", "secret", "api", "-o", "jsonpath={.stringData}") == ""


def test_a_pod_reads_secret_and_config_map_keys_into_its_environment(kube: Kube) -> None:
    kube.run("create", "configmap", "settings", "--from-literal=mode=fast")
    path = kube.root / "job.yaml"
    path.write_text(JOB)
    kube.run("apply", "-f", str(path))
    kube.run("wait", "--for=condition=complete", "job/reader", "--timeout=90s")
    assert kube.run("logs", "job/reader").strip() == "password=s3cret mode=fast token=abc-123"


def test_data_that_is_not_base64_is_refused(kube: Kube) -> None:
    bad = kube.root / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: bad}\ndata: {k: '%%%'}\n")
    assert "illegal base64" in kube.fails("apply", "-f", str(bad))


def test_server_side_apply_conflicts_between_managers_and_force_wins(kube: Kube) -> None:
    first = kube.root / "lr1.yaml"
    first.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lr}\ndata: {lr: '0.1'}\n")
    second = kube.root / "lr2.yaml"
    second.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lr}\ndata: {lr: '0.2'}\n")
    kube.run("apply", "--server-side", "--field-manager=alice", "-f", str(first))
    refused = kube.fails("apply", "--server-side", "--field-manager=bob", "-f", str(second))
    assert 'Apply failed with 1 conflict: conflict with "alice": .data.lr' in refused
    kube.run(
        "apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", str(second)
    )
    assert kube.run("get", "configmap", "lr", "-o", "jsonpath={.data.lr}") == "0.2"
