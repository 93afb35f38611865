"""Small constructors for the custom kinds' schemas (OpenAPI v3 structural schemas, as a CRD's
``openAPIV3Schema`` is): one call per field type, so a kind's declaration reads as its fields."""

from __future__ import annotations

from typing import Any

from phalanx.kube.openapi.builtin import PREFIX

Schema = dict[str, Any]


def string(*enum: str, default: str | None = None) -> Schema:
    out: Schema = {"type": "string"}
    if enum:
        out["enum"] = list(enum)
    if default is not None:
        out["default"] = default
    return out


def integer(fmt: str = "int32", minimum: int | None = None, default: int | None = None) -> Schema:
    out: Schema = {"type": "integer", "format": fmt}
    if minimum is not None:
        out["minimum"] = minimum
    if default is not None:
        out["default"] = default
    return out


def boolean() -> Schema:
    return {"type": "boolean"}


def quantity() -> Schema:
    """A resource quantity (``1``, ``36Gi``, ``100m``): a number or a string."""
    return {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }


def ref(name: str) -> Schema:
    """A built-in type by definition name (``io.k8s.api.core.v1.PodTemplateSpec``)."""
    return {"allOf": [{"$ref": PREFIX + name}]}


def array(items: Schema, list_type: str = "atomic") -> Schema:
    return {"type": "array", "items": items, "x-kubernetes-list-type": list_type}


def strings() -> Schema:
    return array(string())


def string_map() -> Schema:
    return {"type": "object", "additionalProperties": string()}


def quantity_map() -> Schema:
    return {"type": "object", "additionalProperties": quantity()}


def obj(required: tuple[str, ...] = (), /, **properties: Schema) -> Schema:
    out: Schema = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    return out


def free() -> Schema:
    """An object whose fields are not modelled here: kept as sent, never pruned."""
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def kind(
    spec: Schema | None = None,
    status: bool = True,
    required: tuple[str, ...] = (),
    **top: Schema,
) -> Schema:
    """A custom kind: apiVersion, kind, metadata (ObjectMeta), ``spec``, a ``status`` left
    unmodelled, and any further top-level fields (WorkloadPriorityClass has ``value``)."""
    props: Schema = {
        "apiVersion": string(),
        "kind": string(),
        "metadata": ref("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
    }
    if spec is not None:
        props["spec"] = spec
    if status:
        props["status"] = free()
    props.update(top)
    out: Schema = {"type": "object", "properties": props}
    if required:
        out["required"] = list(required)
    return out
