"""Object names as kube-apiserver checks them, with k8s.io/apimachinery's wording.

Which rule a kind's ``metadata.name`` follows is each kind's own validation in kube-apiserver:
most names are DNS-1123 subdomains; a Namespace's is a DNS-1123 label, a Service's a DNS-1035
label (it becomes a DNS name and an environment variable), RBAC objects' only a path segment.
Custom resources are DNS-1123 subdomains.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + "(\\." + _LABEL + ")*"
_DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_RE = re.compile(f"^{_LABEL}$")
_SUBDOMAIN_RE = re.compile(f"^{_SUBDOMAIN}$")
_DNS1035_RE = re.compile(f"^{_DNS1035}$")

_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
    "'-', and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    # Built as RegexError builds it, double space before "or" included.
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(n: int) -> str:
    return f"must be no more than {n} characters"


def dns1123_label(value: str) -> list[str]:
    errs = [_max_len(63)] if len(value) > 63 else []
    if not _LABEL_RE.match(value):
        if _SUBDOMAIN_RE.match(value):
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error(_LABEL_MSG, _LABEL, "my-name", "123-abc"))
    return errs


def dns1123_subdomain(value: str) -> list[str]:
    errs = [_max_len(253)] if len(value) > 253 else []
    if not _SUBDOMAIN_RE.match(value):
        errs.append(_regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN, "example.com"))
    return errs


def dns1035_label(value: str) -> list[str]:
    errs = [_max_len(63)] if len(value) > 63 else []
    if not _DNS1035_RE.match(value):
        errs.append(_regex_error(_DNS1035_MSG, _DNS1035, "my-name", "abc-123"))
    return errs


def path_segment(value: str) -> list[str]:
    """path.IsValidPathSegmentName: the name goes into a URL path as one segment."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in "/%" if c in value]


NameRule = Callable[[str], list[str]]

# kind -> rule, where it is not a DNS-1123 subdomain.
_RULES: dict[str, NameRule] = {
    "Namespace": dns1123_label,
    "Service": dns1035_label,
    "Role": path_segment,
    "ClusterRole": path_segment,
    "RoleBinding": path_segment,
    "ClusterRoleBinding": path_segment,
}


def name_rule(group: str, kind: str) -> NameRule:
    """The rule for ``metadata.name`` of a kind; built-in core/RBAC kinds by name."""
    if group in ("", "rbac.authorization.k8s.io"):
        return _RULES.get(kind, dns1123_subdomain)
    return dns1123_subdomain
