"""The Kubernetes API's objects across a takeover: a leader and a standby on one PostgreSQL
store; objects created through the leader's Kubernetes API (a ConfigMap; Kueue's queue
objects, which the engine's queues follow) are served by the standby once it takes over
from the killed leader, resourceVersions go on rising, and a watch from a resourceVersion
of the old leader's window gets 410 Gone (Expired), as from a kube-apiserver that lost it."""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from phalanx.server.hacluster import TOKEN, HACluster
from phalanx.server.localcluster import cluster_yaml
from phalanx.testing.postgres import TempPostgres

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"


@pytest.fixture
def ha(postgres: TempPostgres, tmp_path: Path) -> Iterator[HACluster]:
    tmp_path.chmod(0o755)
    with HACluster(tmp_path / "ha", postgres.new_database(), cluster_yaml(2, 0, cpus=4)) as ha:
        ha.start(0)
        ha.wait_role(0, "leader")
        ha.start(1)
        ha.wait_role(1, "standby")
        yield ha
        for name in ("controller0", "controller1"):
            assert "Traceback" not in ha.tail(name, 400), ha.tail(name, 400)


def _kube(ha: HACluster, i: int) -> httpx.Client:
    port_file = ha.root / f"controller{i}" / "kube.port"
    deadline = time.monotonic() + 30
    while not port_file.exists():
        assert time.monotonic() < deadline, "no kube.port"
        time.sleep(0.1)
    port = int(port_file.read_text())
    context = ssl.create_default_context(cafile=str(ha.root / f"controller{i}" / "kube-ca.crt"))
    context.check_hostname = False
    return httpx.Client(
        base_url=f"https://127.0.0.1:{port}",
        headers={"Authorization": f"Bearer {TOKEN}"},
        verify=context,
        timeout=30,
    )


def _flavor() -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": "default-flavor"}}  # fmt: skip


def _cluster_queue(cpus: int) -> dict[str, Any]:
    flavor = {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": cpus}]}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "team"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [flavor]}],
        },
    }


def test_objects_made_on_the_leader_are_served_after_the_takeover(ha: HACluster) -> None:
    with _kube(ha, 0) as leader:
        made, last = _make(leader)
    first_rv = int(made["metadata"]["resourceVersion"])
    ha.kill(0)
    ha.wait_role(1, "leader", timeout=30)
    with _kube(ha, 1) as new:
        _check_new_leader(new, first_rv, last)


def _make(leader: httpx.Client) -> tuple[dict[str, Any], int]:
    """A ConfigMap and queue objects through the leader; the ConfigMap and the last
    resourceVersion the leader handed out."""
    made = leader.post(
        "/api/v1/namespaces/default/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
              "data": {"lr": "0.1"}},
    )  # fmt: skip
    assert made.status_code == 201, made.text
    for body, path in ((_flavor(), "resourceflavors"), (_cluster_queue(3), "clusterqueues")):
        answer = leader.post(f"{KUEUE}/{path}", json=body)
        assert answer.status_code == 201, answer.text
    last = int(leader.get("/api/v1/namespaces").json()["metadata"]["resourceVersion"])
    return made.json(), last


def _check_new_leader(new: httpx.Client, first_rv: int, last: int) -> None:
    deadline = time.monotonic() + 20
    while (found := new.get("/api/v1/namespaces/default/configmaps/settings")).status_code != 200:
        assert time.monotonic() < deadline, found.text
        time.sleep(0.2)
    assert found.json()["data"] == {"lr": "0.1"}
    assert new.get(f"{KUEUE}/clusterqueues/team").status_code == 200

    # resourceVersions go on from the old leader's: a new write is newer than all it made
    more = new.post(
        "/api/v1/namespaces/default/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "later"}},
    )
    assert more.status_code == 201, more.text
    assert int(more.json()["metadata"]["resourceVersion"]) > last

    # a watch from within the old leader's window: that window is gone here
    gone = new.get(
        "/api/v1/namespaces/default/configmaps",
        params={"watch": "1", "resourceVersion": str(first_rv)},
    )
    assert gone.status_code == 410, gone.text
    assert gone.json()["reason"] == "Expired"

    # the queue objects still feed the engine: a quota change through the new leader shows
    changed = new.put(
        f"{KUEUE}/clusterqueues/team",
        json={**_cluster_queue(4), "metadata": {"name": "team"}},
    )
    assert changed.status_code == 200, changed.text
    deadline = time.monotonic() + 20
    while True:
        status = new.get(f"{KUEUE}/clusterqueues/team").json().get("status") or {}
        active = [c for c in status.get("conditions") or () if c["type"] == "Active"]
        if active and active[0]["status"] == "True" and "flavorsReservation" in status:
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.2)
