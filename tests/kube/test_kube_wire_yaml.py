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


def test_a_lone_surrogate_becomes_the_replacement_character_as_in_go() -> None:
    """``"\\ud800"`` parses to a string with no UTF-8 form: stored or sent back as it is, it
    raised (a 500 that the fuzz test found). Go's decoders make it U+FFFD; pairs stay."""
    from phalanx.kube.wire import dumps

    body = b'{"metadata": {"name": "a\\ud800b", "x": "\\ud83d\\ude00", "\\udfff": 1}}'
    value = decode_body("application/json", body)
    assert value == {"metadata": {"name": "a\ufffdb", "x": "\U0001f600", "\ufffd": 1}}
    assert dumps(value).decode() == '{"metadata":{"name":"a\ufffdb","x":"\U0001f600","\ufffd":1}}'
    assert decode_body("application/yaml", b'name: "\\ud800"\n') == {"name": "\ufffd"}
