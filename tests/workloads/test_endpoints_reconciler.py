"""The EndpointSlice/Endpoints reconciler: which pods, which ports, which conditions."""

from __future__ import annotations

from typing import Any

from phalanx.workloads import endpoints


def service(selector: dict[str, str] | None = None, **port: Any) -> dict[str, Any]:
    port = {"name": "http", "port": 80, "protocol": "TCP", "targetPort": "web", **port}
    spec: dict[str, Any] = {"ports": [port]}
    if selector is not None:
        spec["selector"] = selector
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid", "labels": {"x": "1"}},
        "spec": spec,
    }


def pod(
    name: str,
    port: int = 8000,
    labels: dict[str, str] | None = None,
    phase: str = "Running",
    ready: str | None = None,
    deleting: bool = False,
    ip: str | None = "127.0.0.1",
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "labels": {"app": "web"} if labels is None else labels,
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict[str, Any] = {"phase": phase}
    if ip:
        status["podIP"] = ip
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "c", "ports": [{"name": "web", "containerPort": port}]}],
        },
        "status": status,
    }


def test_selected_running_pods_become_endpoints_with_their_named_ports() -> None:
    pods = [
        pod("a", 8001),
        pod("b", 8002),
        pod("other", labels={"app": "db"}),
        pod("done", phase="Succeeded"),
        pod("pending", phase="Pending", ip=None),
    ]
    plan = endpoints.reconcile(service({"app": "web"}), pods, [])
    # a named port that resolves differently per pod: one slice per resolved port set
    assert len(plan.create) == 2
    by_port = {s["ports"][0]["port"]: s for s in plan.create}
    assert set(by_port) == {8001, 8002}
    one = by_port[8001]
    assert one["addressType"] == "IPv4"
    assert one["ports"] == [{"name": "http", "port": 8001, "protocol": "TCP"}]
    assert one["endpoints"] == [
        {
            "addresses": ["127.0.0.1"],
            "conditions": {"ready": True, "serving": True, "terminating": False},
            "targetRef": {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "uid-a"},
            "nodeName": "n1",
        }
    ]
    labels = one["metadata"]["labels"]
    assert labels[endpoints.SERVICE_NAME] == "web"
    assert labels[endpoints.MANAGED_BY] == endpoints.MANAGER
    assert one["metadata"]["ownerReferences"][0]["uid"] == "svc-uid"
    assert plan.endpoints is not None
    addresses = sorted(
        (s["ports"][0]["port"], a["ip"]) for s in plan.endpoints["subsets"] for a in s["addresses"]
    )
    assert addresses == [(8001, "127.0.0.1"), (8002, "127.0.0.1")]


def test_conditions_follow_the_ready_condition_and_deletion() -> None:
    pods = [
        pod("ready", ready="True"),
        pod("unready", ready="False"),
        pod("going", ready="True", deleting=True),
    ]
    plan = endpoints.reconcile(service({"app": "web"}, targetPort=8000), pods, [])
    (one,) = plan.create
    conds = {e["targetRef"]["name"]: e["conditions"] for e in one["endpoints"]}
    assert conds == {
        "going": {"ready": False, "serving": True, "terminating": True},
        "ready": {"ready": True, "serving": True, "terminating": False},
        "unready": {"ready": False, "serving": False, "terminating": False},
    }
    assert plan.endpoints is not None
    (subset,) = plan.endpoints["subsets"]
    assert [a["ip"] for a in subset["addresses"]] == ["127.0.0.1"]
    assert [a["targetRef"]["name"] for a in subset["notReadyAddresses"]] == ["unready"]


def test_a_second_pass_changes_nothing_and_a_gone_pod_updates_or_deletes() -> None:
    svc = service({"app": "web"}, targetPort=8000)
    first = endpoints.reconcile(svc, [pod("a"), pod("b")], [])
    stored = [{**s, "metadata": {**s["metadata"], "resourceVersion": "5"}} for s in first.create]
    again = endpoints.reconcile(svc, [pod("a"), pod("b")], stored)
    assert not again.create and not again.update and not again.delete
    fewer = endpoints.reconcile(svc, [pod("a")], stored)
    assert [e["targetRef"]["name"] for e in fewer.update[0]["endpoints"]] == ["a"]
    # a port change moves the endpoints to another slice: the old one goes
    moved = endpoints.reconcile(service({"app": "web"}, targetPort=9000), [pod("a")], stored)
    assert moved.delete == [stored[0]["metadata"]["name"]] and len(moved.create) == 1


def test_no_pods_leaves_one_empty_slice_and_no_selector_makes_none() -> None:
    plan = endpoints.reconcile(service({"app": "web"}), [], [])
    assert len(plan.create) == 1 and plan.create[0]["endpoints"] == []
    assert plan.endpoints is not None and "subsets" not in plan.endpoints
    manual = endpoints.reconcile(service(None), [pod("a")], [])
    assert not manual.create and manual.endpoints is None


def test_running_without_a_ready_condition_is_ready_pending_is_not() -> None:
    assert endpoints.endpoint_ready(pod("a")) == (True, True, False)
    assert endpoints.endpoint_ready(pod("b", phase="Pending")) == (False, False, False)
    assert endpoints.selects(service({"app": "web"}), pod("a"))
    assert not endpoints.selects(service({}), pod("a"))
