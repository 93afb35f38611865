"""Strategic-merge-patch metadata of a field, from the schema's x-kubernetes-patch-* extensions."""

from __future__ import annotations

import functools
from typing import Any

from phalanx.kube.openapi import catalog


def _resolve(schemas: dict[str, Any], schema: Any) -> dict[str, Any]:
    """Follow ``$ref`` and single ``allOf`` wrappers down to the schema that has the fields;
    the wrapper's own keys (where the patch extensions sit) win over the target's."""
    if not isinstance(schema, dict):
        return {}
    out: dict[str, Any] = {}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        out.update(_resolve(schemas, schemas.get(ref.rsplit("/", 1)[1])))
    for part in schema.get("allOf", ()):
        out.update(_resolve(schemas, part))
    out.update({k: v for k, v in schema.items() if k not in ("$ref", "allOf")})
    return out


@functools.cache
def patch_meta(
    group: str, version: str, kind: str, path: tuple[str, ...]
) -> tuple[str, str | None] | None:
    """(strategy, merge key) of the field at ``path`` (field names from the object's root,
    list elements stepped through: ``("spec", "template", "spec", "containers")``) in a kind,
    or None when the field has no ``x-kubernetes-patch-strategy`` (merge as a whole: replace
    lists, merge maps) or does not exist. ``strategy`` is the extension's text, such as
    ``"merge"`` or ``"merge,retainKeys"``; the merge key is None for ``retainKeys`` alone."""
    info = catalog.kind_info(group, version, kind)
    if info is None:
        return None
    schemas = catalog.schemas_of(info)
    node = _resolve(schemas, schemas.get(info.schema))
    for i, name in enumerate(path):
        props = node.get("properties") or {}
        if name in props:
            field = _resolve(schemas, props[name])
        elif isinstance(node.get("additionalProperties"), dict):
            field = _resolve(schemas, node["additionalProperties"])
        else:
            return None
        if i == len(path) - 1:
            strategy = field.get("x-kubernetes-patch-strategy")
            if not isinstance(strategy, str):
                return None
            key = field.get("x-kubernetes-patch-merge-key")
            return strategy, key if isinstance(key, str) else None
        node = _resolve(schemas, field.get("items")) if field.get("type") == "array" else field
    return None
