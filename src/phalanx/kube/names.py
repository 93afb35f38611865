"""Object names as kube-apiserver validates them: RFC 1123 subdomains for most kinds, RFC 1123
labels for namespaces, RFC 1035 labels for services, path segments for RBAC objects."""

from __future__ import annotations

import re

from phalanx.kube.errors import Invalid, field_error
from phalanx.kube.kinds import Kind

__all__ = ["check_name"]

_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL_1123 = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_LABEL_1035 = r"[a-z]([-a-z0-9]*[a-z0-9])?"

_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or"
    " '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used"
    f" for validation is '{_SUBDOMAIN}')"
)
_LABEL_1123_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and"
    " must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex"
    f" used for validation is '{_LABEL_1123}')"
)
_LABEL_1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an"
    " alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or"
    f" 'abc-123', regex used for validation is '{_LABEL_1035}')"
)


def _problem(kind: Kind, name: str) -> str | None:
    if kind.group == "rbac.authorization.k8s.io":
        if name in (".", ".."):
            return f"may not be '{name}'"
        for bad in ("/", "%"):
            if bad in name:
                return f"may not contain '{bad}'"
        return None
    if kind.kind == "Namespace":
        if len(name) > 63:
            return "must be no more than 63 characters"
        return None if re.fullmatch(_LABEL_1123, name) else _LABEL_1123_MSG
    if kind.kind == "Service":
        if len(name) > 63:
            return "must be no more than 63 characters"
        return None if re.fullmatch(_LABEL_1035, name) else _LABEL_1035_MSG
    if len(name) > 253:
        return "must be no more than 253 characters"
    return None if re.fullmatch(_SUBDOMAIN, name) else _SUBDOMAIN_MSG


def check_name(kind: Kind, name: str) -> None:
    """``Invalid`` (``metadata.name: Invalid value: ...``) unless ``name`` suits ``kind``."""
    why = _problem(kind, name)
    if why is not None:
        raise Invalid(
            kind.group,
            kind.kind,
            name,
            [field_error("metadata.name", "FieldValueInvalid", why, name)],
        )
