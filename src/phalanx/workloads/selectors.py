"""``metav1.LabelSelector`` matching (``matchLabels`` and ``matchExpressions``), as the
workload controllers use it to find their pods and children."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.errors import InputError

__all__ = ["match_labels", "matches"]

_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


def match_labels(selector: Mapping[str, Any] | None) -> dict[str, str]:
    """The ``matchLabels`` part of ``selector`` (what a store's label filter can narrow by)."""
    return {str(k): str(v) for k, v in ((selector or {}).get("matchLabels") or {}).items()}


def matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str], where: str) -> bool:
    """Whether ``labels`` satisfy ``selector``; an empty selector matches nothing, as
    apps/v1 controllers read it. ``InputError`` (naming ``where``) for a malformed one."""
    if not selector:
        return False
    wanted = match_labels(selector)
    if any(labels.get(k) != v for k, v in wanted.items()):
        return False
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise InputError("must be a list", field=f"{where}.matchExpressions")
    for i, expr in enumerate(expressions):
        if not isinstance(expr, Mapping):
            raise InputError("must be an object", field=f"{where}.matchExpressions[{i}]")
        key, op = str(expr.get("key", "")), expr.get("operator")
        values = [str(v) for v in expr.get("values") or []]
        if op not in _OPERATORS:
            raise InputError(
                f"not a valid selector operator: {op!r}",
                field=f"{where}.matchExpressions[{i}].operator",
            )
        if (
            (op == "In" and labels.get(key) not in values)
            or (op == "NotIn" and key in labels and labels[key] in values)
            or (op == "Exists" and key not in labels)
            or (op == "DoesNotExist" and key in labels)
        ):
            return False
    return bool(wanted) or bool(expressions)
