"""The served OpenAPI v3 documents, one per group-version, made in memory on first use.

Built-in kinds' schemas are Kubernetes 1.32's (:mod:`phalanx.kube.openapi.builtin`, from the
``kubernetes-validate`` package); the custom kinds' are our declarations
(:mod:`phalanx.kube.openapi.custom`), published as kube-apiserver publishes a CRD's (schema
named by reversed group, ``metadata`` as ObjectMeta, a ``<Kind>List``). Which kinds and
versions are served, with their plural and scope, is :mod:`phalanx.kube.kinds`. Nothing is
built at import; each document is built once and kept.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from phalanx.kube import kinds as registry
from phalanx.kube.openapi import builtin, custom, paths
from phalanx.kube.openapi.builtin import META, PREFIX, SchemasMissing

OpenAPIDataMissing = SchemasMissing
"""Raised where a document is needed and the built-in schemas are not installed."""

# Meta types every document carries (kube-apiserver's documents carry them too).
_ALWAYS = {META + n for n in ("ObjectMeta", "ListMeta", "Status", "DeleteOptions", "Patch")}


@dataclass(frozen=True)
class KindInfo:
    """A kind with a schema: where it lives (``group_version`` is the /openapi/v3 path, such as
    ``apis/batch/v1``), the name of its schema in that document, and whether it is a custom
    kind (``origin == "crd"``: unknown fields are pruned, no typed Go decoding); ``plural`` is
    its resource in URLs (``jobs``) and ``namespaced`` its scope."""

    group: str
    version: str
    kind: str
    schema: str
    group_version: str
    origin: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_schema(self) -> str:
        return self.schema + "List"


def available() -> bool:
    """Whether the built-in schemas are installed; without them a server validates nothing
    and serves an empty ``/openapi/v3`` index."""
    return builtin.installed()


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _custom_name(group: str, version: str, kind: str) -> str:
    return ".".join(reversed(group.split("."))) + f".{version}.{kind}"


@functools.cache
def kinds() -> tuple[KindInfo, ...]:
    """Every served kind and version that has a schema, sorted by (group, version, kind)."""
    found = builtin.by_gvk()
    ours = custom.schemas()
    out: list[KindInfo] = []
    for k in registry.KINDS:
        for v in k.versions:
            gvk = (k.group, v, k.kind)
            if gvk in found and (k.group, v, k.kind + "List") in found:
                schema, origin = found[gvk], "builtin"
            elif gvk in ours:
                schema, origin = _custom_name(*gvk), "crd"
            else:
                continue
            gv = _gv_path(k.group, v)
            out.append(KindInfo(k.group, v, k.kind, schema, gv, origin, k.plural, k.namespaced))
    return tuple(sorted(out, key=lambda i: (i.group, i.version, i.kind)))


@functools.cache
def _by_gvk() -> dict[tuple[str, str, str], KindInfo]:
    return {(k.group, k.version, k.kind): k for k in kinds()}


def kind_info(group: str, version: str, kind: str) -> KindInfo | None:
    return _by_gvk().get((group, version, kind))


def _list_schema(info: KindInfo) -> dict[str, Any]:
    return {
        "description": f"{info.kind}List is a list of {info.kind}",
        "properties": {
            "apiVersion": {"type": "string"},
            "items": {"items": {"$ref": PREFIX + info.schema}, "type": "array"},
            "kind": {"type": "string"},
            "metadata": {"allOf": [{"$ref": PREFIX + META + "ListMeta"}]},
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [
            {"group": info.group, "kind": info.kind + "List", "version": info.version}
        ],
    }


def _build(group_version: str) -> dict[str, Any] | None:
    members = [k for k in kinds() if k.group_version == group_version]
    if not members:
        return None
    own: dict[str, Any] = {}
    roots = set(_ALWAYS)
    doc_paths = paths.root_path(members[0].group, members[0].version)
    for info in members:
        kind = registry.by_kind(info.api_version, info.kind)
        assert kind is not None  # kinds() lists only registry kinds
        builtin_kind = info.origin == "builtin"
        if builtin_kind:
            roots |= {info.schema, info.list_schema}
        else:
            gvk = {"group": info.group, "kind": info.kind, "version": info.version}
            schema = dict(custom.schemas()[(info.group, info.version, info.kind)])
            schema["x-kubernetes-group-version-kind"] = [gvk]
            own[info.schema] = schema
            own[info.list_schema] = _list_schema(info)
        doc_paths.update(
            paths.kind_paths(kind, info.version, info.schema, info.list_schema, builtin_kind)
        )
    builtin.refs(own, roots)
    builtin.refs(doc_paths, roots)
    schemas = {**builtin.closure(roots), **own}
    return {
        "openapi": "3.0.0",
        "info": {
            "title": "Kubernetes" if not own else "Kubernetes CRD Swagger",
            "version": builtin.RELEASE if not own else "v0.1.0",
        },
        "paths": dict(sorted(doc_paths.items())),
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


@functools.cache
def document(group_version: str) -> dict[str, Any] | None:
    """One group-version's v3 document (``api/v1``, ``apis/batch/v1``), or None if not served.
    Shared: callers must not change it."""
    return _build(group_version.strip("/"))


@functools.cache
def document_bytes(group_version: str) -> bytes | None:
    """The JSON of one group-version's v3 document, exactly as served, or None."""
    doc = document(group_version)
    if doc is None:
        return None
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


@functools.cache
def group_versions() -> dict[str, dict[str, Any]]:
    """/openapi/v3 path -> {hash (upper-case hex SHA-512 of the document, kube-apiserver's
    index hash), bytes, origin}."""
    out: dict[str, dict[str, Any]] = {}
    for gv in sorted({k.group_version for k in kinds()}):
        body = document_bytes(gv)
        assert body is not None
        origins = {k.origin for k in kinds() if k.group_version == gv}
        out[gv] = {
            "hash": hashlib.sha512(body).hexdigest().upper(),
            "bytes": len(body),
            "origin": "crd" if "crd" in origins else "builtin",
        }
    return out


def schemas_of(info: KindInfo) -> dict[str, Any]:
    doc = document(info.group_version)
    assert doc is not None, info  # every KindInfo's group-version has a document
    schemas: dict[str, Any] = doc["components"]["schemas"]
    return schemas
