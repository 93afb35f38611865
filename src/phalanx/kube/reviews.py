"""``kubectl auth can-i`` and ``kubectl auth whoami``: ``SelfSubjectAccessReview``
(``authorization.k8s.io/v1``) answered by the API's authorizer (RBAC), and
``SelfSubjectReview`` (``authentication.k8s.io/v1``) answering who the bearer token is.
Both are create-only and stored nowhere, as in kube-apiserver."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from phalanx.kube.errors import BadRequest

__all__ = ["REVIEW_PATHS", "access_review", "self_review"]

ACCESS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEW_PATHS = frozenset((ACCESS, WHOAMI))

Authorize = Callable[[str, tuple[str, ...], str, str, str, str | None, str | None], bool]


def access_review(
    body: Any, user: str, groups: tuple[str, ...], authorize: Authorize
) -> dict[str, Any]:
    """The review with its ``status``: ``allowed`` as ``authorize`` decides for this user.
    Non-resource URLs (``can-i get /logs``) are allowed to everyone authenticated only for
    the open paths (version, health), as the default ``system:public-info-viewer``."""
    if not isinstance(body, dict) or not isinstance(body.get("spec"), dict):
        raise BadRequest("SelfSubjectAccessReview: spec is required")
    spec = body["spec"]
    attrs = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    if isinstance(attrs, dict):
        resource = str(attrs.get("resource") or "")
        sub = attrs.get("subresource")
        allowed = authorize(
            user,
            groups,
            str(attrs.get("verb") or ""),
            str(attrs.get("group") or ""),
            f"{resource}/{sub}" if sub else resource,
            attrs.get("namespace") or None,
            attrs.get("name") or None,
        )
    elif isinstance(non_resource, dict):
        path = str(non_resource.get("path") or "")
        allowed = "system:masters" in groups or (
            non_resource.get("verb") == "get"
            and path in ("/version", "/healthz", "/livez", "/readyz")
        )
    else:
        raise BadRequest(
            'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: '
            'spec.resourceAttributes: Invalid value: "null": exactly one of '
            "nonResourceAttributes or resourceAttributes must be specified"
        )
    status: dict[str, Any] = {"allowed": allowed}  # no reason: kube-apiserver's RBAC gives none
    return {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }


def self_review(user: str, groups: tuple[str, ...]) -> dict[str, Any]:
    """Who the request's token is (``kubectl auth whoami``)."""
    return {
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "status": {"userInfo": {"username": user, "groups": list(groups)}},
    }


def _fields(data: bytes) -> dict[int, list[bytes | int]]:
    """The fields of one protobuf message: number -> values (varints as ints, the rest as
    bytes). ``BadRequest`` for a body that is not protobuf."""
    out: dict[int, list[bytes | int]] = {}
    i = 0

    def varint() -> int:
        nonlocal i
        shift = value = 0
        while True:
            if i >= len(data):
                raise BadRequest("protobuf decode error: truncated varint")
            b = data[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    while i < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        value: bytes | int
        if wire == 0:
            value = varint()
        elif wire == 2:
            size = varint()
            value, i = data[i : i + size], i + size
        elif wire == 1:
            value, i = data[i : i + 8], i + 8
        elif wire == 5:
            value, i = data[i : i + 4], i + 4
        else:
            raise BadRequest(f"protobuf decode error: wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _strings(data: bytes, names: dict[int, str]) -> dict[str, str]:
    found = _fields(data)
    return {
        name: v.decode()
        for number, name in names.items()
        for v in found.get(number, [])[-1:]
        if isinstance(v, bytes)
    }


_RESOURCE_ATTRS = {
    1: "namespace",
    2: "verb",
    3: "group",
    4: "version",
    5: "resource",
    6: "subresource",
    7: "name",
}


def decode_access_review(body: bytes) -> dict[str, Any]:
    """A ``SelfSubjectAccessReview`` in Kubernetes' protobuf envelope (``k8s\\0`` and a
    ``runtime.Unknown`` whose ``raw`` is the message), as kubectl sends it, as JSON values.
    Its ``spec`` is field 2: ``resourceAttributes`` 1, ``nonResourceAttributes`` 2 (path 1,
    verb 2), as k8s.io/api/authorization/v1/generated.proto numbers them."""
    if not body.startswith(b"k8s\x00"):
        raise BadRequest("protobuf decode error: no k8s envelope")
    raw = next((v for v in _fields(body[4:]).get(2, []) if isinstance(v, bytes)), b"")
    spec_bytes = next((v for v in _fields(raw).get(2, []) if isinstance(v, bytes)), b"")
    spec = _fields(spec_bytes)
    out: dict[str, Any] = {}
    for v in spec.get(1, [])[-1:]:
        if isinstance(v, bytes):
            out["resourceAttributes"] = _strings(v, _RESOURCE_ATTRS)
    for v in spec.get(2, [])[-1:]:
        if isinstance(v, bytes):
            out["nonResourceAttributes"] = _strings(v, {1: "path", 2: "verb"})
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": out}
