"""Kubernetes' protobuf wire format for built-in kinds: the body <-> the object's JSON form.

kubectl 1.32 sends the objects its generators build (`kubectl create namespace`, `create job`,
`create deployment`, ...) as `application/vnd.kubernetes.protobuf` and does not fall back to
JSON. Such a body is the magic `k8s\\x00` and a `runtime.Unknown` message: the kind's typeMeta
(apiVersion, kind), `raw` (the kind's message from k8s.io/api's generated.proto), and
contentEncoding/contentType (empty). See
https://kubernetes.io/docs/reference/using-api/api-concepts/#protobuf-encoding.

    decode(body) -> dict    the object as kube-apiserver's JSON would be (kind, apiVersion first)
    encode(obj) -> bytes    the inverse, byte-for-byte what Go's apimachinery writes
    ProtobufError           a malformed body, an unknown kind, or a value Go would reject

Kinds: those our declarations in pb/ name (see pb/registry.py): core/v1 Namespace, ConfigMap,
Secret, Service, ServiceAccount, ResourceQuota, Pod, Event; apps/v1 Deployment, ReplicaSet,
ControllerRevision; batch/v1 Job, CronJob; rbac/v1 Role, ClusterRole, RoleBinding,
ClusterRoleBinding; scheduling/v1 PriorityClass; policy/v1 PodDisruptionBudget;
networking/v1 Ingress; autoscaling/v1 HorizontalPodAutoscaler, Scale; autoscaling/v2
HorizontalPodAutoscaler; authentication/v1 TokenRequest; and meta/v1's Status and
DeleteOptions under any group version `v1`. The message classes are built when decode or encode
is first called, not when this module is imported.

A body holding a field number we do not declare is refused (ProtobufError naming the JSON path,
the message and the number; the API answers 400 and the client can send JSON instead):
kube-apiserver would keep such a field, and we cannot show it in JSON. No undeclared field is
dropped silently: none is harmless in every request (even `status`, which a create ignores, is
what a PUT to .../status carries). encode, like Go's JSON decoder, ignores JSON keys it does not
know.
"""

from __future__ import annotations

from typing import Any

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

__all__ = ["MAGIC", "PROTOBUF", "ProtobufError", "decode", "encode"]


class ProtobufError(ValueError):
    """A body that is not a Kubernetes protobuf object, or an object that cannot become one.

    The message names what is wrong: the missing prefix, the kind, or the field path.
    """


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf body, as kube-apiserver would write the same object."""
    from google.protobuf.message import DecodeError

    if not body.startswith(MAGIC):
        raise ProtobufError("not a Kubernetes protobuf body: it does not start with k8s\\x00")
    from phalanx.kube.pb.registry import message_class, undeclared_field

    unknown = message_class("runtime.Unknown")()
    try:
        unknown.ParseFromString(body[len(MAGIC):])
    except (DecodeError, RecursionError, ValueError) as e:
        raise ProtobufError(f"malformed protobuf envelope (runtime.Unknown): {e}") from e
    api_version, kind = unknown.typeMeta.apiVersion, unknown.typeMeta.kind
    if unknown.contentEncoding:
        raise ProtobufError(f"unsupported contentEncoding {unknown.contentEncoding!r}")
    message = _message_class(api_version, kind)()
    try:
        message.ParseFromString(unknown.raw)
    except (DecodeError, RecursionError, ValueError) as e:
        raise ProtobufError(f"malformed {kind} ({api_version}): {e}") from e
    where = undeclared_field(message)
    if where is not None:
        raise ProtobufError(f"{kind} ({api_version}): {where}; send this object as JSON")
    from phalanx.kube.pb.gojson import to_json

    try:
        fields = to_json(message)
    except (ValueError, UnicodeError, RecursionError) as e:
        raise ProtobufError(f"{kind} ({api_version}) has no JSON form: {e}") from e
    return {"kind": kind, "apiVersion": api_version, **fields}


def encode(obj: dict[str, Any]) -> bytes:
    """The protobuf body for a JSON-form object whose apiVersion and kind are set."""
    if not isinstance(obj, dict):
        raise ProtobufError(f"expected an object, got {type(obj).__name__}")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
        raise ProtobufError("the object needs string apiVersion and kind to be encoded")
    message = _message_class(api_version, kind)()
    from phalanx.kube.pb.gojson import into_message

    try:
        into_message(message, obj, kind)
        raw = message.SerializeToString(deterministic=True)
    except (ValueError, TypeError, RecursionError) as e:
        raise ProtobufError(str(e)) from e
    from phalanx.kube.pb.registry import message_class

    unknown = message_class("runtime.Unknown")()
    unknown.typeMeta.apiVersion = api_version
    unknown.typeMeta.kind = kind
    unknown.raw = raw
    # Go's runtime.Unknown writes its non-pointer strings even when empty.
    unknown.contentEncoding = ""
    unknown.contentType = ""
    envelope: bytes = unknown.SerializeToString(deterministic=True)
    return MAGIC + envelope


def _message_class(api_version: str, kind: str) -> Any:
    from phalanx.kube.pb.registry import kind_class

    found = kind_class(api_version, kind)
    if found is None:
        raise ProtobufError(f"unknown kind {kind!r} in apiVersion {api_version!r} for protobuf")
    return found
