"""The ``Warning`` header as kube-apiserver sends it, and the unknown-field text it carries.

Found by running tests/kube/test_kube_fuzz.py harder (3,000 examples, seed 29): an unknown
field whose name is not latin-1 (``spec.名前``) made every create, update or patch answer 500,
because the header was handed to Starlette, which encodes headers as latin-1. Go writes a
header's bytes as they are: UTF-8."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from phalanx.kube.openapi.fielderror import duplicate_field, go_quote, unknown_field
from phalanx.kube.server import create_app
from phalanx.kube.store import ObjectStore
from phalanx.kube.wire import warning_header


def test_go_quote_escapes_as_strconv_quote() -> None:
    # Each expected text is what Go's strconv.Quote returns for the same runes.
    assert go_quote("spec.foo") == '"spec.foo"'
    assert go_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert go_quote("名前 é") == '"名前 é"'  # printable: as it is
    assert go_quote("a\nb\tc\x00\x7f") == '"a\\nb\\tc\\x00\\x7f"'
    assert go_quote("\x85\u00a0\u200b") == '"\\u0085\\u00a0\\u200b"'  # C1, NBSP, a format rune
    assert go_quote("\U00038c9b") == '"\\U00038c9b"'  # unassigned
    assert go_quote("\ud800") == '"\\xed\\xa0\\x80"'  # no UTF-8 form: its bytes


def test_unknown_field_wording_of_builtin_kinds_and_crds() -> None:
    # sigs.k8s.io/json quotes a built-in kind's path; apiextensions-apiserver's pruning
    # writes a CRD's between plain quotes.
    assert unknown_field("spec.a\nb").message == 'unknown field "spec.a\\nb"'
    assert unknown_field("spec.a\nb", crd=True).message == 'unknown field "spec.a\nb"'
    assert unknown_field("spec.名前").message == 'unknown field "spec.名前"'
    assert duplicate_field("spec.\x01").message == 'duplicate field "spec.\\x01"'


def _latin1_bytes(value: str | None) -> bytes:
    assert value is not None
    return value.encode("latin-1")  # as Starlette puts it on the wire


def test_warning_header_is_utf8_with_quotes_and_backslashes_escaped() -> None:
    assert warning_header([]) is None
    assert _latin1_bytes(warning_header(['unknown field "spec.名前"'])) == (
        '299 - "unknown field \\"spec.名前\\""'.encode()
    )
    assert _latin1_bytes(warning_header(["a\\b", "c"])) == b'299 - "a\\\\b", 299 - "c"'


def test_a_warning_with_a_control_character_is_dropped() -> None:
    # NewWarningHeader refuses it (C0, DEL and C1 alike) and the recorder skips it.
    assert warning_header(["a\nb"]) is None
    assert warning_header(["a\x7f", "b\x85"]) is None
    assert _latin1_bytes(warning_header(["a\tb", "ok"])) == b'299 - "ok"'


def _post(path: str, body: dict[str, Any]) -> tuple[int, dict[bytes, bytes]]:
    """One request straight to the ASGI app: the raw header bytes it sends (Starlette's test
    client cannot read a header that is not ASCII)."""
    app = create_app(ObjectStore(), {"tok": ("root", ("system:masters",))})
    raw = json.dumps(body).encode()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": raw, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"authorization", b"Bearer tok"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], dict(start["headers"])


_POD_TEMPLATE = {"spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}}


def test_an_unknown_field_named_in_any_script_is_a_warning_not_a_500() -> None:
    status, headers = _post(
        "/apis/batch/v1/namespaces/default/jobs",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j"},
            "spec": {"名前": 1, "a\nb": 2, "template": _POD_TEMPLATE},
        },
    )
    assert status == 201  # one warning each, in the body's order
    assert headers[b"warning"].decode() == (
        '299 - "unknown field \\"spec.名前\\"", 299 - "unknown field \\"spec.a\\\\nb\\""'
    )
    # A CRD's unknown field path is not quoted Go's way: the one with a newline is dropped.
    status, headers = _post(
        "/apis/kueue.x-k8s.io/v1beta2/resourceflavors",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "f"},
            "spec": {"\U00038c9bj": 1, "a\nb": 2},
        },
    )
    assert status == 201
    assert headers[b"warning"].decode() == '299 - "unknown field \\"spec.\U00038c9bj\\""'
