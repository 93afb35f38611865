"""Server-side apply between two appliers: a field one owns, another may not change without
``force`` (409 Conflict in kube-apiserver's words); the same value is shared; forced, the
field changes owner."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

from phalanx.kube.managedfields import field_set
from phalanx.kube.server import create_app
from phalanx.kube.store import ObjectStore

APPLY = {"Content-Type": "application/apply-patch+yaml", "Authorization": "Bearer tok"}
CM = "/api/v1/namespaces/default/configmaps/settings"


@pytest.fixture
def api() -> Iterator[TestClient]:
    app = create_app(ObjectStore(), {"tok": ("ann", ("system:authenticated", "system:masters"))})
    with TestClient(app, base_url="https://testserver") as client:
        yield client


def apply(api: TestClient, manager: str, data: dict[str, str], force: bool = False) -> Any:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": data}
    params = {"fieldManager": manager, **({"force": "true"} if force else {})}
    return api.patch(CM, content=json.dumps(body), headers=APPLY, params=params)


def owners(api: TestClient) -> dict[str, Any]:
    found = api.get(CM, headers={"Authorization": "Bearer tok"}).json()
    return {m["manager"]: m["fieldsV1"] for m in found["metadata"]["managedFields"]}


def test_a_field_another_applier_owns_is_a_conflict_unless_forced(api: TestClient) -> None:
    assert apply(api, "alice", {"lr": "0.1", "epochs": "3"}).status_code == 201
    assert owners(api)["alice"] == {"f:data": {"f:lr": {}, "f:epochs": {}}}
    refused = apply(api, "bob", {"lr": "0.2"})
    assert refused.status_code == 409
    status = refused.json()
    assert status["reason"] == "Conflict"
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "alice": .data.lr'
    assert status["details"]["causes"] == [
        {"type": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".data.lr"}
    ]
    # the same value is no conflict: both own it
    assert apply(api, "bob", {"lr": "0.1"}).status_code == 200
    forced = apply(api, "bob", {"lr": "0.3"}, force=True)
    assert forced.status_code == 200 and forced.json()["data"]["lr"] == "0.3"
    assert owners(api)["alice"] == {"f:data": {"f:epochs": {}}}
    assert owners(api)["bob"] == {"f:data": {"f:lr": {}}}
    # alice now conflicts with bob on lr
    again = apply(api, "alice", {"lr": "0.1", "epochs": "3"})
    assert again.status_code == 409 and '"bob": .data.lr' in again.json()["message"]


def test_several_conflicts_are_listed_by_manager(api: TestClient) -> None:
    apply(api, "alice", {"a": "1", "b": "2"})
    refused = apply(api, "bob", {"a": "9", "b": "9"})
    assert refused.json()["message"] == (
        'Apply failed with 2 conflicts: conflicts with "alice":\n- .data.a\n- .data.b'
    )


def test_the_field_set_of_an_applied_configuration() -> None:
    applied = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}},
    }
    assert field_set(applied) == {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:template": {"f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:name": {}}}}},
        },
    }
    # a custom resource's lists are owned whole (no schema here says their keys)
    assert field_set(applied, keyed=False)["f:spec"]["f:template"] == {
        "f:spec": {"f:containers": {}}
    }


def test_keyed_items_are_owned_apart_as_kube_apiserver_keeps_them() -> None:
    container = {
        "name": "main",
        "image": "x",
        "env": [{"name": "A", "value": "1"}],
        "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}],
        "args": ["a", "b"],
    }
    fields = field_set({"spec": {"containers": [container]}})
    item = fields["f:spec"]["f:containers"]['k:{"name":"main"}']
    assert item["."] == {} and item["f:image"] == {} and item["f:args"] == {}
    assert item["f:env"] == {'k:{"name":"A"}': {".": {}, "f:name": {}, "f:value": {}}}
    assert sorted(item["f:ports"]) == [
        'k:{"containerPort":53,"protocol":"UDP"}',
        'k:{"containerPort":80,"protocol":"TCP"}',  # TCP: the protocol's default
    ]
    service = field_set({"spec": {"ports": [{"port": 443, "targetPort": 8443}]}})
    assert list(service["f:spec"]["f:ports"]) == ['k:{"port":443,"protocol":"TCP"}']


DEPLOY = "/apis/apps/v1/namespaces/default/deployments/web"


def apply_deployment(
    api: TestClient, manager: str, containers: list[dict[str, Any]], force: bool = False
) -> Any:
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers},
            },
        },
    }
    if manager == "alice":
        body["spec"]["replicas"] = 1
    params = {"fieldManager": manager, **({"force": "true"} if force else {})}
    return api.patch(DEPLOY, content=json.dumps(body), headers=APPLY, params=params)


def containers_of(api: TestClient) -> dict[str, dict[str, Any]]:
    found = api.get(DEPLOY, headers={"Authorization": "Bearer tok"}).json()
    return {c["name"]: c for c in found["spec"]["template"]["spec"]["containers"]}


def test_two_appliers_own_different_containers_without_conflict(api: TestClient) -> None:
    main = {"name": "main", "image": "app:1", "env": [{"name": "MODE", "value": "a"}]}
    side = {"name": "sidecar", "image": "proxy:1"}
    assert apply_deployment(api, "alice", [main]).status_code == 201
    # bob's sidecar is another item of the list: no conflict, and alice's container stays
    assert apply_deployment(api, "bob", [side]).status_code == 200
    assert sorted(containers_of(api)) == ["main", "sidecar"]
    found = api.get(DEPLOY, headers={"Authorization": "Bearer tok"}).json()
    managed = {m["manager"]: m["fieldsV1"] for m in found["metadata"]["managedFields"]}
    bobs = managed["bob"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert list(bobs) == ['k:{"name":"sidecar"}']
    # a field of alice's container is hers: bob changing it is a conflict named by item
    refused = apply_deployment(api, "bob", [side, {"name": "main", "image": "app:2"}])
    assert refused.status_code == 409
    assert refused.json()["message"] == (
        'Apply failed with 1 conflict: conflict with "alice": '
        '.spec.template.spec.containers[name="main"].image'
    )
    # alice lets an env variable go: it is removed; her container and bob's stay
    assert apply_deployment(api, "alice", [{"name": "main", "image": "app:1"}]).status_code == 200
    assert not containers_of(api)["main"].get("env")
    # bob drops his sidecar: it goes, as it was his alone
    assert apply_deployment(api, "bob", []).status_code == 200
    assert sorted(containers_of(api)) == ["main"]


def test_an_item_another_applier_shares_is_not_removed(api: TestClient) -> None:
    main = {"name": "main", "image": "app:1"}
    apply_deployment(api, "alice", [main])
    apply_deployment(api, "bob", [main])  # the same values: both own them
    assert apply_deployment(api, "alice", []).status_code == 200
    assert containers_of(api)["main"]["image"] == "app:1"  # bob still owns it
