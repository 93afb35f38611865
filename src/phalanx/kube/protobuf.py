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

Kinds: every message of the packages in pb/ (core/v1, apps/v1, batch/v1, rbac/v1, scheduling/v1,
policy/v1, networking/v1, autoscaling/v1 and v2, authentication/v1) and meta/v1's kinds
(Status, DeleteOptions, ...) under any group version. The generated modules are imported when
decode or encode is first called, not when this module is.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

__all__ = ["MAGIC", "PROTOBUF", "ProtobufError", "decode", "encode"]

# group -> the generated module holding its kinds ("" is the core group, apiVersion "v1").
_GROUPS = {
    "": "core",
    "apps": "apps",
    "batch": "batch",
    "rbac.authorization.k8s.io": "rbac",
    "scheduling.k8s.io": "scheduling",
    "policy": "policy",
    "networking.k8s.io": "networking",
    "autoscaling": "autoscaling",
    "authentication.k8s.io": "authentication",
    "meta.k8s.io": "meta",
}
_VERSIONS = {
    "core_v1", "apps_v1", "batch_v1", "rbac_v1", "scheduling_v1", "policy_v1", "networking_v1",
    "autoscaling_v1", "autoscaling_v2", "authentication_v1", "meta_v1",
}


class ProtobufError(ValueError):
    """A body that is not a Kubernetes protobuf object, or an object that cannot become one.

    The message names what is wrong: the missing prefix, the kind, or the field path.
    """


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf body, as kube-apiserver would write the same object."""
    from google.protobuf.message import DecodeError

    if not body.startswith(MAGIC):
        raise ProtobufError("not a Kubernetes protobuf body: it does not start with k8s\\x00")
    unknown = _module("runtime").Unknown()
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
    unknown = _module("runtime").Unknown()
    unknown.typeMeta.apiVersion = api_version
    unknown.typeMeta.kind = kind
    unknown.raw = raw
    # Go's runtime.Unknown writes its non-pointer strings even when empty.
    unknown.contentEncoding = ""
    unknown.contentType = ""
    envelope: bytes = unknown.SerializeToString(deterministic=True)
    return MAGIC + envelope


@cache
def _module(name: str) -> Any:
    """A generated module, imported on first use (core/v1 alone takes about 0.1 s)."""
    return importlib.import_module(f"phalanx.kube.pb.{name}_pb2")


@cache
def _message_class(api_version: str, kind: str) -> Any:
    group, _, version = api_version.rpartition("/")
    module = _GROUPS.get(group)
    names = []
    if module is not None and f"{module}_{version}" in _VERSIONS:
        names.append(f"{module}_{version}")
    if version == "v1":
        # meta/v1's kinds (Status, DeleteOptions, ...) are registered in every group version.
        names.append("meta_v1")
    for name in names:
        candidate = _module(name)
        if kind[:1].isupper() and kind in candidate.DESCRIPTOR.message_types_by_name:
            return getattr(candidate, kind)
    raise ProtobufError(f"unknown kind {kind!r} in apiVersion {api_version!r} for protobuf")
