"""The object store's memory: every object by resource, namespace and name, with the indexes
a store needs (owners' dependents, objects by uid, names sorted per namespace for paged
lists) and a memo of what was computed from each object version. ``ObjectStore`` writes
through it; nothing here writes to a table or tells subscribers."""

from __future__ import annotations

import bisect
import builtins
import json
from collections.abc import Callable
from typing import Any

from phalanx.kube.selectors import Predicate

__all__ = ["ObjectIndex"]

Resource = tuple[str, str]
Key = tuple[str, str]
"""(namespace, name); namespace "" for cluster-scoped objects."""
Objects = list[dict[str, Any]]
_MISSING = object()


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


class ObjectIndex:
    """Objects in memory, indexed. They are the store's own: never mutated, only replaced."""

    def __init__(self) -> None:
        self._objects: dict[Resource, dict[str, dict[str, dict[str, Any]]]] = {}
        """resource -> namespace -> name -> object."""
        self._dependents: dict[str, set[tuple[Resource, str, str]]] = {}
        """owner uid -> the objects whose ownerReferences name it."""
        self._by_uid: dict[str, tuple[Resource, str, str]] = {}
        self._names: dict[tuple[Resource, str], builtins.list[str]] = {}
        """(resource, namespace) -> its names, sorted; dropped when one comes or goes."""
        self._cache: dict[str, tuple[str, dict[Any, Any]]] = {}
        """uid -> (resourceVersion, slot -> value): what ``memo`` computed from an object."""

    def peek(self, resource: Resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The store's own object (no copy: never mutate it), or None."""
        return self._objects.get(resource, {}).get(namespace or "", {}).get(name)

    def page(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        match: Predicate | None = None,
        after: Key | None = None,
        limit: int = 0,
    ) -> tuple[Objects, bool, int | None]:
        """Up to ``limit`` (0: all) objects after the key ``after`` in (namespace, name)
        order that ``match`` accepts (the store's own dicts: never mutate them); whether more
        follow; and, without ``match``, how many."""
        by_ns = self._objects.get(resource, {})
        spaces = [namespace or ""] if namespace is not None else self._sorted_spaces(resource)
        out: Objects = []
        more = False
        remaining: int | None = 0 if match is None else None
        for ns in spaces:
            if after is not None and ns < after[0]:
                continue
            objs = by_ns.get(ns)
            if not objs:
                continue
            names = self._sorted_names(resource, ns)
            start = bisect.bisect_right(names, after[1]) if after and ns == after[0] else 0
            for i in range(start, len(names)):
                obj = objs[names[i]]
                if match is not None and not match(obj):
                    continue
                if limit and len(out) == limit:
                    more = True
                    if remaining is not None:
                        remaining += len(names) - i
                    break
                out.append(obj)
            if more and remaining is None:
                break
        return out, more, remaining if more else None

    def dependents(self, uid: str, resource: Resource, namespace: str) -> Objects:
        """The objects of ``resource`` in ``namespace`` whose ``ownerReferences`` name
        ``uid``, sorted by name (the store's own dicts: never mutate them): an owner's
        children without a scan of the namespace."""
        found = sorted(
            name
            for res, ns, name in self._dependents.get(uid, ())
            if res == resource and ns == namespace
        )
        by_name = self._objects.get(resource, {}).get(namespace, {})
        return [by_name[name] for name in found if name in by_name]

    def _sorted_spaces(self, resource: Resource) -> builtins.list[str]:
        return sorted(self._objects.get(resource, {}))

    def _sorted_names(self, resource: Resource, ns: str) -> builtins.list[str]:
        key = (resource, ns)
        names = self._names.get(key)
        if names is None:
            names = self._names[key] = sorted(self._objects.get(resource, {}).get(ns, {}))
        return names

    def memo(self, obj: dict[str, Any], slot: Any, compute: Callable[[dict[str, Any]], Any]) -> Any:
        """``compute(obj)``, kept for this version of the object (its uid and
        resourceVersion) under ``slot``: the JSON of an object, its table row. ``compute``
        must depend on nothing but ``obj`` (and ``slot``). Forgotten when the object changes
        or goes."""
        meta = obj.get("metadata") or {}
        uid, rv = meta.get("uid"), meta.get("resourceVersion")
        if not uid or not rv or uid not in self._by_uid:
            return compute(obj)  # not the store's (a dry run's, a deleted one's): not kept
        entry = self._cache.get(uid)
        if entry is None or entry[0] != rv:
            entry = self._cache[uid] = (rv, {})
        found = entry[1].get(slot, _MISSING)
        if found is _MISSING:
            found = entry[1][slot] = compute(obj)
        return found

    def json_of(self, obj: dict[str, Any]) -> bytes:
        """``obj``'s JSON (compact, UTF-8, as the API writes it), kept for this version of
        the object (``memo``): a create's answer, a list, a watch event and the group
        commit's row are the same bytes, encoded once. ``obj`` is the store's own, or its
        conversion to another version (``apiVersion`` tells them apart)."""
        encoded: bytes = self.memo(obj, ("json", obj.get("apiVersion")), _dumps)
        return encoded

    def kept_json(self, obj: dict[str, Any]) -> bytes | None:
        """``json_of(obj)`` if it was kept already, else None (nothing is computed)."""
        meta = obj.get("metadata") or {}
        entry = self._cache.get(meta.get("uid") or "")
        if entry is None or entry[0] != meta.get("resourceVersion"):
            return None
        found: bytes | None = entry[1].get(("json", obj.get("apiVersion")))
        return found

    def _alive(self, uid: str | None) -> bool:
        return uid is not None and uid in self._by_uid

    def _put(self, resource: Resource, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        by_name = self._objects.setdefault(resource, {}).setdefault(ns, {})
        old = by_name.get(name)
        if old is not None:
            self._unindex(resource, old)
            if old.get("metadata", {}).get("uid") != meta.get("uid"):
                self._cache.pop(old["metadata"].get("uid", ""), None)
        if name not in by_name:
            self._names.pop((resource, ns), None)  # sorted again when next listed
        by_name[name] = obj
        if meta.get("uid"):
            self._by_uid[meta["uid"]] = (resource, ns, name)
        for ref in meta.get("ownerReferences") or ():
            if isinstance(ref, dict) and ref.get("uid"):
                self._dependents.setdefault(ref["uid"], set()).add((resource, ns, name))

    def _drop(self, resource: Resource, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        by_name = self._objects.get(resource, {}).get(ns, {})
        old = by_name.pop(name, None)
        self._names.pop((resource, ns), None)
        if old is not None:
            self._unindex(resource, old)
        self._dependents.pop(meta.get("uid", ""), None)
        self._by_uid.pop(meta.get("uid", ""), None)
        self._cache.pop(meta.get("uid", ""), None)

    def _unindex(self, resource: Resource, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        key = (resource, meta.get("namespace", ""), meta["name"])
        for ref in meta.get("ownerReferences") or ():
            if isinstance(ref, dict) and ref.get("uid"):
                deps = self._dependents.get(ref["uid"])
                if deps is not None:
                    deps.discard(key)
                    if not deps:
                        del self._dependents[ref["uid"]]
