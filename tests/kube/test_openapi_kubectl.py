"""Real kubectl 1.32 against a tiny server that serves only discovery, these OpenAPI documents
and create/get: kubectl must see server-side field validation and send fieldValidation=Strict,
and it must show the server's strict decoding error naming the field."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from openapi_data import EXAMPLES, needs_data, needs_examples

from phalanx.kube.openapi import (
    bad_request_message,
    kinds,
    loads_strict,
    openapi_v3,
    openapi_v3_index,
    validate,
)

KUBECTL = shutil.which("kubectl")
pytestmark = [
    needs_data,
    needs_examples,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed"),
]


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


class _Handler(BaseHTTPRequestHandler):
    seen: list[tuple[str, str, dict[str, list[str]]]]
    hide_field_validation = False  # the control: documents without the parameter

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(
        self, code: int, body: Any, ctype: str = "application/json", warnings: Sequence[str] = ()
    ) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(raw)))
        for text in warnings:  # RFC 7234 warn-code 299, as kube-apiserver sends them
            self.send_header("Warning", "299 - " + json.dumps(text))
        self.end_headers()
        self.wfile.write(raw)

    def _discovery(self, path: str) -> Any:
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"]}
        if path == "/apis":
            groups: dict[str, list[str]] = {}
            for k in kinds():
                if k.group and k.version not in groups.setdefault(k.group, []):
                    groups[k.group].append(k.version)
            return {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [
                    {
                        "name": g,
                        "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                        "preferredVersion": {"groupVersion": f"{g}/{vs[-1]}", "version": vs[-1]},
                    }
                    for g, vs in sorted(groups.items())
                ],
            }
        gv = path.removeprefix("/api/").removeprefix("/apis/")
        resources = [
            {
                "name": k.plural,
                "singularName": k.kind.lower(),
                "namespaced": k.namespaced,
                "kind": k.kind,
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            }
            for k in kinds()
            if k.api_version == gv
        ]
        return (
            {"kind": "APIResourceList", "groupVersion": gv, "resources": resources}
            if (resources)
            else None
        )

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        self.seen.append(("GET", url.path, parse_qs(url.query)))
        if url.path == "/version":
            return self._send(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0"})
        if url.path == "/openapi/v3":
            return self._send(200, openapi_v3_index())
        if url.path.startswith("/openapi/v3/"):
            doc = openapi_v3(url.path.removeprefix("/openapi/v3/"))
            if doc is not None and self.hide_field_validation:
                doc = doc.replace(b'"name":"fieldValidation"', b'"name":"fieldValidationHidden"')
            if doc is not None:
                return self._send(200, doc)
        found = self._discovery(url.path.rstrip("/"))
        if found is not None:
            return self._send(200, found)
        self._send(
            404, _status(404, "NotFound", "the server could not find the requested resource")
        )

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        self.seen.append(("POST", url.path, query))
        body = self.rfile.read(int(self.headers["Content-Length"]))
        obj = loads_strict(body)
        mode = query.get("fieldValidation", ["Warn"])[0]  # kube-apiserver's default is Warn
        errors, warnings = validate(obj, mode)
        if any(e.bad_request for e in errors):
            kind, version = obj["kind"], obj["apiVersion"].rpartition("/")[2]
            message = (
                f'{kind} in version "{version}" cannot be handled as a {kind}: '
                + bad_request_message(errors)
            )
            return self._send(400, _status(400, "BadRequest", message))
        if errors:
            return self._send(422, _status(422, "Invalid", errors[0].message))
        self._send(201, obj, warnings=warnings)


@pytest.fixture(params=[False], ids=["documents-as-built"])
def server(
    request: pytest.FixtureRequest,
) -> Iterator[tuple[str, list[tuple[str, str, dict[str, list[str]]]]]]:
    seen: list[tuple[str, str, dict[str, list[str]]]] = []
    handler = type("Handler", (_Handler,), {"seen": seen, "hide_field_validation": request.param})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def _kubectl(url: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    config = tmp / "kubeconfig"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": url}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    assert KUBECTL is not None
    return subprocess.run(
        [KUBECTL, "--kubeconfig", str(config), "--cache-dir", str(tmp / "cache"), *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.mark.parametrize(
    ("name", "collection"),
    [
        ("unknown-field-job.yaml", "/apis/batch/v1/namespaces/default/jobs"),
        ("unknown-field-pytorchjob.yaml", "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs"),
    ],
)
def test_kubectl_sends_strict_and_shows_the_field(
    server: tuple[str, list[Any]], tmp_path: Path, name: str, collection: str
) -> None:
    url, seen = server
    done = _kubectl(
        url,
        tmp_path,
        "apply",
        "--validate=strict",
        "--dry-run=server",
        "-v=8",
        "-f",
        str(EXAMPLES / "derived" / name),
    )
    assert done.returncode == 1, done.stderr[-3000:]
    posts = [q for method, path, q in seen if method == "POST" and path == collection]
    assert posts, seen
    assert posts[0]["fieldValidation"] == ["Strict"] and posts[0]["dryRun"] == ["All"]
    assert "fieldValidation=Strict" in done.stderr  # -v=8 logs the request URL
    kind = "Job" if name == "unknown-field-job.yaml" else "PyTorchJob"
    assert (
        f'Error from server (BadRequest): error when creating "{EXAMPLES / "derived" / name}": '
        f'{kind} in version "v1" cannot be handled as a {kind}: strict decoding error: '
        'unknown field "spec.bogusHoldoutField"'
    ) in done.stderr


def test_kubectl_applies_a_valid_manifest(server: tuple[str, list[Any]], tmp_path: Path) -> None:
    url, seen = server
    path = EXAMPLES / "adapted/kueue/site/static/examples/jobs/sample-job.yaml"
    done = _kubectl(url, tmp_path, "create", "--dry-run=server", "-f", str(path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "created (server dry run)" in done.stdout
    posts = [q for method, _, q in seen if method == "POST"]
    assert posts and posts[0]["fieldValidation"] == ["Strict"]


@pytest.mark.parametrize("server", [True], ids=["no-fieldValidation-parameter"], indirect=True)
def test_without_the_parameter_kubectl_validates_on_the_client(
    server: tuple[str, list[Any]], tmp_path: Path
) -> None:
    """The control: the same documents without fieldValidation on their PATCH operations make
    kubectl fall back to client-side validation, which wants /openapi/v2 (as protobuf) and
    sends nothing. So the parameter in the documents is what the test above relies on."""
    url, seen = server
    done = _kubectl(
        url,
        tmp_path,
        "apply",
        "--validate=strict",
        "--dry-run=server",
        "-f",
        str(EXAMPLES / "derived" / "unknown-field-job.yaml"),
    )
    assert done.returncode == 1
    assert ("GET", "/openapi/v2") in [(m, p) for m, p, _ in seen]
    assert not [m for m, _, _ in seen if m == "POST"]
    assert "error validating data" in done.stderr


def test_kubectl_validate_warn_shows_the_servers_warning(
    server: tuple[str, list[Any]], tmp_path: Path
) -> None:
    url, seen = server
    path = EXAMPLES / "derived" / "unknown-field-job.yaml"
    done = _kubectl(url, tmp_path, "create", "--validate=warn", "--dry-run=server", "-f", str(path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'Warning: unknown field "spec.bogusHoldoutField"' in done.stderr
    assert [q["fieldValidation"] for m, _, q in seen if m == "POST"] == [["Warn"]]
