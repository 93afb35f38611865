"""The object store behind the Kubernetes API: every object as a plain JSON dict, one global
resourceVersion counter, write-through to the controller's database (``phalanx.kube.persist``),
and an event log that watches replay from.

Contract (what the workload reconcilers and the routes rely on):
- ``resource`` is (group, plural): ("batch", "jobs"), ("", "pods").
- Reads return copies; the store never mutates a dict it handed out or one it was given.
- Objects handed to ``subscribe`` callbacks and kept in the event log are the store's own:
  never mutate them.
- Every call runs on one thread (the controller's event loop); callbacks run on it after the
  commit, in commit order.
- Errors are ``phalanx.kube.errors``: NotFound, AlreadyExists, Conflict, Invalid, Forbidden,
  BadRequest; a database that cannot take the write raises ``JournalError`` and changes nothing.

Durability. By default each write is committed to the table before the call returns. After
``defer_commits()`` (the API server's mode, ``phalanx.kube.groupcommit``) a write changes
memory at once and waits in ``pending`` (the latest write of each object only); a group
commit hands the whole batch to the table in one transaction (one fsync for many requests)
and calls ``committed``. Whoever answers a client must first wait until ``durable_version``
covers what the answer depends on: a write that is acknowledged is on disk.
"""

from __future__ import annotations

import builtins
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from phalanx.kube import defaults, kinds
from phalanx.kube.errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    field_error,
)
from phalanx.kube.names import check_name
from phalanx.kube.objectindex import ObjectIndex
from phalanx.kube.persist import MemoryObjects, ObjectTable, Write
from phalanx.kube.selectors import Predicate, match_labels
from phalanx.kube.services import ServiceAllocator
from phalanx.kube.values import copy_json, copy_obj, new_uid, suffix, timestamp

__all__ = ["SYSTEM_NAMESPACES", "Event", "ObjectStore", "copy_json", "copy_obj", "timestamp"]

Resource = tuple[str, str]
Key = tuple[str, str]
"""(namespace, name); namespace "" for cluster-scoped objects."""
Event = tuple[int, str, dict[str, Any]]
"""(resourceVersion, "ADDED" | "MODIFIED" | "DELETED", the object)."""

Change = tuple[str, Resource, dict[str, Any]]
Dependents = list[tuple[Resource, str, str]]
Objects = list[dict[str, Any]]

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAMESPACES: Resource = ("", "namespaces")
SERVICES: Resource = ("", "services")
_GENERATE_TRIES = 8
_NOT_SPEC = frozenset(("apiVersion", "kind", "metadata", "status"))


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in _NOT_SPEC}


def _ident(resource: Resource) -> str:
    return f"{resource[0]}/{resource[1]}"


class ObjectStore(ObjectIndex):
    """Kubernetes objects in memory, persisted by ``table`` (default: nowhere)."""

    def __init__(
        self,
        table: ObjectTable | None = None,
        *,
        clock: Callable[[], float] = time.time,
        window: int = 100_000,
        services: ServiceAllocator | None = None,
    ) -> None:
        self.services = services if services is not None else ServiceAllocator()
        """Cluster IPs and node ports of Services (``phalanx.kube.services``)."""
        self._table = table if table is not None else MemoryObjects()
        self._clock = clock
        super().__init__()
        self._subscribers: list[Callable[[str, dict[str, Any]], None]] = []
        self._log: deque[Event] = deque(maxlen=window)
        self._deferred = False
        self._pending: dict[tuple[str, str, str], Write] = {}
        """Writes not in the table yet (deferred mode), the latest of each object."""
        self.on_pending: Callable[[], None] | None = None
        """Called when a write starts waiting in ``pending`` (the group commit's cue)."""
        rv, bodies = self._table.load()
        self._rv = rv
        self._durable = rv
        self._floor = rv
        """Events at or below this resourceVersion are not in the log: a watch from an older
        one is 410 Gone."""
        for body in bodies:
            kind = kinds.by_kind(body.get("apiVersion", ""), body.get("kind", ""))
            if kind is not None:
                self._put(kind.resource, body)
        for ns in SYSTEM_NAMESPACES:
            if self.get(NAMESPACES, "", ns) is None:
                self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    # -- durability ----------------------------------------------------------------------

    @property
    def table(self) -> ObjectTable:
        return self._table

    @property
    def durable_version(self) -> int:
        """Every write up to this resourceVersion is in the table."""
        return self._durable

    def defer_commits(self) -> None:
        """From now on writes wait in ``pending`` for a group commit (module docstring)."""
        self._deferred = True

    def take_pending(self) -> tuple[int, builtins.list[Write]]:
        """The writes waiting (cleared) and the resourceVersion they bring the table to. A
        body whose JSON was made already (a create's answer: ``json_of``) is that JSON."""
        writes = [
            w
            if not isinstance(w[4], dict) or (done := self.kept_json(w[4])) is None
            else (*w[:4], done)
            for w in self._pending.values()
        ]
        self._pending.clear()
        return self._rv, writes

    def committed(self, rv: int) -> None:
        """The writes ``take_pending`` gave with ``rv`` are in the table."""
        self._durable = max(self._durable, rv)

    def uncommitted(self, writes: builtins.list[Write]) -> None:
        """Writes ``take_pending`` gave that the table refused: they wait again (behind any
        newer write of the same object)."""
        self._pending = {(w[0], w[1], w[2]): w for w in writes} | self._pending

    def flush(self) -> None:
        """Commit what waits now, on this thread (``JournalError``: it waits again)."""
        rv, writes = self.take_pending()
        if rv <= self._durable and not writes:
            return
        try:
            self._table.commit(rv, writes)
        except Exception:
            self.uncommitted(writes)
            raise
        self.committed(rv)

    def reload(self) -> int:
        """Read the table again, for a standby that takes over: the leader before it wrote
        there since this store was loaded. Returns how many objects changed.

        Subscribers are told of each change (ADDED, MODIFIED, DELETED), as an informer's
        relist tells its handlers. The resourceVersion counter goes on from the table's (it
        never goes back: what a client saw stays older than what comes next). The event log
        starts afresh at that version: a watch from an older resourceVersion gets 410 Gone
        (Expired) and lists again, as kube-apiserver answers one whose window it lost."""
        self.flush()  # what this store wrote itself goes first (none on a standby)
        rv, bodies = self._table.load()
        fresh: dict[tuple[Resource, str, str], dict[str, Any]] = {}
        for body in bodies:
            kind = kinds.by_kind(body.get("apiVersion", ""), body.get("kind", ""))
            if kind is not None:
                meta = body["metadata"]
                fresh[(kind.resource, meta.get("namespace", ""), meta["name"])] = body
        changes: builtins.list[Change] = []
        for resource, spaces in builtins.list(self._objects.items()):
            for ns, names in builtins.list(spaces.items()):
                for name, obj in builtins.list(names.items()):
                    if (resource, ns, name) not in fresh:
                        self._drop(resource, obj)
                        changes.append(("DELETED", resource, obj))
        for (resource, ns, name), body in fresh.items():
            old = self.peek(resource, ns, name)
            if old is not None and old == body:
                continue
            self._put(resource, body)
            changes.append(("ADDED" if old is None else "MODIFIED", resource, body))
        self._rv = self._durable = self._floor = max(self._rv, rv)
        self._log.clear()
        for verb, _, obj in changes:
            for callback in builtins.list(self._subscribers):
                callback(verb, obj)
        return len(changes)

    # -- reads ---------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """The last resourceVersion handed out (a list's ``metadata.resourceVersion``)."""
        return self._rv

    def get(self, resource: Resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        """A copy of the object, or None."""
        found = self.peek(resource, namespace, name)
        return copy_obj(found) if found is not None else None

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
        *,
        match: Predicate | None = None,
        copy: bool = True,
    ) -> Objects:
        """Objects of ``resource`` (in ``namespace``, or every one), sorted by namespace and
        name, whose labels include ``labels`` and that ``match`` accepts. ``copy=False``
        hands out the store's own dicts (the routes, which only serialize them)."""
        want = match_labels(labels)
        if want is not None and match is not None:
            given = match
            match = lambda o: want(o) and given(o)  # noqa: E731
        items, _, _ = self.page(resource, namespace, match=match or want)
        return [copy_obj(o) for o in items] if copy else items

    def owned(
        self,
        resource: Resource,
        namespace: str,
        uid: str,
        labels: Mapping[str, str] | None = None,
    ) -> Objects:
        """Copies of the objects of ``resource`` in ``namespace`` that ``uid`` controls (an
        ``ownerReference`` naming it with ``controller: true``) and whose labels include
        ``labels``, sorted by name: what ``list`` and a filter would give, from the owners'
        index rather than a scan of the namespace."""
        want = match_labels(labels)
        return [
            copy_obj(o)
            for o in self.dependents(uid, resource, namespace)
            if (want is None or want(o))
            and any(
                r.get("uid") == uid and r.get("controller")
                for r in o["metadata"].get("ownerReferences") or ()
                if isinstance(r, dict)
            )
        ]

    def events_since(self, rv: int) -> builtins.list[Event]:
        """The events after ``rv``, oldest first; ``Gone`` (Expired) if some have left the
        window."""
        if rv < self._floor:
            raise Gone(f"too old resource version: {rv} ({self._floor})")
        if rv >= self._rv:
            return []
        return [e for e in self._log if e[0] > rv]

    # -- writes --------------------------------------------------------------------------

    def subscribe(self, callback: Callable[[str, dict[str, Any]], None]) -> None:
        """Call ``callback(type, object)`` after each commit (on this thread)."""
        self._subscribers.append(callback)

    def unsubscribe(self, callback: Callable[[str, dict[str, Any]], None]) -> None:
        if callback in self._subscribers:
            self._subscribers.remove(callback)

    def create(
        self,
        obj: dict[str, Any],
        *,
        dry_run: bool = False,
        copy: bool = True,
        keep_uid: bool = False,
    ) -> dict[str, Any]:
        """Store a new object; fills uid, resourceVersion, creationTimestamp, generation (and a
        name from ``generateName``). ``AlreadyExists``, ``Invalid`` (a bad name), ``NotFound``
        (its namespace does not exist). ``copy=False``: the store takes ``obj`` itself (the
        caller never touches it again) and returns its own object (never mutate it): the API
        server's requests, whose bodies are theirs alone, save two deep copies.
        ``keep_uid``: the uid ``obj`` has, if any, is kept (the workload runner's pods, whose
        environment was resolved with it; a client's is never kept, as kube-apiserver keeps
        none)."""
        kind = self._kind_of(obj)
        new = copy_obj(obj) if copy else obj
        meta = new.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be an object")
        name = meta.get("name") or ""
        generated = not name  # (before ``meta`` is filled: it may be ``obj``'s own)
        if not name and meta.get("generateName"):
            name = meta["generateName"] + suffix()
            meta["name"] = name
        if not name:
            raise Invalid(
                kind.group,
                kind.kind,
                "",
                [
                    field_error(
                        "metadata.name", "FieldValueRequired", "name or generateName is required"
                    )
                ],
            )
        check_name(kind, name)
        ns = self._namespace_for(kind, meta)
        # A generated name that is taken is drawn again, as kube-apiserver retries it (1.32).
        for _ in range(_GENERATE_TRIES if generated else 0):
            if self.peek(kind.resource, ns, name) is None:
                break
            name = meta["generateName"] + suffix()
            meta["name"] = name
        if self.peek(kind.resource, ns, name) is not None:
            raise AlreadyExists(kind.resource, name)
        given = meta.get("uid") if keep_uid else None
        for field in (
            "uid",
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ):
            meta.pop(field, None)
        meta["uid"] = given if isinstance(given, str) and given else new_uid()
        meta["creationTimestamp"] = timestamp(self._clock())
        if kind.kind not in ("Namespace", "Event", "ConfigMap", "Secret"):
            meta["generation"] = 1
        if kind.resource == NAMESPACES:
            new.setdefault("spec", {"finalizers": ["kubernetes"]})
            new["status"] = {"phase": "Active"}
        defaults.before_create(kind, new)
        defaults.after_create(kind, new)
        if kind.resource == SERVICES:
            self.services.create(new, self.list(SERVICES, copy=False))
        if dry_run:
            return new
        self._commit([("ADDED", kind.resource, new)])
        return copy_obj(new) if copy else new

    def update(
        self, obj: dict[str, Any], *, dry_run: bool = False, copy: bool = True
    ) -> dict[str, Any]:
        """Replace an object's metadata and spec (its status is kept: that is
        ``update_status``). ``Conflict`` when ``metadata.resourceVersion`` is given and not the
        current one; generation is bumped when anything but metadata and status changed; an
        object being deleted whose last finalizer is removed is deleted. ``copy`` as
        ``create``."""
        kind, old = self._current(obj)
        new = copy_obj(obj) if copy else obj
        meta = new.setdefault("metadata", {})
        self._keep_identity(kind, old, meta)
        if "status" in kind.subresources:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        if old.get("metadata", {}).get("deletionTimestamp") is not None:
            meta["deletionTimestamp"] = old["metadata"]["deletionTimestamp"]
        if kind.resource == SERVICES:
            self.services.update(new, old, self.list(SERVICES, copy=False))
        return self._replace(kind, old, new, dry_run=dry_run, copy=copy)

    def update_status(
        self, obj: dict[str, Any], *, dry_run: bool = False, copy: bool = True
    ) -> dict[str, Any]:
        """Replace an object's status only (the ``/status`` subresource); ``Conflict`` as
        ``update``; ``copy`` as ``create``."""
        kind, old = self._current(obj)
        new = {**old, "metadata": dict(old["metadata"])}  # the rest is replaced, not changed
        if "status" in obj:
            new["status"] = copy_json(obj["status"]) if copy else obj["status"]
        else:
            new.pop("status", None)
        return self._replace(kind, old, new, dry_run=dry_run, copy=copy)

    def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        propagation: str = "Background",
        precondition_uid: str | None = None,
        precondition_rv: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any] | None:
        """Delete an object: None when it is gone, else (it has finalizers) a copy of it,
        marked with ``deletionTimestamp``. Its dependents (``ownerReferences``) are deleted
        (Background: after it, Foreground: before it) or orphaned; a namespace takes its
        objects with it. ``NotFound``, ``Conflict`` on a failed precondition, ``Forbidden``
        for the system namespaces."""
        kind = self._kind(resource)
        ns = namespace or "" if kind.namespaced else ""
        old = self.peek(resource, ns, name)
        if old is None:
            raise NotFound(resource, name)
        meta = old["metadata"]
        if precondition_uid is not None and precondition_uid != meta.get("uid"):
            raise Conflict(
                resource,
                name,
                "Precondition failed: UID in precondition: "
                f"{precondition_uid}, UID in object meta: {meta.get('uid')}",
            )
        if precondition_rv is not None and precondition_rv != meta.get("resourceVersion"):
            raise Conflict(resource, name)
        if resource == NAMESPACES and name in SYSTEM_NAMESPACES[:3]:
            raise Forbidden(resource, name, "this namespace may not be deleted")
        if propagation not in ("Background", "Foreground", "Orphan"):
            raise BadRequest(
                f"propagationPolicy {propagation!r} is not one of Orphan, Foreground, Background"
            )
        if dry_run:
            return None
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp") is None:
                new = copy_obj(old)
                new["metadata"]["deletionTimestamp"] = timestamp(self._clock())
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                self._commit([("MODIFIED", resource, new)])
                return copy_obj(new)
            return copy_obj(old)
        self._remove(kind, old, propagation)
        return None

    # -- internals -----------------------------------------------------------------------

    def _kind(self, resource: Resource) -> kinds.Kind:
        kind = kinds.by_resource(*resource)
        if kind is None:
            raise NotFound(resource, "")
        return kind

    def _kind_of(self, obj: Any) -> kinds.Kind:
        if not isinstance(obj, dict):
            raise BadRequest("the object must be a JSON object")
        api_version, kind_name = obj.get("apiVersion"), obj.get("kind")
        if not api_version or not kind_name:
            raise BadRequest(
                "Object 'Kind' is missing in the object"
                if not kind_name
                else "Object 'apiVersion' is missing in the object"
            )
        kind = kinds.by_kind(str(api_version), str(kind_name))
        if kind is None:
            raise BadRequest(f'no kind "{kind_name}" is registered for version "{api_version}"')
        return kind

    def _namespace_for(self, kind: kinds.Kind, meta: dict[str, Any]) -> str:
        if not kind.namespaced:
            meta.pop("namespace", None)
            return ""
        ns = meta.get("namespace") or "default"
        meta["namespace"] = ns
        space = self.peek(NAMESPACES, "", ns)
        if space is None:
            raise NotFound(NAMESPACES, ns)
        if space["metadata"].get("deletionTimestamp") is not None:
            raise Forbidden(
                kind.resource,
                meta.get("name", ""),
                f"unable to create new content in namespace {ns} because it is being terminated",
            )
        return ns

    def _current(self, obj: Any) -> tuple[kinds.Kind, dict[str, Any]]:
        kind = self._kind_of(obj)
        meta = obj.get("metadata") or {}
        name = meta.get("name") or ""
        ns = (meta.get("namespace") or "default") if kind.namespaced else ""
        old = self.peek(kind.resource, ns, name)
        if old is None:
            raise NotFound(kind.resource, name)
        rv = meta.get("resourceVersion")
        if rv and str(rv) != old["metadata"]["resourceVersion"]:
            raise Conflict(kind.resource, name)
        return kind, old

    def _keep_identity(self, kind: kinds.Kind, old: dict[str, Any], meta: dict[str, Any]) -> None:
        was = old["metadata"]
        for field in ("uid", "creationTimestamp", "generation", "namespace"):
            if field in was:
                meta[field] = was[field]
            else:
                meta.pop(field, None)

    def _replace(
        self,
        kind: kinds.Kind,
        old: dict[str, Any],
        new: dict[str, Any],
        *,
        dry_run: bool,
        copy: bool = True,
    ) -> dict[str, Any]:
        meta = new["metadata"]
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        if new == old:  # a no-op update: no new resourceVersion, no event
            return copy_obj(old) if copy else old
        if "generation" in meta and _spec(new) != _spec(old):
            meta["generation"] = int(meta["generation"]) + 1
        if dry_run:
            return new
        if meta.get("deletionTimestamp") is not None and not meta.get("finalizers"):
            self._remove(kind, new, "Background")
            return copy_obj(new) if copy else new
        self._commit([("MODIFIED", kind.resource, new)])
        return copy_obj(new) if copy else new

    def _remove(self, kind: kinds.Kind, obj: dict[str, Any], propagation: str) -> None:
        uid = obj["metadata"].get("uid", "")
        dependents = sorted(self._dependents.get(uid, ()))
        if kind.resource == NAMESPACES:
            name = obj["metadata"]["name"]
            for resource, by_ns in builtins.list(self._objects.items()):
                for child in builtins.list(by_ns.get(name, {}).values()):
                    self._force_remove(self._kind(resource), child)
        if propagation == "Foreground":
            self._gc(uid, dependents, "Foreground")
        self._commit([("DELETED", kind.resource, obj)])
        if propagation == "Background":
            self._gc(uid, dependents, "Background")
        elif propagation == "Orphan":
            for resource, ns, name in dependents:
                orphan = self.peek(resource, ns, name)
                if orphan is not None:
                    new = copy_obj(orphan)
                    refs = [
                        r for r in new["metadata"].get("ownerReferences", []) if r.get("uid") != uid
                    ]
                    if refs:
                        new["metadata"]["ownerReferences"] = refs
                    else:
                        new["metadata"].pop("ownerReferences", None)
                    self._commit([("MODIFIED", resource, new)])

    def _force_remove(self, kind: kinds.Kind, obj: dict[str, Any]) -> None:
        """Gone now, finalizers or not (its namespace went)."""
        if self.peek(kind.resource, obj["metadata"].get("namespace"), obj["metadata"]["name"]):
            self._commit([("DELETED", kind.resource, obj)])

    def _gc(self, uid: str, dependents: Dependents, policy: str) -> None:
        for resource, ns, name in dependents:
            child = self.peek(resource, ns, name)
            if child is None:
                continue
            owners = [r.get("uid") for r in child["metadata"].get("ownerReferences", [])]
            if any(o != uid and self._alive(o) for o in owners):
                continue  # another owner still holds it
            self.delete(resource, ns, name, propagation=policy)

    def _commit(self, changes: builtins.list[Change]) -> None:
        writes: builtins.list[Write] = []
        rv = self._rv
        for verb, resource, obj in changes:
            meta = obj["metadata"]
            ns, name = meta.get("namespace", ""), meta["name"]
            if verb == "DELETED":
                writes.append((_ident(resource), ns, name, rv, None))
            else:
                rv += 1
                meta["resourceVersion"] = str(rv)
                writes.append((_ident(resource), ns, name, rv, obj))
        if all(w[4] is None for w in writes):
            rv += 1  # a deletion is an event too: it gets a resourceVersion of its own
        if self._deferred:
            was_empty = not self._pending
            for w in writes:
                self._pending[(w[0], w[1], w[2])] = w
            if was_empty and self.on_pending is not None:
                self.on_pending()
        else:
            self._table.commit(rv, writes)
            self._durable = rv
        self._rv = rv
        for verb, resource, obj in changes:
            if verb == "DELETED":
                obj = copy_obj(obj)
                obj["metadata"]["resourceVersion"] = str(rv)
                self._drop(resource, obj)
            else:
                self._put(resource, obj)
            rv_of = int(obj["metadata"]["resourceVersion"])
            if len(self._log) == self._log.maxlen:
                self._floor = self._log[0][0]
            self._log.append((rv_of, verb, obj))
            for callback in list(self._subscribers):
                callback(verb, obj)
