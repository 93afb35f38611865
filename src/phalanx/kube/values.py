"""JSON values as the Kubernetes object store handles them: deep copies (faster than
``copy.deepcopy`` for plain JSON), ``metav1.Time`` timestamps, and the random suffix of a
``generateName``."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

__all__ = ["copy_json", "copy_obj", "suffix", "timestamp"]

_GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"
"""What kube-apiserver appends to a generateName (k8s.io/apimachinery util/rand)."""
_SUFFIXES = len(_GENERATE_CHARS) ** 5


def suffix() -> str:
    """Five characters of ``_GENERATE_CHARS`` drawn uniformly, from one draw of the system's
    randomness rather than one per character (each is a system call)."""
    n = secrets.randbelow(_SUFFIXES)
    out = []
    for _ in range(5):
        n, i = divmod(n, len(_GENERATE_CHARS))
        out.append(_GENERATE_CHARS[i])
    return "".join(out)


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (much faster than ``copy.deepcopy``)."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def copy_obj(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON object."""
    return {k: copy_json(v) for k, v in obj.items()}


def timestamp(at: float) -> str:
    """RFC 3339 in UTC, seconds, as ``metav1.Time`` is written."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
