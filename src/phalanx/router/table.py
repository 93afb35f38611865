"""What the router knows from the API: Services and EndpointSlices -> the addresses to
listen on and, behind each, a ``Pool`` of endpoints and the Service's ``ServiceStats``.

A Service port (TCP; not headless, not ExternalName) is served on ``clusterIP:port`` and, for
``type: NodePort``/``LoadBalancer``, on ``NODE_ADDRESS:nodePort``. Its endpoints are those of
the Service's slices (label ``kubernetes.io/service-name``) whose port has the Service port's
name; an endpoint's ``conditions.ready`` missing counts as ready, as the API documents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from phalanx.router.backends import Pool
from phalanx.router.metrics import ServiceStats

__all__ = ["PortKey", "RouteTable"]

Obj = dict[str, Any]
PortKey = tuple[str, str, str]
"""(namespace, service, port name)."""
ServiceKey = tuple[str, str]
SERVICE_NAME = "kubernetes.io/service-name"


def _ident(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace", "default")), str(meta.get("name")))


class RouteTable:
    """Services, slices, pools and stats; ``listeners()`` says where to listen."""

    def __init__(
        self,
        clock: Callable[[], float],
        *,
        node_address: str = "0.0.0.0",
        max_held: int = 1000,
    ) -> None:
        self.clock = clock
        self.node_address = node_address
        self.max_held = max_held
        self.services: dict[ServiceKey, Obj] = {}
        self.slices: dict[tuple[str, str], Obj] = {}
        self.pools: dict[PortKey, Pool] = {}
        self.stats: dict[ServiceKey, ServiceStats] = {}
        self.changed: Callable[[], None] = lambda: None
        """Called after the set of listeners may have changed."""

    # -- the API's events ------------------------------------------------------------------

    def replace_services(self, items: Iterable[Obj]) -> None:
        self.services = {_ident(o): o for o in items}
        for key in list(self.stats):
            if key not in self.services:
                del self.stats[key]
        self._rebuild(set(self.services))

    def replace_slices(self, items: Iterable[Obj]) -> None:
        self.slices = {_ident(o): o for o in items}
        self._rebuild(set(self.services))

    def service_event(self, kind: str, obj: Obj) -> None:
        key = _ident(obj)
        if kind == "DELETED":
            self.services.pop(key, None)
            self.stats.pop(key, None)
        else:
            self.services[key] = obj
        self._rebuild({key})

    def slice_event(self, kind: str, obj: Obj) -> None:
        key = _ident(obj)
        if kind == "DELETED":
            self.slices.pop(key, None)
        else:
            self.slices[key] = obj
        name = ((obj.get("metadata") or {}).get("labels") or {}).get(SERVICE_NAME)
        if name:
            self._rebuild({(key[0], str(name))})

    # -- derived ---------------------------------------------------------------------------

    def _rebuild(self, keys: set[ServiceKey]) -> None:
        for key in keys:
            svc = self.services.get(key)
            names = {pk[2] for pk in self.pools if pk[:2] == key}
            wanted = {str(p.get("name", "")) for p in _tcp_ports(svc)} if svc else set()
            for gone in names - wanted:
                pool = self.pools.pop((*key, gone))
                pool.set_endpoints([])  # wakes what it holds: they answer 503
            if svc is None:
                continue
            if key not in self.stats:
                self.stats[key] = ServiceStats(key[0], key[1], start=self.clock())
            for port_name in sorted(wanted):
                pool = self.pools.get((*key, port_name)) or Pool(self.max_held)
                self.pools[(*key, port_name)] = pool
                pool.set_endpoints(self._endpoints(key, port_name))
        self.changed()

    def _endpoints(self, key: ServiceKey, port_name: str) -> list[tuple[str, int, bool, str]]:
        out: list[tuple[str, int, bool, str]] = []
        for (ns, _), one in sorted(self.slices.items()):
            labels = (one.get("metadata") or {}).get("labels") or {}
            if ns != key[0] or labels.get(SERVICE_NAME) != key[1]:
                continue
            port = next(
                (
                    p.get("port")
                    for p in one.get("ports") or []
                    if str(p.get("name") or "") == port_name and p.get("protocol", "TCP") == "TCP"
                ),
                None,
            )
            if not isinstance(port, int):
                continue
            for e in one.get("endpoints") or []:
                ready = (e.get("conditions") or {}).get("ready")
                ref = str((e.get("targetRef") or {}).get("uid") or "")
                for address in (e.get("addresses") or [])[:1]:  # all of one endpoint are one pod
                    out.append((str(address), port, ready is not False, ref))
        return out

    def listeners(self) -> dict[tuple[str, int], PortKey]:
        """(host, port) -> the Service port served there."""
        out: dict[tuple[str, int], PortKey] = {}
        for key, svc in sorted(self.services.items()):
            spec = svc.get("spec") or {}
            cluster_ip = spec.get("clusterIP")
            for p in _tcp_ports(svc):
                pk = (*key, str(p.get("name", "")))
                if cluster_ip and cluster_ip != "None" and isinstance(p.get("port"), int):
                    out[(str(cluster_ip), int(p["port"]))] = pk
                if spec.get("type") in ("NodePort", "LoadBalancer") and isinstance(
                    p.get("nodePort"), int
                ):
                    out[(self.node_address, int(p["nodePort"]))] = pk
        return out


def _tcp_ports(svc: Obj | None) -> list[Obj]:
    if svc is None:
        return []
    spec = svc.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return []
    return [
        p
        for p in spec.get("ports") or []
        if isinstance(p, dict) and p.get("protocol", "TCP") == "TCP"
    ]
