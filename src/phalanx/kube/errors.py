"""Kubernetes-style errors: each one is a ``Status`` object as kube-apiserver words it.

    KubeError                    root (a ``phalanx.errors.PhalanxError``); ``.status()`` is the
    |                            ``v1 Status`` body, ``.code`` its HTTP status
    +-- BadRequest               400 BadRequest: a malformed body, a bad query parameter
    +-- Unauthorized             401 Unauthorized: no known bearer token
    +-- Forbidden                403 Forbidden: RBAC said no
    +-- NotFound                 404 NotFound: ``jobs.batch "pi" not found``
    +-- MethodNotAllowed         405 MethodNotAllowed: a verb the resource does not have
    +-- AlreadyExists            409 AlreadyExists: ``namespaces "x" already exists``
    +-- Conflict                 409 Conflict: a stale ``metadata.resourceVersion``
    +-- Gone                     410 Expired (or Gone): a watch from a resourceVersion too old
    +-- UnsupportedMediaType     415 UnsupportedMediaType: a body in a format not understood
    +-- Invalid                  422 Invalid: field errors, each a cause with its field path
    +-- Unavailable              503 ServiceUnavailable: a standby controller

Resources are named as the store names them, ``(group, plural)``: ``("batch", "jobs")``,
``("", "pods")``. The wording follows k8s.io/apimachinery ``pkg/api/errors/errors.go``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from phalanx.errors import PhalanxError

__all__ = [
    "AlreadyExists",
    "BadRequest",
    "Conflict",
    "FieldCause",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeError",
    "MethodNotAllowed",
    "NotFound",
    "Unauthorized",
    "Unavailable",
    "UnsupportedMediaType",
    "field_error",
    "qualified",
]

Resource = tuple[str, str]
"""(group, plural): ("batch", "jobs"); the core group is ""."""

FieldCause = tuple[str, str, str]
"""(field path, cause type such as "FieldValueInvalid", message without the field): one
field error, as ``phalanx.kube.openapi.validate`` returns them too."""


def qualified(group: str, name: str) -> str:
    """``schema.GroupResource.String()``: ``jobs.batch``, or ``pods`` in the core group."""
    return f"{name}.{group}" if group else name


def _quote(name: str) -> str:
    # Go's %q: double quotes, backslash escapes. json.dumps agrees for printable text.
    return json.dumps(name, ensure_ascii=False)


_BODIES = {
    "FieldValueRequired": "Required value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long",
    "FieldValueTooShort": "Too short",
    "InternalError": "Internal error",
    "FieldValueInvalid": "Invalid value",
    "FieldValueTypeInvalid": "Invalid value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueNotFound": "Not found",
    "FieldValueTooMany": "Too many",
}


def field_error(field: str, cause: str, detail: str = "", value: Any = None) -> FieldCause:
    """One field error as ``field.Error.ErrorBody()`` words it: ``Invalid value: "x": why``,
    ``Required value``, ``Unsupported value: "y": supported values: ...``."""
    body = _BODIES.get(cause, cause)
    if value is not None and cause not in ("FieldValueRequired", "FieldValueForbidden"):
        body += f": {json.dumps(value) if not isinstance(value, str) else _quote(value)}"
    if detail:
        body += f": {detail}"
    return (field, cause, body)


class KubeError(PhalanxError):
    """An error the Kubernetes API answers with a ``Status`` body and ``code``."""

    code = 500
    reason = "InternalError"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        """The ``v1 Status`` object kube-apiserver would answer."""
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            out["details"] = {k: v for k, v in self.details.items() if v not in ("", None, [])}
        out["code"] = self.code
        return out


def _details(resource: Resource, name: str) -> dict[str, Any]:
    return {"name": name, "group": resource[0], "kind": resource[1]}


class BadRequest(KubeError):
    code = 400
    reason = "BadRequest"


class Unauthorized(KubeError):
    code = 401
    reason = "Unauthorized"

    def __init__(self, message: str = "Unauthorized") -> None:
        super().__init__(message)


class Forbidden(KubeError):
    """``jobs.batch "pi" is forbidden: User "ann" cannot get resource "jobs" in API group
    "batch" in the namespace "b"``; ``why`` is the part after "forbidden: "."""

    code = 403
    reason = "Forbidden"

    def __init__(self, resource: Resource, name: str, why: str) -> None:
        what = qualified(*resource)
        if not resource[1]:
            message = f"forbidden: {why}"
        elif not name:
            message = f"{what} is forbidden: {why}"
        else:
            message = f"{what} {_quote(name)} is forbidden: {why}"
        super().__init__(message, details=_details(resource, name))


class NotFound(KubeError):
    code = 404
    reason = "NotFound"

    def __init__(self, resource: Resource, name: str) -> None:
        super().__init__(
            f"{qualified(*resource)} {_quote(name)} not found", details=_details(resource, name)
        )
        self.resource = resource
        self.name = name


class MethodNotAllowed(KubeError):
    code = 405
    reason = "MethodNotAllowed"

    def __init__(self, resource: Resource, action: str) -> None:
        super().__init__(
            f"{action} is not supported on resources of kind {_quote(qualified(*resource))}",
            details={"group": resource[0], "kind": resource[1]},
        )


class AlreadyExists(KubeError):
    code = 409
    reason = "AlreadyExists"

    def __init__(self, resource: Resource, name: str) -> None:
        super().__init__(
            f"{qualified(*resource)} {_quote(name)} already exists",
            details=_details(resource, name),
        )


MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


class Conflict(KubeError):
    """``Operation cannot be fulfilled on jobs.batch "pi": <why>``; ``why`` defaults to the
    optimistic-concurrency wording."""

    code = 409
    reason = "Conflict"

    def __init__(self, resource: Resource, name: str, why: str = MODIFIED) -> None:
        super().__init__(
            f"Operation cannot be fulfilled on {qualified(*resource)} {_quote(name)}: {why}",
            details=_details(resource, name),
        )


class Gone(KubeError):
    """410: reason ``Expired`` (a resourceVersion too old for the watch window) by default."""

    code = 410

    def __init__(self, message: str, *, reason: str = "Expired") -> None:
        super().__init__(message)
        self.reason = reason


class UnsupportedMediaType(KubeError):
    code = 415
    reason = "UnsupportedMediaType"

    def __init__(self, content_type: str, accepted: Sequence[str]) -> None:
        super().__init__(
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{', '.join(accepted)}"
        )
        self.content_type = content_type


class Invalid(KubeError):
    """``Job.batch "pi" is invalid: spec.parallelism: Invalid value: -1: must be ...``; with
    several causes the list is bracketed and comma-separated as Go's aggregate prints it."""

    code = 422
    reason = "Invalid"

    def __init__(self, group: str, kind: str, name: str, causes: Sequence[FieldCause]) -> None:
        errs = [f"{f}: {m}" if f else m for f, _, m in causes]
        what = f"{qualified(group, kind)} {_quote(name)} is invalid"
        if len(errs) == 1:
            what += f": {errs[0]}"
        elif errs:
            what += f": [{', '.join(errs)}]"
        super().__init__(
            what,
            details={
                "name": name,
                "group": group,
                "kind": kind,
                "causes": [{"reason": r, "message": m, "field": f} for f, r, m in causes],
            },
        )
        self.causes = list(causes)


class Unavailable(KubeError):
    code = 503
    reason = "ServiceUnavailable"
