"""The verbs on one resource: get, list, create, update, patch, delete, deletecollection,
and the ``status`` subresource, over the object store, answering as kube-apiserver does."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.kube.conversion import convert
from phalanx.kube.errors import (
    BadRequest,
    FieldCause,
    Invalid,
    MethodNotAllowed,
    NotFound,
    field_error,
)
from phalanx.kube.kinds import Kind
from phalanx.kube.managedfields import check_apply, field_set, let_go
from phalanx.kube.openapi import FieldError, bad_request_message, prune
from phalanx.kube.patch import APPLY, apply_patch
from phalanx.kube.queueobjects import admit as admit_queue
from phalanx.kube.secrets import is_secret
from phalanx.kube.secrets import normalize as normalize_secret
from phalanx.kube.selectors import Predicate, field_selector, label_selector
from phalanx.kube.store import ObjectStore, copy_obj, timestamp
from phalanx.kube.tables import table, table_json

__all__ = ["ANNOTATION_USER", "SERVER_PREFIX", "Request", "Resources", "Validator"]

Validator = Callable[[dict[str, Any], str], tuple[list[FieldError], list[str]]]
"""``phalanx.kube.openapi.validate``: (object, "Strict" | "Warn" | "Ignore") -> (field errors,
warnings)."""

BUILTIN_GROUPS = frozenset(
    ("", "apps", "batch", "autoscaling", "scheduling.k8s.io", "rbac.authorization.k8s.io")
)
# batch/v1 Jobs orphan their pods unless told otherwise (their DefaultGarbageCollectionPolicy);
# kubectl and the clients ask for Background explicitly.
_ORPHAN_BY_DEFAULT = frozenset((("batch", "jobs"),))


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _cause(error: FieldError) -> FieldCause:
    """A validation error as a Status cause: the message without its leading field path."""
    lead = f"{error.path}: "
    message = error.message[len(lead) :] if error.message.startswith(lead) else error.message
    return error.path, error.reason, message


@dataclass
class Request:
    """One call, as the router parsed it."""

    kind: Kind
    namespace: str | None
    name: str | None
    subresource: str | None
    query: Mapping[str, str]
    table: bool = False
    user: str = ""
    warnings: list[str] = field(default_factory=list)
    version: str = ""
    """The version in the URL (default: the kind's preferred one)."""

    @property
    def api_version(self) -> str:
        return self.kind.api_version_of(self.version or self.kind.version)

    def as_served(self, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` as the version of this request has it (``obj`` itself where it already
        is; else a copy, converted: ``phalanx.kube.conversion``)."""
        return convert(obj, self.api_version)


SERVER_PREFIX = "phalanx.io/"
"""Annotations under this prefix are the server's (the requesting user, the engine job a pod
runs as, its log file, ...): a client can neither set nor change them."""
ANNOTATION_USER = "phalanx.io/user"
"""The user whose request created the object (from the bearer token): whose engine jobs a
workload's pods run as (``phalanx.kube.controllers``)."""


def _own_annotations(obj: dict[str, Any], current: Mapping[str, Any] | None, user: str) -> None:
    """Replace what a client wrote under ``SERVER_PREFIX`` by the server's: the stored
    object's (an update or patch), or only ``ANNOTATION_USER`` = ``user`` (a create)."""
    meta = obj["metadata"]
    notes = meta.get("annotations")
    if notes is not None and not isinstance(notes, dict):
        return  # left for validation to refuse
    kept = {k: v for k, v in (notes or {}).items() if not k.startswith(SERVER_PREFIX)}
    if current is not None:
        before = (current.get("metadata") or {}).get("annotations") or {}
        kept.update((k, v) for k, v in before.items() if k.startswith(SERVER_PREFIX))
    elif user:
        kept[ANNOTATION_USER] = user
    if kept or notes is not None:
        meta["annotations"] = kept


def _flag(query: Mapping[str, str], name: str) -> bool:
    return query.get(name, "").lower() in ("1", "true")


def _dry_run(query: Mapping[str, str], body: Mapping[str, Any] | None = None) -> bool:
    value = query.get("dryRun", "")
    if value and value != "All":
        raise BadRequest(f'Invalid dryRun value: "{value}": supported values: "All"')
    return value == "All" or bool(body and body.get("dryRun"))


def _token(ns: str, name: str, rv: int) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{ns}/{name}\x00"})
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _untoken(token: str) -> tuple[str, str]:
    try:
        start = json.loads(base64.urlsafe_b64decode(token.encode()))["start"]
        ns, _, name = str(start).rstrip("\x00").partition("/")
    except (ValueError, KeyError, TypeError):
        raise BadRequest(f"continue key is not valid: {token!r}") from None
    return ns, name


class Resources:
    def __init__(
        self,
        store: ObjectStore,
        *,
        clock: Callable[[], float] = time.time,
        validate: Validator | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.validate = validate

    # -- reads ---------------------------------------------------------------------------

    def selector(self, req: Request) -> Predicate | None:
        labels = label_selector(req.query.get("labelSelector"))
        fields = field_selector(req.query.get("fieldSelector"), req.kind.plural)
        if labels is None or fields is None:
            return labels or fields
        return lambda o: labels(o) and fields(o)

    def get(self, req: Request) -> dict[str, Any]:
        assert req.name is not None
        found = self.store.peek(req.kind.resource, req.namespace, req.name)  # only read
        if found is None:
            raise NotFound(req.kind.resource, req.name)
        if req.subresource == "scale":
            return self.scale(req, found)
        obj = req.as_served(found)
        if req.table:
            return table(
                req.kind,
                [obj],
                self.clock(),
                include=req.query.get("includeObject", "Metadata"),
                resource_version=obj["metadata"]["resourceVersion"],
            )
        return obj

    def scale(self, req: Request, found: dict[str, Any]) -> dict[str, Any]:
        """The ``autoscaling/v1 Scale`` of a Deployment or ReplicaSet."""
        meta = found["metadata"]
        labels = (found.get("spec", {}).get("selector") or {}).get("matchLabels") or {}
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: meta[k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in meta
            },
            "spec": {"replicas": found.get("spec", {}).get("replicas", 1)},
            "status": {
                "replicas": (found.get("status") or {}).get("replicas", 0),
                "selector": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
            },
        }

    def rescale(self, req: Request, scale: Any) -> dict[str, Any]:
        """Set ``spec.replicas`` from a Scale (PUT, or a patched one)."""
        assert req.name is not None
        replicas = (scale.get("spec") or {}).get("replicas") if isinstance(scale, dict) else None
        if not isinstance(replicas, int) or replicas < 0:
            raise Invalid(
                "autoscaling",
                "Scale",
                req.name,
                [
                    field_error(
                        "spec.replicas",
                        "FieldValueInvalid",
                        "must be greater than or equal to 0",
                        replicas,
                    )
                ],
            )
        found = self.store.get(req.kind.resource, req.namespace, req.name)
        if found is None:
            raise NotFound(req.kind.resource, req.name)
        rv = (scale.get("metadata") or {}).get("resourceVersion")
        if rv:
            found["metadata"]["resourceVersion"] = rv
        found.setdefault("spec", {})["replicas"] = replicas
        return self.scale(req, self.store.update(found, dry_run=_dry_run(req.query)))

    def _page(self, req: Request) -> tuple[list[dict[str, Any]], int, str, int | None]:
        """A list's objects (the store's own, as served), resourceVersion, continue token and
        remaining count."""
        kind = req.kind
        rv = self.store.resource_version
        try:
            limit = max(0, int(req.query.get("limit") or 0))
        except ValueError:
            raise BadRequest(f"invalid limit: {req.query.get('limit')!r}") from None
        cont = req.query.get("continue")
        after = _untoken(cont) if cont else None
        found, more, remaining = self.store.page(
            kind.resource, req.namespace, match=self.selector(req), after=after, limit=limit
        )
        items = [req.as_served(o) for o in found]
        next_token = ""
        if more:
            last = items[-1]["metadata"]
            next_token = _token(last.get("namespace", ""), last["name"], rv)
        return items, rv, next_token, remaining

    def _list_meta(self, rv: int, next_token: str, remaining: int | None) -> dict[str, Any]:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if next_token:
            meta["continue"] = next_token
            if remaining is not None:
                meta["remainingItemCount"] = remaining
        return meta

    def list(self, req: Request) -> dict[str, Any]:
        items, rv, next_token, remaining = self._page(req)
        if req.table:
            return table(
                req.kind,
                items,
                self.clock(),
                include=req.query.get("includeObject", "Metadata"),
                resource_version=str(rv),
                continue_=next_token,
            )
        return {
            "kind": f"{req.kind.kind}List",
            "apiVersion": req.api_version,
            "metadata": self._list_meta(rv, next_token, remaining),
            "items": items,
        }

    def list_json(self, req: Request) -> bytes:
        """``list(req)`` encoded as JSON, the same bytes, with what each object contributes
        (its JSON, or its table row but the cells that move with the time) kept per object
        version (``ObjectStore.memo``): a list of 10,000 unchanged pods encodes little."""
        items, rv, next_token, remaining = self._page(req)
        memo = self.store.memo
        if req.table:
            return table_json(
                req.kind,
                items,
                self.clock(),
                include=req.query.get("includeObject", "Metadata"),
                resource_version=str(rv),
                continue_=next_token,
                memo=memo,
            )
        head = _dumps(
            {
                "kind": f"{req.kind.kind}List",
                "apiVersion": req.api_version,
                "metadata": self._list_meta(rv, next_token, remaining),
                "items": [],
            }
        )
        json_of = self.store.json_of
        body = b",".join(json_of(o) for o in items)
        return head[:-2] + body + head[-2:]

    # -- writes --------------------------------------------------------------------------

    def _prepare(self, req: Request, body: Any) -> dict[str, Any]:
        """The body as an object of ``req.kind`` in ``req.namespace``, validated."""
        kind = req.kind
        if not isinstance(body, dict):
            raise BadRequest(
                f"the body of the request is not a {kind.kind} object: "
                f"json: cannot unmarshal {type(body).__name__} into Go value of type {kind.kind}"
            )
        body.setdefault("apiVersion", req.api_version)
        body.setdefault("kind", kind.kind)
        if body["apiVersion"] != req.api_version or body["kind"] != kind.kind:
            raise BadRequest(
                f"the API version in the data ({body['apiVersion']}) does not match the expected"
                f" API version ({req.api_version})"
                if body["apiVersion"] != req.api_version
                else f"the kind in the data ({body['kind']}) does not match the expected kind"
                f" ({kind.kind})"
            )
        meta = body.get("metadata")
        if meta is None:
            meta = body["metadata"] = {}
        if not isinstance(meta, dict):
            raise BadRequest("metadata: expected an object")
        if kind.namespaced:
            ns = meta.get("namespace")
            if ns and req.namespace and ns != req.namespace:
                raise BadRequest(
                    "the namespace of the provided object does not match the namespace sent on"
                    " the request"
                )
            meta["namespace"] = req.namespace or ns or "default"
        if self.validate is not None:
            mode = req.query.get("fieldValidation", "Warn")
            if mode not in ("Strict", "Warn", "Ignore"):
                raise BadRequest(
                    f"fieldValidation parameter unsupported: {mode}, must be one of Ignore, Warn,"
                    " Strict"
                )
            errors, warnings = self.validate(body, mode)
            if any(e.bad_request for e in errors):
                # Decoding failed (a wrong JSON type, or unknown/duplicate fields in Strict):
                # kube-apiserver's transformDecodeError wording, with the version sent.
                sent = str(body.get("apiVersion", "")).rpartition("/")[2] or kind.version
                raise BadRequest(
                    f'{kind.kind} in version "{sent}" cannot be handled as a {kind.kind}: '
                    + bad_request_message(errors)
                )
            if errors:
                name = str(meta.get("name", ""))
                raise Invalid(kind.group, kind.kind, name, [_cause(e) for e in errors])
            req.warnings.extend(warnings)
            # Accepted with unknown fields (Warn, Ignore): they are dropped. Every unknown
            # field is a warning in Warn mode (and an error in Strict): without any, there
            # is nothing to prune and the object need not be walked again.
            if warnings or mode == "Ignore":
                prune(body)
        # Kept in the kind's stored version; answered in the request's (``as_served``).
        stored = convert(body, kind.api_version)
        admit_queue(kind, stored)  # a queue object feeds the engine: as --queues reads it
        if is_secret(kind):
            normalize_secret(stored)
        return stored

    def create(self, req: Request, body: Any) -> dict[str, Any]:
        if req.kind.namespaced and req.namespace is None:
            raise MethodNotAllowed(req.kind.resource, "create")
        obj = self._prepare(req, body)
        if "status" in req.kind.subresources:
            obj.pop("status", None)
        _own_annotations(obj, None, req.user)
        return self.store.create(obj, dry_run=_dry_run(req.query), copy=False)

    def _check_name(self, req: Request, obj: dict[str, Any]) -> None:
        name = obj["metadata"].get("name")
        if name != req.name:
            raise BadRequest(
                f"the name of the object ({name}) does not match the name on the URL ({req.name})"
            )

    def _current(self, req: Request) -> dict[str, Any] | None:
        assert req.name is not None
        return self.store.peek(req.kind.resource, req.namespace, req.name)

    def update(self, req: Request, body: Any) -> dict[str, Any]:
        if req.subresource == "scale":
            return self.rescale(req, body)
        obj = self._prepare(req, body)
        self._check_name(req, obj)
        _own_annotations(obj, self._current(req), req.user)
        if req.subresource == "status":
            return self.store.update_status(obj, dry_run=_dry_run(req.query), copy=False)
        return self.store.update(obj, dry_run=_dry_run(req.query), copy=False)

    def patch(self, req: Request, content_type: str, patch: Any) -> tuple[dict[str, Any], int]:
        """The patched object and 200 (201 when an apply created it)."""
        assert req.name is not None
        kind = req.kind
        current = self.store.get(kind.resource, req.namespace, req.name)
        builtin = kind.group in BUILTIN_GROUPS
        if req.subresource == "scale" and current is not None:
            scale = apply_patch(content_type, self.scale(req, current), patch, builtin=True)
            return self.rescale(req, scale), 200
        if content_type == APPLY:
            manager = req.query.get("fieldManager")
            if not manager:
                raise BadRequest(
                    'PatchOptions.meta.k8s.io "" is invalid: fieldManager: '
                    "Required value: is required for apply patch"
                )
            if current is None:
                owned = field_set(patch, keyed=builtin) if isinstance(patch, dict) else {}
                obj = self._prepare(req, patch)
                self._check_name(req, obj)
                obj["metadata"]["managedFields"] = [self._managed(manager, "Apply", kind, owned)]
                if "status" in kind.subresources and req.subresource != "status":
                    obj.pop("status", None)
                _own_annotations(obj, None, req.user)
                return self.store.create(obj, dry_run=_dry_run(req.query), copy=False), 201
        if current is None:
            raise NotFound(kind.resource, req.name)
        current = req.as_served(current)
        entries: list[dict[str, Any]] = []
        if content_type == APPLY:
            # another applier's fields: a conflict unless forced (``managedfields``)
            entries = [dict(m) for m in current["metadata"].get("managedFields") or ()]
            force = _flag(req.query, "force")
            check_apply(
                req.query["fieldManager"], patch, current, entries, force=force, keyed=builtin
            )
        patched = apply_patch(content_type, current, patch, builtin=builtin)
        owned = field_set(patch, keyed=builtin) if isinstance(patch, dict) else {}
        if content_type == APPLY:  # what the applier applied before and not now goes
            let_go(req.query["fieldManager"], owned, entries, patched)
        patched = self._prepare(req, patched)
        self._check_name(req, patched)
        _own_annotations(patched, self._current(req), req.user)
        if content_type == APPLY:
            manager = req.query["fieldManager"]
            fields = [
                m
                for m in entries
                if not (m.get("manager") == manager and m.get("operation") == "Apply")
            ]
            mine = self._managed(manager, "Apply", kind, owned)
            patched["metadata"]["managedFields"] = [*fields, mine]
        if req.subresource == "status":
            return self.store.update_status(patched, dry_run=_dry_run(req.query), copy=False), 200
        return self.store.update(patched, dry_run=_dry_run(req.query), copy=False), 200

    def _managed(
        self, manager: str, operation: str, kind: Kind, fields: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return {
            "manager": manager,
            "operation": operation,
            "apiVersion": kind.api_version,
            "time": timestamp(self.clock()),
            "fieldsType": "FieldsV1",
            "fieldsV1": fields or {},
        }

    def _propagation(self, req: Request, options: Mapping[str, Any]) -> str:
        policy = options.get("propagationPolicy") or req.query.get("propagationPolicy")
        orphan = options.get("orphanDependents")
        if orphan is None and "orphanDependents" in req.query:
            orphan = _flag(req.query, "orphanDependents")
        if policy and orphan is not None:
            raise BadRequest("orphanDependents and propagationPolicy cannot both be set")
        if orphan is not None:
            return "Orphan" if orphan else "Background"
        if policy:
            return str(policy)
        return "Orphan" if req.kind.resource in _ORPHAN_BY_DEFAULT else "Background"

    def delete(self, req: Request, options: Mapping[str, Any]) -> dict[str, Any]:
        """The deleted object's Status (Success), or the object when finalizers hold it."""
        assert req.name is not None
        kind = req.kind
        before = self.store.peek(kind.resource, req.namespace, req.name)  # only read
        pre = options.get("preconditions") or {}
        held = self.store.delete(
            kind.resource,
            req.namespace,
            req.name,
            propagation=self._propagation(req, options),
            precondition_uid=pre.get("uid"),
            precondition_rv=pre.get("resourceVersion"),
            dry_run=_dry_run(req.query, options),
        )
        if held is not None:
            return held
        if kind.plural == "pods" and before is not None:
            return before
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {
                "name": req.name,
                **({"group": kind.group} if kind.group else {}),
                "kind": kind.plural,
                "uid": (before or {}).get("metadata", {}).get("uid", ""),
            },
        }

    def delete_collection(self, req: Request, options: Mapping[str, Any]) -> dict[str, Any]:
        kind = req.kind
        doomed = self.store.list(kind.resource, req.namespace, match=self.selector(req))
        gone = []
        for obj in doomed:
            meta = obj["metadata"]
            one = Request(
                kind,
                meta.get("namespace") or None,
                meta["name"],
                None,
                req.query,
                version=req.version,
            )
            try:
                self.delete(one, options)
            except NotFound:
                continue  # taken with an owner deleted before it
            gone.append(copy_obj(obj))
        return {
            "kind": f"{kind.kind}List",
            "apiVersion": req.api_version,
            "metadata": {"resourceVersion": str(self.store.resource_version)},
            "items": gone,
        }
