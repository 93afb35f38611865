"""Services' cluster IPs and node ports: allocation, requests, conflicts, updates, restart."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.kube.errors import Invalid
from phalanx.kube.persist import MemoryObjects
from phalanx.kube.services import ServiceAllocator
from phalanx.kube.store import ObjectStore

SERVICES = ("", "services")


def svc(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("ports", [{"port": 80}])
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"app": name}, **spec},
    }


def test_cluster_ips_come_from_the_range_lowest_free_first() -> None:
    store = ObjectStore()
    a = store.create(svc("a"))
    b = store.create(svc("b"))
    assert a["spec"]["clusterIP"] == "127.77.0.1"
    assert a["spec"]["clusterIPs"] == ["127.77.0.1"]
    assert b["spec"]["clusterIP"] == "127.77.0.2"
    store.delete(SERVICES, "default", "a")
    assert store.create(svc("c"))["spec"]["clusterIP"] == "127.77.0.1"  # released on delete


def test_a_requested_ip_is_kept_and_a_taken_one_is_422_in_kube_apiservers_words() -> None:
    store = ObjectStore()
    assert store.create(svc("a", clusterIP="127.77.3.4"))["spec"]["clusterIP"] == "127.77.3.4"
    with pytest.raises(Invalid) as err:
        store.create(svc("b", clusterIP="127.77.3.4"))
    assert err.value.code == 422
    assert "failed to allocate IP 127.77.3.4: provided IP is already allocated" in str(err.value)
    assert err.value.causes[0][0] == "spec.clusterIPs"
    with pytest.raises(Invalid, match="is not in the valid range"):
        store.create(svc("c", clusterIP="10.0.0.1"))


def test_headless_services_get_no_ip() -> None:
    store = ObjectStore()
    made = store.create(svc("h", clusterIP="None"))
    assert made["spec"]["clusterIP"] == "None" and made["spec"]["clusterIPs"] == ["None"]
    assert store.create(svc("a"))["spec"]["clusterIP"] == "127.77.0.1"


def test_node_ports_are_allocated_requested_and_checked() -> None:
    store = ObjectStore()
    made = store.create(svc("a", type="NodePort", ports=[{"port": 80}, {"port": 81, "name": "b"}]))
    assert [p["nodePort"] for p in made["spec"]["ports"]] == [30000, 30001]
    asked = store.create(svc("b", type="NodePort", ports=[{"port": 80, "nodePort": 31000}]))
    assert asked["spec"]["ports"][0]["nodePort"] == 31000
    with pytest.raises(Invalid, match=r"spec.ports\[0\].nodePort: .*provided port is already"):
        store.create(svc("c", type="NodePort", ports=[{"port": 80, "nodePort": 31000}]))
    with pytest.raises(Invalid, match="The range of valid ports is 30000-32767"):
        store.create(svc("d", type="NodePort", ports=[{"port": 80, "nodePort": 80}]))
    with pytest.raises(Invalid, match="may not be used when `type` is 'ClusterIP'"):
        store.create(svc("e", ports=[{"port": 80, "nodePort": 30500}]))


def test_an_update_keeps_what_was_allocated_and_refuses_another_ip() -> None:
    store = ObjectStore()
    made = store.create(svc("a", type="NodePort"))
    again = svc("a", type="NodePort")  # kubectl apply of the same file: no IP, no nodePort
    kept = store.update(again)
    assert kept["spec"]["clusterIP"] == made["spec"]["clusterIP"]
    assert kept["spec"]["ports"][0]["nodePort"] == made["spec"]["ports"][0]["nodePort"]
    with pytest.raises(Invalid, match="may not change once set"):
        store.update(svc("a", type="NodePort", clusterIP="127.77.9.9"))
    # ClusterIP -> NodePort on update allocates the port
    store.create(svc("b"))
    moved = store.update(svc("b", type="NodePort"))
    assert moved["spec"]["ports"][0]["nodePort"] == 30001


def test_a_restarted_store_allocates_around_the_stored_services() -> None:
    table = MemoryObjects()
    first = ObjectStore(table)
    first.create(svc("a"))
    first.create(svc("b", type="NodePort"))
    second = ObjectStore(table)
    made = second.create(svc("c", type="NodePort"))
    assert made["spec"]["clusterIP"] == "127.77.0.3"
    assert made["spec"]["ports"][0]["nodePort"] == 30001


def test_the_range_is_configurable_and_a_full_one_says_so() -> None:
    store = ObjectStore(services=ServiceAllocator("10.9.0.0/30", node_ports=(30000, 30000)))
    assert store.create(svc("a"))["spec"]["clusterIP"] == "10.9.0.1"
    assert store.create(svc("b"))["spec"]["clusterIP"] == "10.9.0.2"
    with pytest.raises(Invalid, match="range is full"):
        store.create(svc("c"))


def test_a_service_needs_ports_unless_headless() -> None:
    store = ObjectStore()
    with pytest.raises(Invalid, match=r"spec\.ports: Required value"):
        store.create(svc("a", ports=[]))
    assert store.create(svc("h", clusterIP="None", ports=[]))["spec"]["clusterIP"] == "None"
