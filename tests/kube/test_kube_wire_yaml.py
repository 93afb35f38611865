"""YAML request bodies become JSON values as kube-apiserver's decoder makes them: keys that
are not strings and timestamps are text, so nothing YAML can say reaches the store (or the
validator) as a value JSON has no form for."""

from __future__ import annotations

from phalanx.kube.wire import decode_body


def test_keys_that_are_not_strings_become_text() -> None:
    assert decode_body("application/yaml", b"?") == {"null": None}
    assert decode_body("application/yaml", b"1: a\n2.5: b\nfalse: c\n") == {
        "1": "a",
        "2.5": "b",
        "false": "c",
    }


def test_timestamps_and_dates_are_rfc3339_text() -> None:
    body = b"metadata:\n  creationTimestamp: 2024-01-01T00:00:00Z\n  x: [2024-01-02]\n"
    got = decode_body("application/yaml", body)
    assert got == {"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z", "x": ["2024-01-02"]}}


def test_a_lone_surrogate_in_an_answer_is_escaped_not_an_error() -> None:
    import json

    from phalanx.kube.wire import dumps

    body = dumps({"message": "name \udc80 is invalid", "ok": "é"})
    assert json.loads(body) == {"message": "name \udc80 is invalid", "ok": "é"}
    assert dumps({"ok": "é"}) == '{"ok":"é"}'.encode()  # UTF-8 as it is, when it can be
