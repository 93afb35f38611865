"""The schemas of Kubernetes' built-in types, from the ``kubernetes-validate`` package.

That package (a runtime dependency) ships each Kubernetes release's definitions as one JSON
Schema file, ``kubernetes-json-schema/v1.32.0-local/_definitions.json``: every type of the
release with its ``x-kubernetes-*`` extensions (group-version-kind, patch strategy and merge
key, list type and map keys). Nothing is read at import; :func:`definitions` reads the file
once, on first use, and turns it into OpenAPI v3 ``components/schemas`` as kube-apiserver
publishes them:

- ``$ref`` points into ``#/components/schemas/``; a ``$ref`` with siblings (a description) is
  wrapped as ``allOf: [{$ref}]``, as kube-openapi writes it;
- ``type: [T, "null"]`` (JSON Schema's "optional") is plain ``type: T``;
- the ``enum`` the package adds to every ``apiVersion`` and ``kind`` is dropped (the API routes
  by them; it does not validate them against a list);
- IntOrString is ``{type: string, format: int-or-string}`` and Quantity a string, as upstream
  (the validator accepts numbers for both, as Go's decoders do).
"""

from __future__ import annotations

import functools
import json
from typing import Any

PACKAGE = "kubernetes_validate"
RELEASE = "v1.32.0"
"""The Kubernetes release whose schemas are served (kubectl 1.32's own)."""

PREFIX = "#/components/schemas/"
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"


class SchemasMissing(RuntimeError):
    """The ``kubernetes-validate`` package, or its Kubernetes 1.32 schemas, is not installed."""


def _path() -> Any:
    import importlib.resources  # here, not at import: the controller's start stays light

    try:
        root = importlib.resources.files(PACKAGE)
    except ModuleNotFoundError:
        raise SchemasMissing(
            f"the {PACKAGE.replace('_', '-')} package is not installed: "
            "pip install 'kubernetes-validate>=1.32'"
        ) from None
    return root / "kubernetes-json-schema" / f"{RELEASE}-local" / "_definitions.json"


def installed() -> bool:
    """Whether the definitions file is there (without reading it)."""
    try:
        return bool(_path().is_file())
    except SchemasMissing:
        return False


def _convert(node: Any, prop: str = "") -> Any:
    if isinstance(node, list):
        return [_convert(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k == "properties" and isinstance(v, dict):
            out[k] = {name: _convert(sub, name) for name, sub in v.items()}
        elif k == "type" and isinstance(v, list):
            types = [t for t in v if t != "null"]
            if len(types) == 1:
                out[k] = types[0]
        elif k == "enum" and prop in ("apiVersion", "kind"):
            continue
        elif k == "$ref" and isinstance(v, str):
            out[k] = PREFIX + v.rsplit("/", 1)[1]
        else:
            out[k] = _convert(v)
    ref = out.get("$ref")
    if ref is not None and len(out) > 1:
        out = {"allOf": [{"$ref": ref}], **{k: v for k, v in out.items() if k != "$ref"}}
    return out


@functools.cache
def definitions() -> dict[str, Any]:
    """Every definition of the release, by name (``io.k8s.api.core.v1.Pod``), as OpenAPI v3
    component schemas. Raises :class:`SchemasMissing` without the package."""
    path = _path()
    try:
        raw = json.loads(path.read_text())["$defs"]
    except FileNotFoundError:
        raise SchemasMissing(
            f"{path} is missing: kubernetes-validate no longer ships Kubernetes {RELEASE}"
        ) from None
    out: dict[str, Any] = {name: _convert(schema) for name, schema in raw.items()}
    out[INT_OR_STRING] = {
        "description": raw[INT_OR_STRING].get("description", "IntOrString"),
        "format": "int-or-string",
        "type": "string",
    }
    out[QUANTITY] = {"description": raw[QUANTITY].get("description", "Quantity"), "type": "string"}
    for name in (META + "Patch", "io.k8s.apimachinery.pkg.runtime.RawExtension"):
        out[name].setdefault("type", "object")
    return out


@functools.cache
def by_gvk() -> dict[tuple[str, str, str], str]:
    """(group, version, kind) -> definition name, from ``x-kubernetes-group-version-kind``.
    A kind listed by several definitions (DeleteOptions, WatchEvent) maps to the first."""
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in sorted(definitions().items()):
        for g in schema.get("x-kubernetes-group-version-kind", ()):
            out.setdefault((g["group"], g["version"], g["kind"]), name)
    return out


def refs(node: Any, into: set[str]) -> None:
    """Add the names of the component schemas ``node`` references to ``into``."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(PREFIX):
            into.add(ref[len(PREFIX) :])
        for v in node.values():
            refs(v, into)
    elif isinstance(node, list):
        for v in node:
            refs(v, into)


def closure(roots: set[str], schemas: dict[str, Any] | None = None) -> dict[str, Any]:
    """The definitions named in ``roots`` and all they reference, by name (sorted);
    ``schemas`` (default: the built-in definitions) is where names are looked up."""
    pool = definitions() if schemas is None else schemas
    seen: set[str] = set()
    todo = sorted(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in pool:
            continue
        seen.add(name)
        found: set[str] = set()
        refs(pool[name], found)
        todo.extend(sorted(found - seen))
    return {name: pool[name] for name in sorted(seen)}
