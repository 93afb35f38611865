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
        "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {}}}},
    }
