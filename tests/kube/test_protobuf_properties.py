"""Properties of the protobuf wire format: generated Namespaces, Jobs and Pods survive a round
trip, and no byte string or JSON value makes decode or encode raise anything but ProtobufError."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.kube.pb.registry import message_class
from phalanx.kube.protobuf import MAGIC, ProtobufError, decode, encode

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

names = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
texts = st.text(max_size=12)
string_maps = st.dictionaries(names, texts, max_size=3)
int32s = st.integers(-(2**31), 2**31 - 1)
small = st.integers(0, 10_000)
times = st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9000, 1, 1)).map(
    lambda t: t.replace(microsecond=0, tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
)
# Canonical already (Go would rewrite "1.5" as "1500m": test_protobuf_kubectl checks that).
quantities = st.sampled_from(["1", "500m", "2Gi", "1500m", "100Mi", "0", "1e3", "4", "-2k"])


def _optional(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


metadata = _optional(name=names, namespace=names, labels=string_maps, annotations=string_maps,
                     generateName=names, uid=names, resourceVersion=st.from_regex(r"[0-9]{1,6}"),
                     generation=st.integers(1, 2**40), creationTimestamp=times,
                     finalizers=st.lists(names, max_size=2))
env = st.lists(st.fixed_dictionaries({"name": names}, optional={"value": texts}), max_size=3)
ports = st.lists(
    st.fixed_dictionaries({"containerPort": st.integers(1, 65535)},
                          optional={"name": names, "protocol": st.sampled_from(["TCP", "UDP"])}),
    max_size=2,
)
resources = _optional(limits=st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]),
                                             quantities, max_size=3),
                      requests=st.dictionaries(st.sampled_from(["cpu", "memory"]), quantities,
                                               max_size=2))
probes = _optional(
    httpGet=st.fixed_dictionaries({"port": st.integers(1, 65535) | names},
                                  optional={"path": texts, "scheme": st.just("HTTP")}),
    periodSeconds=small, failureThreshold=small, initialDelaySeconds=small,
)
containers = st.lists(
    st.fixed_dictionaries(
        {"name": names, "image": names},
        optional={"command": st.lists(texts, max_size=3), "args": st.lists(texts, max_size=3),
                  "env": env, "workingDir": texts, "ports": ports, "resources": resources,
                  "livenessProbe": probes,
                  "volumeMounts": st.lists(st.fixed_dictionaries(
                      {"name": names, "mountPath": texts}, optional={"readOnly": st.booleans()}),
                      max_size=2)},
    ),
    min_size=1, max_size=2,
)
volumes = st.lists(st.one_of(  # VolumeSource is inlined in Volume's JSON
    st.fixed_dictionaries({"name": names, "emptyDir": _optional(sizeLimit=quantities,
                                                               medium=st.just("Memory"))}),
    st.fixed_dictionaries({"name": names, "configMap": _optional(
        name=names, defaultMode=st.integers(0, 511), optional=st.booleans(),
        items=st.lists(st.fixed_dictionaries({"key": names, "path": names}), max_size=2))}),
    st.fixed_dictionaries({"name": names, "hostPath": st.fixed_dictionaries(
        {"path": texts}, optional={"type": st.sampled_from(["", "Directory"])})}),
), max_size=2)
tolerations = st.lists(_optional(key=names, operator=st.sampled_from(["Exists", "Equal"]),
                                 value=texts, effect=st.just("NoSchedule"),
                                 tolerationSeconds=st.integers(0, 2**40)), max_size=2)
pod_spec = st.fixed_dictionaries(
    {"containers": containers},
    optional={"volumes": volumes, "tolerations": tolerations,
              "securityContext": _optional(runAsUser=st.integers(0, 2**31),
                                           runAsNonRoot=st.booleans(), fsGroup=small),
              "restartPolicy": st.sampled_from(["Never", "OnFailure", "Always"]),
              "nodeName": names, "nodeSelector": string_maps, "priority": int32s,
              "terminationGracePeriodSeconds": st.integers(0, 2**40),
              "hostNetwork": st.booleans(), "priorityClassName": names},
)
conditions = st.lists(
    st.fixed_dictionaries({"type": names, "status": st.sampled_from(["True", "False"])},
                          optional={"lastTransitionTime": times, "reason": names,
                                    "message": texts}),
    max_size=2,
)
namespaces = st.fixed_dictionaries({
    "apiVersion": st.just("v1"), "kind": st.just("Namespace"), "metadata": metadata,
}, optional={"spec": _optional(finalizers=st.lists(names, max_size=2)),
             "status": _optional(phase=st.sampled_from(["Active", "Terminating"]))})
pods = st.fixed_dictionaries({
    "apiVersion": st.just("v1"), "kind": st.just("Pod"), "metadata": metadata, "spec": pod_spec,
}, optional={"status": _optional(phase=st.sampled_from(["Pending", "Running", "Failed"]),
                                 hostIP=names, startTime=times, conditions=conditions)})
jobs = st.fixed_dictionaries({
    "apiVersion": st.just("batch/v1"), "kind": st.just("Job"), "metadata": metadata,
    "spec": st.fixed_dictionaries(
        {"template": st.fixed_dictionaries({"spec": pod_spec}, optional={"metadata": metadata})},
        optional={"parallelism": small, "completions": small, "backoffLimit": small,
                  "activeDeadlineSeconds": st.integers(1, 2**40), "suspend": st.booleans(),
                  "ttlSecondsAfterFinished": small,
                  "completionMode": st.sampled_from(["Indexed", "NonIndexed"])},
    ),
}, optional={"status": _optional(active=small, succeeded=small, startTime=times,
                                 conditions=conditions)})


def _contained(small_value: Any, big_value: Any, path: str = "") -> None:
    """Everything `small_value` says is in `big_value` (which adds Go's zero fields)."""
    if not small_value and not isinstance(big_value, dict):
        # Go's protobuf cannot tell an empty list or map from an absent one, and omitempty
        # drops a zero scalar (pointers keep theirs: test_go_omitempty_and_pointer_rules).
        assert big_value in (small_value, None), path
    elif isinstance(small_value, dict):
        assert isinstance(big_value, dict), path
        for key, value in small_value.items():
            _contained(value, big_value.get(key), f"{path}.{key}")
    elif isinstance(small_value, list):
        assert isinstance(big_value, list) and len(big_value) == len(small_value), path
        for i, (a, b) in enumerate(zip(small_value, big_value, strict=True)):
            _contained(a, b, f"{path}[{i}]")
    else:
        assert big_value == small_value, path


@SETTINGS
@given(st.one_of(namespaces, jobs, pods))
def test_generated_objects_round_trip(obj: dict[str, Any]) -> None:
    body = encode(obj)
    decoded = decode(body)
    _contained(obj, decoded)
    # The decoded form is a fixed point: it is what kube-apiserver would store and serve.
    assert encode(decoded) == body
    assert decode(encode(decoded)) == decoded


@SETTINGS
@given(st.binary(max_size=200))
def test_arbitrary_bytes_decode_or_raise_protobuf_error(body: bytes) -> None:
    for candidate in (body, MAGIC + body):
        try:
            decoded = decode(candidate)
        except ProtobufError as e:
            assert str(e)  # it says what is wrong
        else:
            assert isinstance(decoded["kind"], str)


@SETTINGS
@given(st.sampled_from([("v1", "Pod"), ("batch/v1", "Job"), ("v1", "Namespace"),
                        ("apps/v1", "Deployment"), ("v1", "Service"), ("v1", "Event")]),
       st.binary(max_size=300))
def test_arbitrary_raw_messages_decode_or_raise_protobuf_error(
    kind: tuple[str, str], raw: bytes
) -> None:
    unknown = message_class("runtime.Unknown")()
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = kind
    unknown.raw = raw
    try:
        decoded = decode(MAGIC + unknown.SerializeToString())
    except ProtobufError:
        return
    assert (decoded["apiVersion"], decoded["kind"]) == kind


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=3),
    max_leaves=8,
)
fields = st.sampled_from(["metadata", "spec", "status", "data", "rules", "subjects", "type"])


@SETTINGS
@given(st.sampled_from([("v1", "Pod"), ("batch/v1", "Job"), ("v1", "Secret"),
                        ("rbac.authorization.k8s.io/v1", "RoleBinding"), ("v1", "Service")]),
       st.dictionaries(fields, json_values, max_size=3))
def test_arbitrary_json_encodes_or_raises_protobuf_error(
    kind: tuple[str, str], body: dict[str, Any]
) -> None:
    obj = {**body, "apiVersion": kind[0], "kind": kind[1]}
    try:
        encoded = encode(obj)
    except ProtobufError:
        return
    assert decode(encoded)["kind"] == kind[1]


@SETTINGS
@given(st.binary(max_size=64))
def test_secret_bytes_are_base64_both_ways(value: bytes) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
              "data": {"k": base64.b64encode(value).decode()}}
    assert base64.b64decode(decode(encode(secret))["data"]["k"]) == value


@SETTINGS
@given(st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31)),
       st.integers(0, 999_999))
def test_micro_times_keep_microseconds(moment: datetime, micros: int) -> None:
    at = moment.replace(microsecond=0, tzinfo=UTC) + timedelta(microseconds=micros)
    text = at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "eventTime": text}
    assert decode(encode(event))["eventTime"] == text
