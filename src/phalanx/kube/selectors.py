"""Label selectors (equality- and set-based) and field selectors, parsed from the query
strings kubectl sends (``-l 'app in (a,b),!canary'``, ``--field-selector status.phase=Running``)
into predicates over objects. A bad selector is ``BadRequest``."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from phalanx.kube.errors import BadRequest

__all__ = ["Predicate", "field_selector", "label_selector", "match_labels"]

Predicate = Callable[[dict[str, Any]], bool]

_KEY = re.compile(
    r"^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$"
)
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _split_top(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [p.strip() for p in out]


def _labels(obj: dict[str, Any]) -> Mapping[str, str]:
    labels = obj.get("metadata", {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _check_key(key: str, whole: str) -> str:
    if not _KEY.match(key):
        raise BadRequest(f"unable to parse requirement: invalid label key {key!r} in {whole!r}")
    return key


def _check_value(value: str, whole: str) -> str:
    if not _VALUE.match(value) or len(value) > 63:
        raise BadRequest(f"unable to parse requirement: invalid label value {value!r} in {whole!r}")
    return value


_SET = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")
_OP = re.compile(r"^([^=!<>\s]+)\s*(==|!=|=|<|>)\s*(.*)$")


def _requirement(part: str, whole: str) -> Predicate:
    m = _SET.match(part)
    if m:
        key = _check_key(m.group(1), whole)
        values = frozenset(_check_value(v.strip(), whole) for v in m.group(3).split(","))
        if m.group(2) == "in":
            return lambda o: _labels(o).get(key) in values
        return lambda o: _labels(o).get(key) not in values
    if part.startswith("!"):
        key = _check_key(part[1:].strip(), whole)
        return lambda o: key not in _labels(o)
    m = _OP.match(part)
    if m:
        key, op, value = _check_key(m.group(1), whole), m.group(2), m.group(3).strip()
        if op in ("<", ">"):
            try:
                bound = int(value)
            except ValueError:
                raise BadRequest(
                    f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be"
                    f" an integer: {whole!r}"
                ) from None

            def compare(o: dict[str, Any]) -> bool:
                try:
                    have = int(_labels(o)[key])
                except (KeyError, ValueError):
                    return False
                return have > bound if op == ">" else have < bound

            return compare
        _check_value(value, whole)
        if op == "!=":
            return lambda o: _labels(o).get(key) != value
        return lambda o: _labels(o).get(key) == value
    key = _check_key(part, whole)
    return lambda o: key in _labels(o)


def label_selector(text: str | None) -> Predicate | None:
    """The predicate of a ``labelSelector`` query (None: everything matches)."""
    if not text or not text.strip():
        return None
    reqs = [_requirement(p, text) for p in _split_top(text) if p]
    return lambda o: all(r(o) for r in reqs)


def match_labels(labels: Mapping[str, str] | None) -> Predicate | None:
    """Equality on every pair of ``labels`` (the store's ``list(labels=...)``)."""
    if not labels:
        return None
    want = dict(labels)
    return lambda o: all(_labels(o).get(k) == v for k, v in want.items())


_COMMON_FIELDS = ("metadata.name", "metadata.namespace")
_FIELDS: dict[str, tuple[str, ...]] = {
    "pods": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "events": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "namespaces": ("status.phase",),
    "jobs": ("status.successful",),
}


def _field(obj: dict[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    if path == "source" and isinstance(cur, dict):
        cur = cur.get("component")
    return "" if cur is None else str(cur)


def _field_requirement(path: str, value: str, negate: bool) -> Predicate:
    return lambda o: (_field(o, path) == value) != negate


def field_selector(text: str | None, plural: str) -> Predicate | None:
    """The predicate of a ``fieldSelector`` query on ``plural``; an unknown field is
    ``BadRequest`` as kube-apiserver answers it."""
    if not text or not text.strip():
        return None
    allowed = _COMMON_FIELDS + _FIELDS.get(plural, ())
    reqs: list[Predicate] = []
    for part in _split_top(text):
        if not part:
            continue
        m = re.match(r"^([^=!]+)(==|!=|=)(.*)$", part)
        if not m:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{part}'")
        path, op, value = m.group(1).strip(), m.group(2), m.group(3).strip()
        if path not in allowed:
            raise BadRequest(
                f'"{path}" is not a known field selector: only "metadata.name", '
                f'"metadata.namespace"'
            )
        reqs.append(_field_requirement(path, value, op == "!="))
    return lambda o: all(r(o) for r in reqs)
