"""The EndpointSlice and Endpoints controller: ``phalanx.workloads.endpoints`` carried out
against the object store.

A Service added or changed, a pod added, changed or deleted in a Service's namespace, or a
managed slice changed by someone else marks that namespace's Services dirty; ``drain``
(deferred onto the loop, never inside a store callback) reconciles each once and writes the
difference: slices created, updated, deleted; the ``v1`` Endpoints object created, updated
(or deleted with its Service).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from phalanx.kube.controllers import Store
from phalanx.kube.errors import KubeError
from phalanx.workloads import endpoints

__all__ = ["ENDPOINTS", "ENDPOINTSLICES", "SERVICES", "EndpointsRunner"]

log = logging.getLogger("phalanx.kube.endpoints")

Resource = tuple[str, str]
Obj = dict[str, Any]
SERVICES: Resource = ("", "services")
PODS: Resource = ("", "pods")
ENDPOINTSLICES: Resource = ("discovery.k8s.io", "endpointslices")
ENDPOINTS: Resource = ("", "endpoints")
Key = tuple[str, str]
"""(namespace, service name)."""


def _ident(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace", "default")), str(meta.get("name")))


class EndpointsRunner:
    """Keeps every Service's slices and Endpoints current (module docstring). Runs on the
    controller's loop thread; ``defer(fn)`` runs ``fn`` soon on it."""

    def __init__(self, store: Store, defer: Callable[[Callable[[], None]], Any]) -> None:
        self.store = store
        self.defer = defer
        self.dirty: set[Key] = set()
        self._scheduled = False
        self.reconciles = 0

    def start(self) -> None:
        """Subscribe to the store and look at every Service there is."""
        self.store.subscribe(self.on_object)
        for svc in self.store.list(SERVICES):
            self._mark(_ident(svc))

    def on_object(self, kind: str, obj: Obj) -> None:
        what = (str(obj.get("apiVersion")), str(obj.get("kind")))
        if what == ("v1", "Service"):
            key = _ident(obj)
            if kind == "DELETED":
                self.dirty.discard(key)
                self._forget(key)
            else:
                self._mark(key)
        elif what == ("v1", "Pod"):
            namespace = _ident(obj)[0]
            # Every Service of the namespace: the pod's labels may have just stopped matching.
            for svc in self.store.list(SERVICES, namespace):
                if (svc.get("spec") or {}).get("selector"):
                    self._mark(_ident(svc))
        elif what == ("discovery.k8s.io/v1", "EndpointSlice") and kind == "DELETED":
            labels = (obj.get("metadata") or {}).get("labels") or {}
            name = labels.get(endpoints.SERVICE_NAME)
            if name and labels.get(endpoints.MANAGED_BY) == endpoints.MANAGER:
                self._mark((_ident(obj)[0], str(name)))

    def _mark(self, key: Key) -> None:
        self.dirty.add(key)
        if not self._scheduled:
            self._scheduled = True
            self.defer(self.drain)

    def _forget(self, key: Key) -> None:
        namespace, name = key
        for one in self._slices(namespace, name):
            self._quietly(self.store.delete, ENDPOINTSLICES, namespace, one["metadata"]["name"])
        if self.store.get(ENDPOINTS, namespace, name) is not None:
            self._quietly(self.store.delete, ENDPOINTS, namespace, name)

    def _slices(self, namespace: str, name: str) -> list[Obj]:
        return self.store.list(
            ENDPOINTSLICES,
            namespace,
            {endpoints.SERVICE_NAME: name, endpoints.MANAGED_BY: endpoints.MANAGER},
        )

    def drain(self) -> None:
        """Reconcile every dirty Service once."""
        self._scheduled = False
        batch, self.dirty = self.dirty, set()
        for key in sorted(batch):
            try:
                self.reconcile(key)
            except KubeError as e:
                log.warning("endpoints of service %s/%s: %s", key[0], key[1], e)

    def reconcile(self, key: Key) -> endpoints.EndpointsPlan | None:
        namespace, name = key
        svc = self.store.get(SERVICES, namespace, name)
        if svc is None:
            self._forget(key)
            return None
        pods = self.store.list(PODS, namespace)
        plan = endpoints.reconcile(svc, pods, self._slices(namespace, name))
        self.reconciles += 1
        for one in plan.create:
            self._quietly(self.store.create, one)
        for one in plan.update:
            meta = {k: v for k, v in one["metadata"].items() if k != "resourceVersion"}
            self._quietly(self.store.update, {**one, "metadata": meta})
        for slice_name in plan.delete:
            self._quietly(self.store.delete, ENDPOINTSLICES, namespace, slice_name)
        if plan.endpoints is not None:
            self._write_endpoints(plan.endpoints)
        return plan

    def _write_endpoints(self, want: Obj) -> None:
        namespace, name = _ident(want)
        have = self.store.get(ENDPOINTS, namespace, name)
        if have is None:
            self._quietly(self.store.create, want)
            return
        if have.get("subsets") == want.get("subsets") and (
            (have.get("metadata") or {}).get("labels") == want["metadata"]["labels"]
        ):
            return
        meta = {**have["metadata"], "labels": want["metadata"]["labels"]}
        meta.pop("resourceVersion", None)
        self._quietly(self.store.update, {**want, "metadata": meta})

    @staticmethod
    def _quietly(call: Callable[..., Any], *args: Any) -> Any:
        """A write whose object came or went meanwhile: logged, not raised."""
        try:
            return call(*args)
        except KubeError as e:
            log.debug("%s: %s", getattr(call, "__name__", call), e)
            return None
