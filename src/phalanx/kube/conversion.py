"""Conversion between the served versions of one kind, as kube-apiserver converts through its
storage version: an object is kept as it was written, and read through another version with
that version's field names (a ClusterQueue written as ``v1beta1`` reads with ``cohortName``
as ``v1beta2``, and back).

Kueue's renames between ``v1beta1`` (and Cohort's ``v1alpha1``) and ``v1beta2``, the ones its
schemas here declare (``phalanx.kube.openapi.custom``): ClusterQueue ``spec.cohort`` is
``spec.cohortName``; Cohort ``spec.parent`` is ``spec.parentName``. Every other field reads
the same in both versions."""

from __future__ import annotations

from typing import Any

__all__ = ["convert"]

_KUEUE = "kueue.x-k8s.io"
_NEW = "v1beta2"
_RENAMES: dict[str, tuple[str, str]] = {
    # kind: (field in v1beta1/v1alpha1, field in v1beta2), under ``spec``
    "ClusterQueue": ("cohort", "cohortName"),
    "Cohort": ("parent", "parentName"),
}


def convert(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    """``obj`` as ``api_version`` shows it: ``obj`` itself where nothing differs, else a
    shallow copy (``spec`` copied where a field is renamed)."""
    if obj.get("apiVersion") == api_version:
        return obj
    shown = {**obj, "apiVersion": api_version}
    group, _, version = api_version.rpartition("/")
    rename = _RENAMES.get(str(obj.get("kind"))) if group == _KUEUE else None
    spec = obj.get("spec")
    if rename is None or not isinstance(spec, dict):
        return shown
    old, new = rename
    before, after = (old, new) if version == _NEW else (new, old)
    if before in spec:
        moved = {k: v for k, v in spec.items() if k != before}
        moved[after] = spec[before]
        shown["spec"] = moved
    return shown
