"""Real kubectl, ``apply --server-side`` by two field managers on one Deployment: each owns
its own container (the items of a keyed list are owned apart, as kube-apiserver's
managedFields keep them), a change to the other's container is a conflict naming the item,
and what a manager no longer applies (an env variable, its container) is removed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from test_kubectl_kueue import KUBECTL, Kube, kube_up

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

ALICE = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: main
        image: app:1
        command: ["sleep", "60"]
        env:
%s
"""
BOB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
%s
"""
SIDECAR = """\
      - name: sidecar
        image: proxy:1
        command: ["sleep", "60"]
"""


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    with kube_up(tmp_path_factory.mktemp("applyitems"), 1, 0) as k:
        yield k


def _apply(kube: Kube, manager: str, text: str, *, fails: bool = False) -> str:
    path = kube.root / f"{manager}.yaml"
    path.write_text(text)
    args = ("apply", "--server-side", f"--field-manager={manager}", "-f", str(path))
    return kube.fails(*args) if fails else kube.run(*args)


def _deployment(kube: Kube) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        kube.run("get", "deployment", "web", "-o", "json", "--show-managed-fields")
    )
    return found


def _containers(kube: Kube) -> dict[str, dict[str, Any]]:
    spec = _deployment(kube)["spec"]["template"]["spec"]
    return {c["name"]: c for c in spec["containers"]}


def test_two_managers_own_their_own_containers(kube: Kube) -> None:
    env = "        - {name: MODE, value: fast}\n        - {name: LEVEL, value: '3'}"
    _apply(kube, "alice", ALICE % env)
    _apply(kube, "bob", BOB % SIDECAR)  # another container: no conflict
    assert sorted(_containers(kube)) == ["main", "sidecar"]
    managed = {m["manager"]: m for m in _deployment(kube)["metadata"]["managedFields"]}
    bobs = managed["bob"]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert list(bobs) == ['k:{"name":"sidecar"}']
    alices = managed["alice"]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert sorted(alices['k:{"name":"main"}']["f:env"]) == [
        'k:{"name":"LEVEL"}',
        'k:{"name":"MODE"}',
    ]

    # bob may not change alice's container's image without forcing it
    theirs = "      - {name: main, image: app:2}\n" + SIDECAR
    refused = _apply(kube, "bob", BOB % theirs, fails=True)
    assert 'conflict with "alice": .spec.template.spec.containers[name="main"].image' in refused
    assert _containers(kube)["main"]["image"] == "app:1"

    # alice lets LEVEL go: it is removed, MODE stays
    _apply(kube, "alice", ALICE % "        - {name: MODE, value: fast}")
    assert [e["name"] for e in _containers(kube)["main"]["env"]] == ["MODE"]
    # bob lets his sidecar go: it is removed, alice's container stays
    _apply(kube, "bob", BOB % "        []")
    assert sorted(_containers(kube)) == ["main"]
