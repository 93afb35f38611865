"""Hypothesis-made manifests and bodies never make the Kubernetes API answer 500 (an answer
is a Status with a 4xx, or the object), and the app keeps serving after each."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.kube import kinds
from phalanx.kube.server import create_app
from phalanx.kube.store import ObjectStore

AUTH = {"Authorization": "Bearer tok"}
STORE = ObjectStore()
# httpx's own ASGI transport, not Starlette's test client: that one cannot read a header that
# is not ASCII (a Warning naming an unknown field `spec.名前` goes as UTF-8, as Go sends it).
_LOOP = asyncio.new_event_loop()
_CLIENT = httpx.AsyncClient(
    transport=httpx.ASGITransport(create_app(STORE, {"tok": ("root", ("system:masters",))})),
    base_url="http://kube",
    headers=AUTH,
)


def request(method: str, url: str, **kwargs: Any) -> httpx.Response:
    return _LOOP.run_until_complete(_CLIENT.request(method, url, **kwargs))


@pytest.fixture(scope="module", autouse=True)
def _close_the_client() -> Iterator[None]:
    yield
    _LOOP.run_until_complete(_CLIENT.aclose())
    _LOOP.close()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
names = st.one_of(st.text(max_size=12), st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True))


@st.composite
def manifests(draw: st.DrawFn) -> tuple[kinds.Kind, dict[str, Any]]:
    kind = draw(st.sampled_from(kinds.KINDS))
    body: dict[str, Any] = {
        "apiVersion": draw(st.sampled_from([kind.api_version, "v1", "x/y"])),
        "kind": draw(st.sampled_from([kind.kind, "Pod", ""])),
        "metadata": draw(
            st.one_of(
                st.fixed_dictionaries(
                    {"name": names},
                    optional={
                        "labels": st.dictionaries(names, names, max_size=2),
                        "ownerReferences": json_values,
                        "finalizers": st.lists(names, max_size=2),
                        "generateName": names,
                        "namespace": names,
                    },
                ),
                json_values,
            )
        ),
    }
    body.update(
        draw(
            st.dictionaries(
                st.sampled_from(["spec", "status", "rules", "data"]), json_values, max_size=2
            )
        )
    )
    return kind, body


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    manifests(),
    st.sampled_from(["POST", "PUT", "PATCH", "DELETE"]),
    st.sampled_from(
        [
            "application/json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/json-patch+json",
            "application/apply-patch+yaml",
        ]
    ),
)
def test_no_manifest_makes_a_500(
    case: tuple[kinds.Kind, dict[str, Any]], method: str, content_type: str
) -> None:
    kind, body = case
    base = kind.path("default" if kind.namespaced else None)
    name = body["metadata"].get("name") if isinstance(body["metadata"], dict) else None
    named = method != "POST" and isinstance(name, str) and name.strip("./")
    url = f"{base}/{quote(str(name), safe='')}" if named else base
    if method == "PATCH" and url == base:
        url = f"{base}/x"
    ctype = content_type if method == "PATCH" else "application/json"
    r = request(
        method,
        url,
        content=json.dumps(body),
        headers={"Content-Type": ctype},
        params={"fieldManager": "fuzz"},
    )
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        assert r.json()["kind"] == "Status"
    assert request("GET", "/api/v1/namespaces/default").status_code == 200


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=64), st.sampled_from(["application/json", "application/yaml"]))
def test_garbage_bodies_are_400(body: bytes, content_type: str) -> None:
    r = request(
        "POST",
        "/apis/batch/v1/namespaces/default/jobs",
        content=body,
        headers={"Content-Type": content_type},
    )
    assert 400 <= r.status_code < 500, r.text


@pytest.mark.parametrize("content_type", ["application/json", "application/yaml"])
def test_a_body_nested_past_the_parsers_recursion_is_400(content_type: str) -> None:
    # [[[...]]] 100,000 deep: the JSON decoder's and PyYAML's RecursionError was a 500.
    body = b'{"apiVersion": "batch/v1", "kind": "Job", "spec": ' + b"[" * 100_000
    body += b"]" * 100_000 + b"}"
    r = request(
        "POST",
        "/apis/batch/v1/namespaces/default/jobs",
        content=body,
        headers={"Content-Type": content_type},
    )
    assert r.status_code == 400 and "nested too deeply" in r.text, r.text


def test_a_watch_from_a_resource_version_of_unicode_digits_is_400() -> None:
    # "²".isdigit() is true and int("²") raises: the watch answered 500.
    r = request("GET", "/api/v1/namespaces?watch=true&timeoutSeconds=1&resourceVersion=²")
    assert r.status_code == 400 and "invalid resource version" in r.text, r.text
