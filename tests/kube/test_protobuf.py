"""Kubernetes' protobuf wire format: the bodies real kubectl 1.32 sent, decoded and re-encoded.

The fixtures (fixtures/kubectl/NAME.json) were recorded by capture_kubectl.py: each holds the
kubectl command, the requests it made with a body, and what the same command prints with
`--dry-run=client -o json`, i.e. Go's JSON of the very object kubectl encoded.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from phalanx.kube.pb.gojson import go_duration, parse_go_duration
from phalanx.kube.pb.registry import message_class
from phalanx.kube.protobuf import MAGIC, PROTOBUF, ProtobufError, decode, encode

FIXTURES = Path(__file__).parent / "fixtures" / "kubectl"


def _fixtures() -> list[tuple[str, dict[str, Any]]]:
    return [(p.stem, json.loads(p.read_text())) for p in sorted(FIXTURES.glob("*.json"))]


def _protobuf_requests() -> list[tuple[str, bytes, dict[str, Any]]]:
    return [
        (name, base64.b64decode(r["body"]), record)
        for name, record in _fixtures()
        for r in record["requests"]
        if r["contentType"] == PROTOBUF
    ]


PROTOBUF_REQUESTS = _protobuf_requests()
IDS = [name for name, _, _ in PROTOBUF_REQUESTS]


def test_the_fixtures_hold_kubectls_protobuf_bodies() -> None:
    # The generators kubectl's help lists (create namespace/job/deployment/..., autoscale) all
    # sent protobuf; a re-capture that lost them would make the tests below vacuous.
    assert len(PROTOBUF_REQUESTS) >= 20
    for name, body, record in PROTOBUF_REQUESTS:
        assert record["exit"] == 0, (name, record["stderr"])
        assert body.startswith(MAGIC), name


@pytest.mark.parametrize(("name", "body", "record"), PROTOBUF_REQUESTS, ids=IDS)
def test_decode_gives_what_kubectl_prints_as_json(
    name: str, body: bytes, record: dict[str, Any]
) -> None:
    if record["dryRunJson"] is None:
        pytest.skip(f"{name}: kubectl has no --dry-run=client -o json for this command")
    assert decode(body) == record["dryRunJson"]


@pytest.mark.parametrize(("name", "body", "record"), PROTOBUF_REQUESTS, ids=IDS)
def test_encode_of_decode_is_kubectls_bytes(
    name: str, body: bytes, record: dict[str, Any]
) -> None:
    assert encode(decode(body)) == body


def test_decode_keeps_kinds_and_special_types_from_the_captures() -> None:
    bodies = {name: body for name, body, _ in PROTOBUF_REQUESTS}
    token = decode(bodies["create-token"])
    assert (token["apiVersion"], token["kind"]) == ("authentication.k8s.io/v1", "TokenRequest")
    assert token["spec"]["expirationSeconds"] == 3600
    secret = decode(bodies["create-secret-generic"])
    assert base64.b64decode(secret["data"]["k"]) == b"v"
    pdb = decode(bodies["create-poddisruptionbudget"])
    assert pdb["spec"]["minAvailable"] == "50%"  # IntOrString as a string
    nodeport = decode(bodies["create-service-nodeport"])
    port = nodeport["spec"]["ports"][0]
    assert (port["port"], port["targetPort"], port["nodePort"]) == (80, 8080, 30080)
    quota = decode(bodies["create-quota"])
    assert quota["spec"]["hard"] == {"cpu": "1", "memory": "1Gi", "pods": "2"}


def _envelope(message: Any, api_version: str, kind: str) -> bytes:
    """A body built with the protobuf classes directly, not by encode()."""
    unknown = message_class("runtime.Unknown")()
    unknown.typeMeta.apiVersion = api_version
    unknown.typeMeta.kind = kind
    unknown.raw = message.SerializeToString()
    return MAGIC + unknown.SerializeToString()


def test_times_are_rfc3339_and_micro_times_keep_microseconds() -> None:
    at = datetime(2026, 12, 1, 18, 0, 0, tzinfo=UTC)
    pod = message_class("core.Pod")()
    pod.metadata.name = "p"
    pod.metadata.creationTimestamp.seconds = int(at.timestamp())
    pod.metadata.creationTimestamp.nanos = 0
    pod.status.startTime.seconds = int(at.timestamp()) + 61
    pod.status.startTime.nanos = 999  # metav1.Time keeps whole seconds, as Go's Unmarshal does
    got = decode(_envelope(pod, "v1", "Pod"))
    assert got["metadata"]["creationTimestamp"] == "2026-12-01T18:00:00Z"
    assert got["status"]["startTime"] == "2026-12-01T18:01:01Z"

    event = message_class("core.Event")()
    event.eventTime.seconds = int(at.timestamp())
    event.eventTime.nanos = 123_456_789
    got = decode(_envelope(event, "v1", "Event"))
    assert got["eventTime"] == "2026-12-01T18:00:00.123456Z"
    assert got["firstTimestamp"] is None  # an unset non-pointer Time is Go's zero: null
    assert decode(encode(got)) == got


def test_int_or_string_raw_extension_and_managed_fields_round_trip() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "d",
            "managedFields": [{"manager": "kubectl", "operation": "Update",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {"strategy": {"type": "RollingUpdate",
                              "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}},
    }
    got = decode(encode(deployment))
    assert got["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "25%", "maxUnavailable": 1}
    assert got["metadata"]["managedFields"][0]["fieldsV1"] == {"f:spec": {}}
    revision = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": {"name": "r"}, "data": {"spec": {"replicas": 2}}, "revision": 3}
    got = decode(encode(revision))
    assert (got["data"], got["revision"]) == ({"spec": {"replicas": 2}}, 3)


def test_go_omitempty_and_pointer_rules() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"suspend": False, "parallelism": 0, "template": {"spec": {"containers": [
               {"name": "c", "image": "i", "ports": [{"containerPort": 0}]}]}}}}
    got = decode(encode(job))
    # Pointers keep an explicit zero; non-omitempty scalars are written even when zero.
    assert (got["spec"]["suspend"], got["spec"]["parallelism"]) == (False, 0)
    assert got["spec"]["template"]["spec"]["containers"][0]["ports"] == [{"containerPort": 0}]
    # Non-pointer structs are always written; nil pointers and omitempty zeros are not.
    assert got["status"] == {}
    assert "completions" not in got["spec"]
    assert got["spec"]["template"]["metadata"] == {"creationTimestamp": None}


def test_role_rules_without_omitempty_are_null() -> None:
    # rbac/v1 PolicyRule: `Verbs []string json:"verbs"` has no omitempty: nil is null.
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r"}, "rules": [{"apiGroups": [""]}]}
    assert decode(encode(role))["rules"] == [{"verbs": None, "apiGroups": [""]}]


def test_meta_kinds_decode_under_any_group_version() -> None:
    options = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground",
               "gracePeriodSeconds": 0}
    assert decode(encode(options)) == {**options, "kind": "DeleteOptions"}
    status = {"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": "NotFound",
              "code": 404, "metadata": {}}
    assert decode(encode(status))["reason"] == "NotFound"


def test_a_field_we_do_not_declare_is_refused_naming_message_path_and_number() -> None:
    # kube-apiserver would keep PodSpec's affinity (field 18); we cannot show it in JSON, so the
    # body is refused (the API answers 400) rather than the field dropped.
    pod = message_class("core.Pod")()
    pod.metadata.name = "p"
    pod.spec.containers.add(name="c", image="i")
    pod.spec.MergeFromString(b"\x92\x01\x02\x0a\x00")  # field 18, a 2-byte message
    with pytest.raises(ProtobufError, match=r"Pod \(v1\): spec: core\.PodSpec has field 18"):
        decode(_envelope(pod, "v1", "Pod"))
    namespace = message_class("core.Namespace")()
    namespace.MergeFromString(b"\x48\x01")  # field 9, a varint, at the top
    with pytest.raises(ProtobufError, match=r"\(the object\): core\.Namespace has field 9"):
        decode(_envelope(namespace, "v1", "Namespace"))
    spec = message_class("core.PodSpec")()
    spec.containers.add(name="c", image="i").MergeFromString(b"\xa8\x01\x01")  # field 21
    with pytest.raises(ProtobufError, match=r"spec\.containers\[0\]: core\.Container has fie"):
        decode(_envelope(message_class("core.Pod")(spec=spec), "v1", "Pod"))


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"", "k8s\\x00"),
        (b'{"kind": "Namespace"}', "k8s\\x00"),
        (MAGIC + b"\xff\xff\xff", "envelope"),
        (MAGIC + b"\n\x11\n\x02v1\x12\x0bNoSuchThing", "NoSuchThing"),
        (MAGIC + b"\n\x0f\n\x02v1\x12\tNamespace\x12\x03\n\x05a", "Namespace"),
        (MAGIC + b"\n\x0f\n\x02v9\x12\tNamespace", "'v9'"),
    ],
)
def test_malformed_bodies_raise_protobuf_error_naming_the_problem(body: bytes, says: str) -> None:
    with pytest.raises(ProtobufError, match=says.replace("\\", "\\\\")):
        decode(body)


@pytest.mark.parametrize(
    ("obj", "says"),
    [
        ({"kind": "Namespace"}, "apiVersion and kind"),
        ({"apiVersion": "v1", "kind": "Gadget"}, "Gadget"),
        ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"labels": ["a"]}},
         r"Namespace\.metadata\.labels: expected an object"),
        ({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"ports": [
            {"containerPort": "80"}]}]}},
         r"Pod\.spec\.containers\[0\]\.ports\[0\]\.containerPort: expected an integer"),
        ({"apiVersion": "v1", "kind": "Pod", "spec": {"priority": 2**31}},
         "does not fit in int32"),
        ({"apiVersion": "v1", "kind": "Pod", "metadata": {"creationTimestamp": "yesterday"}},
         "RFC 3339"),
        ({"apiVersion": "v1", "kind": "Secret", "data": {"k": "not base64!"}}, "base64"),
        ({"apiVersion": "v1", "kind": "ResourceQuota", "spec": {"hard": {"cpu": "lots"}}},
         "quantity"),
    ],
)
def test_bad_objects_raise_protobuf_error_naming_the_field(obj: dict[str, Any], says: str) -> None:
    with pytest.raises(ProtobufError, match=says):
        encode(obj)


def test_go_durations() -> None:
    # Outputs of Go's time.Duration.String() (its documented examples and edge cases).
    cases = {0: "0s", 1: "1ns", 1_100: "1.1µs", 2_200_000: "2.2ms", 1_500_000_000: "1.5s",
             90 * 60 * 10**9: "1h30m0s", 61 * 10**9: "1m1s", -(10**9): "-1s"}
    for ns, text in cases.items():
        assert go_duration(ns) == text
        assert parse_go_duration(text, "d") == ns
    with pytest.raises(ValueError, match="not a Go duration"):
        parse_go_duration("1x", "d")


def test_importing_the_module_loads_no_generated_code() -> None:
    code = (
        "import sys, phalanx.kube.protobuf\n"
        "bad = [m for m in sys.modules if m.startswith('google.protobuf') or m.endswith('_pb2')]\n"
        "assert not bad, bad\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_api_answers_a_malformed_protobuf_body_with_bad_request() -> None:
    from phalanx.kube.errors import BadRequest
    from phalanx.kube.wire import decode_body

    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}
    assert decode_body(PROTOBUF, encode(namespace))["metadata"]["name"] == "x"
    with pytest.raises(BadRequest, match=r"protobuf decode error: .*k8s"):
        decode_body(PROTOBUF, b'{"kind": "Namespace"}')
