"""Who is asking: callers without a known token are refused before anything is done."""

from __future__ import annotations

import pytest
from routes_scene import CMD, Api


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Bearer "},
        {"Authorization": "Basic t-alice"},
        {"Authorization": "t-alice"},
    ],
)
def test_unknown_callers_are_refused(api: Api, headers: dict[str, str]) -> None:
    for method, path in [("GET", "/v1/jobs"), ("POST", "/v1/jobs"), ("GET", "/v1/nodes")]:
        r = api.client.request(method, path, headers=headers, json={"command": CMD})
        assert r.status_code == 401
        assert "token" in r.json()["error"]
    assert api.journal.events == []
