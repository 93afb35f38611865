"""The patch types kube-apiserver accepts: JSON patch (RFC 6902), JSON merge patch (RFC 7386),
strategic merge patch (lists merged by their patch merge keys, with the ``$patch``,
``$retainKeys``, ``$setElementOrder`` and ``$deleteFromPrimitiveList`` directives kubectl apply
sends) and server-side apply (simplified: the applied configuration is merged in)."""

from __future__ import annotations

from typing import Any

from phalanx.kube.errors import BadRequest, UnsupportedMediaType

__all__ = [
    "APPLY",
    "JSON_PATCH",
    "MERGE_PATCH",
    "PATCH_TYPES",
    "STRATEGIC",
    "apply_patch",
    "merge_patch",
    "strategic_merge",
]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC, APPLY)

# Lists merged element by element (patchStrategy=merge) and the key that identifies an element
# (patchMergeKey), by field name, as the built-in types declare them in k8s.io/api. A list not
# named here is replaced whole, as it is upstream.
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "ports": "containerPort",
    "hostAliases": "ip",
    "conditions": "type",
    "ownerReferences": "uid",
    "resourceClaims": "name",
    "topologySpreadConstraints": "topologyKey",
    "readinessGates": "conditionType",
    "schedulingGates": "name",
    "podIPs": "ip",
    "hostIPs": "ip",
    "addresses": "type",  # a Node's status
    "allocatedResourcesStatus": "name",
    "resourceClaimStatuses": "name",
}
# A Service's ports are keyed by port, a container's by containerPort: told apart by the keys
# their elements carry (a Service port has "port"; a container port need not).
PRIMITIVE_MERGE = frozenset(("finalizers", "podCIDRs"))
"""Lists of scalars merged as sets (patchStrategy=merge)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _merge_key(field: str, items: list[Any]) -> str | None:
    key = MERGE_KEYS.get(field)
    if field == "ports" and any(
        isinstance(i, dict) and "port" in i and "containerPort" not in i for i in items
    ):
        return "port"
    return key


def strategic_merge(target: Any, patch: Any, *, strategic: bool = True) -> Any:
    """A strategic merge patch of ``target`` (a JSON object) by ``patch``."""
    if not isinstance(patch, dict):
        return patch
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(out.get(field), list) and isinstance(value, list):
                out[field] = [v for v in out[field] if v not in value]
            continue
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            merged = strategic_merge(out.get(key), value)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        elif isinstance(value, list):
            out[key] = _merge_list(key, out.get(key), value)
        else:
            out[key] = value
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    for key, order in patch.items():
        if key.startswith("$setElementOrder/") and isinstance(order, list):
            field = key.split("/", 1)[1]
            if isinstance(out.get(field), list):
                out[field] = _reorder(field, out[field], order)
    return out


def _merge_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    if not isinstance(current, list):
        current = []
    have: list[Any] = current
    if field in PRIMITIVE_MERGE:
        return have + [v for v in patch if v not in have]
    key = _merge_key(field, current + patch)
    if key is None or not all(isinstance(p, dict) for p in patch):
        return [p for p in patch if not (isinstance(p, dict) and p.get("$patch"))]
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [p for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    out = list(current)
    index = {item.get(key): i for i, item in enumerate(out) if isinstance(item, dict)}
    for p in patch:
        ident = p.get(key)
        if p.get("$patch") == "delete":
            if ident in index:
                out[index[ident]] = None
            continue
        if ident in index and out[index[ident]] is not None:
            out[index[ident]] = strategic_merge(out[index[ident]], p)
        else:
            out.append(p)
            index[ident] = len(out) - 1
    return [o for o in out if o is not None]


def _reorder(field: str, items: list[Any], order: list[Any]) -> list[Any]:
    key = _merge_key(field, items)
    if key is None:
        return items
    rank = {(o.get(key) if isinstance(o, dict) else o): i for i, o in enumerate(order)}

    def ident(item: Any) -> Any:
        return item.get(key) if isinstance(item, dict) else item

    return sorted(items, key=lambda i: rank.get(ident(i), len(rank)))


def apply_patch(
    content_type: str, current: dict[str, Any], patch: Any, *, builtin: bool
) -> dict[str, Any]:
    """``current`` patched by ``patch`` (already decoded) of ``content_type``; BadRequest
    for a patch that does not apply, 415 for strategic merge on a custom resource."""
    if content_type == JSON_PATCH:
        import jsonpatch

        if not isinstance(patch, list):
            raise BadRequest("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
        try:
            result = jsonpatch.apply_patch(current, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise BadRequest(
                f"the server rejected our request due to an error in our request: {exc}"
            ) from None
        except (TypeError, KeyError, ValueError) as exc:
            raise BadRequest(f"invalid JSON patch: {exc}") from None
        if not isinstance(result, dict):
            raise BadRequest("the patch does not leave an object")
        return result
    if not isinstance(patch, dict):
        raise BadRequest(
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        )
    if content_type == MERGE_PATCH:
        result = merge_patch(current, patch)
    elif content_type == STRATEGIC:
        if not builtin:
            raise UnsupportedMediaType(content_type, [JSON_PATCH, MERGE_PATCH, APPLY])
        result = strategic_merge(current, patch)
    elif content_type == APPLY:
        result = strategic_merge(current, patch) if builtin else merge_patch(current, patch)
    else:
        raise UnsupportedMediaType(content_type, PATCH_TYPES)
    assert isinstance(result, dict)
    return result
