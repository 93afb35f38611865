"""The route table: where to listen, and which endpoints stand behind each Service port."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phalanx.router.main import main
from phalanx.router.table import RouteTable


def svc(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("clusterIP", "127.77.0.9")
    spec.setdefault("ports", [{"name": "http", "port": 80, "protocol": "TCP"}])
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": spec}


def slice_(name: str, service: str, port: int, *endpoints: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {"kubernetes.io/service-name": service},
        },
        "endpoints": list(endpoints),
        "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
    }


def ep(uid: str, ready: bool | None = True) -> dict[str, Any]:
    conditions = {} if ready is None else {"ready": ready}
    return {"addresses": ["127.0.0.1"], "conditions": conditions, "targetRef": {"uid": uid}}


def test_listeners_cluster_ips_node_ports_and_what_gets_none() -> None:
    table = RouteTable(lambda: 0.0, node_address="0.0.0.0")
    node = svc("np", clusterIP="127.77.0.10", type="NodePort")
    node["spec"]["ports"][0]["nodePort"] = 30080
    table.replace_services(
        [
            svc("web"),
            node,
            svc("headless", clusterIP="None"),
            svc("udp", clusterIP="127.77.0.11", ports=[{"port": 53, "protocol": "UDP"}]),
            svc("ext", type="ExternalName", clusterIP=""),
        ]
    )
    assert table.listeners() == {
        ("127.77.0.9", 80): ("ns", "web", "http"),
        ("127.77.0.10", 80): ("ns", "np", "http"),
        ("0.0.0.0", 30080): ("ns", "np", "http"),
    }
    changed: list[bool] = []
    table.changed = lambda: changed.append(True)
    table.service_event("DELETED", svc("web"))
    assert ("127.77.0.9", 80) not in table.listeners() and changed
    assert ("ns", "web") not in table.stats and ("ns", "web", "http") not in table.pools


def test_endpoints_come_from_the_services_slices_by_port_name() -> None:
    table = RouteTable(lambda: 0.0)
    table.replace_services([svc("web")])
    table.replace_slices(
        [
            slice_("web-a", "web", 8001, ep("a"), ep("b", ready=False)),
            slice_("web-b", "web", 8002, ep("c", ready=None)),  # no condition: ready
            slice_("other-a", "other", 9000, ep("d")),
        ]
    )
    pool = table.pools[("ns", "web", "http")]
    got = sorted((e.port, e.ref, e.ready) for e in pool.endpoints)
    assert got == [(8001, "a", True), (8001, "b", False), (8002, "c", True)]
    assert pool.ready_count(0.0) == 2
    table.slice_event("DELETED", slice_("web-a", "web", 8001))
    assert [e.ref for e in pool.endpoints] == ["c"]


def test_the_command_line_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PHALANX_STATE_DIR", raising=False)
    assert main([]) == 2
    assert "give --state-dir, or --server and --token-file" in capsys.readouterr().err
    assert main(["--state-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "cannot read the API port" in err and str(tmp_path / "kube.port") in err
