"""The documents of ``GET /openapi/v3``, ``/openapi/v3/<group-version>`` and ``/openapi/v2``."""

from __future__ import annotations

import functools
import json
from typing import Any

from phalanx.kube.openapi import catalog


def openapi_v3_index(base: str = "") -> dict[str, Any]:
    """The body of ``GET /openapi/v3``, as kube-apiserver's: every group-version's path with a
    ``serverRelativeURL`` that carries the document's hash (clients cache by it). ``base`` is a
    path prefix the server is mounted under ("" for the root)."""
    prefix = base.rstrip("/")
    return {
        "paths": {
            gv: {"serverRelativeURL": f"{prefix}/openapi/v3/{gv}?hash={e['hash']}"}
            for gv, e in sorted(catalog.group_versions().items())
        }
    }


def openapi_v3(group_version_path: str) -> bytes | None:
    """The JSON document of ``GET /openapi/v3/<group_version_path>`` (``api/v1``,
    ``apis/batch/v1``), or None where that group-version is not served (a 404)."""
    return catalog.document_bytes(group_version_path.strip("/"))


def openapi_v3_hash(group_version_path: str) -> str | None:
    """The hash the index advertises for a document (its ETag, too), or None."""
    entry = catalog.group_versions().get(group_version_path.strip("/"))
    return None if entry is None else str(entry["hash"])


@functools.cache
def openapi_v2() -> bytes:
    """``GET /openapi/v2`` as JSON: one Swagger 2.0 document of every served kind.

    Made from the v3 documents the way kube-openapi relates the two: schemas move from
    ``#/components/schemas`` to ``#/definitions``, a lone ``allOf: [$ref]`` becomes the ``$ref``,
    each operation's ``requestBody`` becomes a ``body`` parameter and its responses keep the
    JSON schema. kubectl itself asks for v2 only as protobuf; this is for JSON clients."""
    definitions: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for gv in sorted(catalog.group_versions()):
        doc = catalog.document(gv)
        assert doc is not None
        for name, schema in doc["components"]["schemas"].items():
            definitions.setdefault(name, _v2_schema(schema))
        for path, item in doc["paths"].items():
            paths[path] = {
                m: _v2_operation(op) if m != "parameters" else [_v2_param(p) for p in op]
                for m, op in item.items()
            }
    swagger = {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": dict(sorted(paths.items())),
        "definitions": dict(sorted(definitions.items())),
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "in": "header",
                "name": "authorization",
                "type": "apiKey",
            }
        },
        "security": [{"BearerToken": []}],
    }
    return json.dumps(swagger, separators=(",", ":")).encode()


def _v2_schema(node: Any) -> Any:
    if isinstance(node, list):
        return [_v2_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _v2_schema(v) for k, v in node.items()}
    ref = out.get("$ref")
    if isinstance(ref, str):
        out["$ref"] = ref.replace("#/components/schemas/", "#/definitions/")
    all_of = out.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        del out["allOf"]
        out["$ref"] = all_of[0]["$ref"]
        out.pop("default", None)  # Swagger 2.0 ignores siblings of $ref
    return out


def _v2_param(param: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in param.items() if k != "schema"}
    out.update(param.get("schema", {}))
    return out


def _v2_operation(op: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in op.items() if k not in ("parameters", "requestBody", "responses")}
    params = [_v2_param(p) for p in op.get("parameters", [])]
    body = op.get("requestBody")
    if body:
        content = body.get("content", {})
        first: dict[str, Any] = next(iter(content.values()), {})
        schema = first.get("schema", {})
        params.append(
            {
                "in": "body",
                "name": "body",
                "required": bool(body.get("required")),
                "schema": _v2_schema(schema),
            }
        )
        out["consumes"] = sorted(content)
    if params:
        out["parameters"] = params
    responses: dict[str, Any] = {}
    produces: set[str] = set()
    for code, resp in op.get("responses", {}).items():
        content = resp.get("content", {})
        produces.update(content)
        entry: dict[str, Any] = {"description": resp.get("description", "")}
        if "application/json" in content:
            entry["schema"] = _v2_schema(content["application/json"].get("schema", {}))
        responses[code] = entry
    out["responses"] = responses
    if produces:
        out["produces"] = sorted(produces)
    out["schemes"] = ["https"]
    return out
