"""The ``paths`` of a group-version's OpenAPI v3 document: the REST operations of each kind.

Shaped as kube-apiserver's: one path per collection, object and subresource; each operation
with an ``operationId``, its ``x-kubernetes-action`` and ``x-kubernetes-group-version-kind``,
and the query parameters the server takes. kubectl 1.32 reads the PATCH operation of a kind
for a ``fieldValidation`` query parameter (cli-runtime's queryParamVerifierV3) and, finding it,
sends ``fieldValidation=Strict`` for ``--validate=strict`` instead of validating itself.
"""

from __future__ import annotations

from typing import Any

from phalanx.kube.kinds import Kind
from phalanx.kube.openapi.builtin import META, PREFIX

Json = dict[str, Any]

_MEDIA = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
_PATCH_MEDIA = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


def _param(name: str, where: str, about: str, kind: str = "string") -> Json:
    schema: Json = {"type": kind}
    if kind == "string" and where == "query":
        schema["uniqueItems"] = True
    out: Json = {"name": name, "in": where, "description": about, "schema": schema}
    if where == "path":
        out["required"] = True
    return out


_NAME = _param("name", "path", "name of the object")
_NAMESPACE = _param("namespace", "path", "object name and auth scope, such as for teams")
_PRETTY = _param("pretty", "query", "If 'true', then the output is pretty printed.")
_DRY_RUN = _param("dryRun", "query", "When present (All), modifications are not persisted.")
_FIELD_MANAGER = _param("fieldManager", "query", "A name for the actor making the change.")
_FIELD_VALIDATION = _param(
    "fieldValidation",
    "query",
    "How the server treats unknown and duplicate fields in the request: Ignore, Warn "
    "(the default) or Strict.",
)
_FORCE = _param("force", "query", "Force an apply request's conflicting changes.", "boolean")
_GRACE = _param("gracePeriodSeconds", "query", "Seconds before the object is deleted.", "integer")
_PROPAGATION = _param("propagationPolicy", "query", "Orphan, Background or Foreground.")
_LIST = [
    _param("allowWatchBookmarks", "query", "Ask for BOOKMARK watch events.", "boolean"),
    _param("continue", "query", "The continue token of the previous page."),
    _param("fieldSelector", "query", "Select objects by their fields."),
    _param("labelSelector", "query", "Select objects by their labels."),
    _param("limit", "query", "The most objects to return in one page.", "integer"),
    _param("resourceVersion", "query", "Which resource version to serve from."),
    _param("resourceVersionMatch", "query", "How resourceVersion applies to a list."),
    _param("sendInitialEvents", "query", "Begin a watch with the current objects.", "boolean"),
    _param("timeoutSeconds", "query", "Timeout of a list or watch call.", "integer"),
    _param("watch", "query", "Watch for changes instead of listing.", "boolean"),
]


_STATUS = {"200": "OK", "201": "Created", "202": "Accepted"}


def _ref(schema: str) -> Json:
    return {"$ref": PREFIX + schema}


def _responses(schema: str, *codes: str) -> Json:
    body = {m: {"schema": _ref(schema)} for m in _MEDIA}
    out: Json = {code: {"description": _STATUS[code], "content": body} for code in codes}
    out["401"] = {"description": "Unauthorized"}
    return out


def _body(schema: str, media: tuple[str, ...] = ("*/*",)) -> Json:
    return {"content": {m: {"schema": _ref(schema)} for m in media}, "required": True}


def kind_paths(kind: Kind, version: str, schema: str, list_schema: str, builtin: bool) -> Json:
    """The paths of one kind in one version; ``schema`` and ``list_schema`` are the names of
    its component schemas; a built-in kind also takes strategic merge patches."""
    gvk = {"group": kind.group, "kind": kind.kind, "version": version}
    root = f"/apis/{kind.group}/{version}" if kind.group else f"/api/{version}"
    tag = (kind.group.split(".")[0] or "core") + "_" + version
    title = "".join(p.capitalize() for p in kind.group.split(".")) or "Core"
    prefix = title + version.capitalize()
    scoped = "Namespaced" if kind.namespaced else ""
    scope = [_NAMESPACE] if kind.namespaced else []
    patch_media = _PATCH_MEDIA if builtin else _PATCH_MEDIA[:3]
    here = (
        f"{root}/namespaces/{{namespace}}/{kind.plural}"
        if kind.namespaced
        else (f"{root}/{kind.plural}")
    )

    def op(verb: str, action: str, what: str, params: list[Json], **rest: Any) -> Json:
        return {
            "description": f"{action} {what}",
            "operationId": f"{verb}{prefix}{scoped}{kind.kind}{what}",
            "tags": [tag],
            "parameters": params,
            **rest,
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
        }

    write = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]
    paths: Json = {
        here: {
            "get": op("list", "list", "", _LIST, responses=_responses(list_schema, "200")),
            "post": op(
                "create",
                "post",
                "",
                write,
                requestBody=_body(schema),
                responses=_responses(schema, "200", "201", "202"),
            ),
            "delete": op(
                "deletecollection",
                "deletecollection",
                "",
                [_DRY_RUN, _GRACE, _PROPAGATION, *_LIST],
                requestBody=_body(META + "DeleteOptions"),
                responses=_responses(META + "Status", "200"),
            ),
            "parameters": [*scope, _PRETTY],
        }
    }
    subs = [("", "")] + [("/status", "Status")] * ("status" in kind.subresources)
    for sub, what in subs:
        item: Json = {
            "get": op("read", "get", what, [], responses=_responses(schema, "200")),
            "put": op(
                "replace",
                "put",
                what,
                write,
                requestBody=_body(schema),
                responses=_responses(schema, "200", "201"),
            ),
            "patch": op(
                "patch",
                "patch",
                what,
                [*write, _FORCE],
                requestBody=_body(META + "Patch", patch_media),
                responses=_responses(schema, "200", "201"),
            ),
            "parameters": [_NAME, *scope, _PRETTY],
        }
        if not sub:
            item["delete"] = op(
                "delete",
                "delete",
                "",
                [_DRY_RUN, _GRACE, _PROPAGATION],
                requestBody=_body(META + "DeleteOptions"),
                responses=_responses(META + "Status", "200", "202"),
            )
        paths[f"{here}/{{name}}{sub}"] = item
    if kind.namespaced:
        every = op(
            "list", "list", "ForAllNamespaces", _LIST, responses=_responses(list_schema, "200")
        )
        every["operationId"] = f"list{prefix}{kind.kind}ForAllNamespaces"
        paths[f"{root}/{kind.plural}"] = {"get": every, "parameters": [_PRETTY]}
    return paths


def root_path(group: str, version: str) -> Json:
    """``GET /apis/GROUP/VERSION/``: the group-version's resources."""
    root = f"/apis/{group}/{version}/" if group else f"/api/{version}/"
    tag = (group.split(".")[0] or "core") + "_" + version
    return {
        root: {
            "get": {
                "description": "get available resources",
                "operationId": "getAPIResources",
                "tags": [tag],
                "responses": _responses(META + "APIResourceList", "200"),
            }
        }
    }
