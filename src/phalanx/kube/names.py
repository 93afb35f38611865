"""Object names as kube-apiserver validates them: RFC 1123 subdomains for most kinds, RFC 1123
labels for namespaces, RFC 1035 labels for services, path segments for RBAC objects. The rules
and their wording are ``phalanx.kube.openapi.names``'s, which field validation uses too."""

from __future__ import annotations

from phalanx.kube.errors import Invalid, field_error
from phalanx.kube.kinds import Kind
from phalanx.kube.openapi.names import name_rule

__all__ = ["check_name"]


def check_name(kind: Kind, name: str) -> None:
    """``Invalid`` (``metadata.name: Invalid value: ...``) unless ``name`` suits ``kind``."""
    problems = name_rule(kind.group, kind.kind)(name)
    if problems:
        raise Invalid(
            kind.group,
            kind.kind,
            name,
            [field_error("metadata.name", "FieldValueInvalid", why, name) for why in problems],
        )
