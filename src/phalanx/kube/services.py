"""A Service's cluster IP and node ports, allocated as kube-apiserver's service registry does.

On create: ``spec.clusterIP`` (and ``clusterIPs``) from the service range, or the one asked
for if it is in the range and free; ``None`` makes a headless Service (no IP, no router).
``type: NodePort`` (and ``LoadBalancer``) gives each port a ``nodePort`` from
30000-32767, or the one asked for. On update the allocated values are carried over when the
new object leaves them out (kube-apiserver's ``patchAllocatedValues``, so ``kubectl apply``
of the original file keeps them), and a cluster IP may not change. Conflicts and values out
of range are 422 ``Invalid`` in kube-apiserver's words (``provided IP is already
allocated``, ``provided port is already allocated``).

Nothing is kept between calls: what is taken is read from the stored Services each time, so
a restarted controller (which reloads them) allocates exactly as before. Where kube-apiserver
draws at random, this takes the lowest free value, so allocation is deterministic.

Every address of 127.0.0.0/8 is on Linux's loopback interface, so the default range,
127.77.0.0/16, needs no setup for the router to listen on its addresses.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from phalanx.kube.errors import FieldCause, Invalid, field_error

__all__ = ["DEFAULT_RANGE", "NODE_PORTS", "ServiceAllocator"]

DEFAULT_RANGE = "127.77.0.0/16"
NODE_PORTS = (30000, 32767)
"""kube-apiserver's default ``--service-node-port-range``."""
NODE_PORT_TYPES = ("NodePort", "LoadBalancer")

Obj = dict[str, Any]


def _ident(svc: Obj) -> tuple[str, str]:
    meta = svc.get("metadata") or {}
    return (str(meta.get("namespace", "")), str(meta.get("name", "")))


class ServiceAllocator:
    """Fills in and checks a Service's cluster IP and node ports (module docstring)."""

    def __init__(self, cidr: str = DEFAULT_RANGE, node_ports: tuple[int, int] = NODE_PORTS) -> None:
        self.network = ipaddress.ip_network(cidr)
        self.node_ports = node_ports

    # -- entry points ----------------------------------------------------------------------

    def create(self, svc: Obj, existing: Iterable[Obj]) -> None:
        """Allocate for a new ``svc`` (in place); ``existing``: the stored Services."""
        others = [o for o in existing if _ident(o) != _ident(svc)]
        self._allocate(svc, None, others)

    def update(self, svc: Obj, old: Obj, existing: Iterable[Obj]) -> None:
        """Carry the allocated values of ``old`` over to ``svc`` and allocate what is new."""
        others = [o for o in existing if _ident(o) != _ident(svc)]
        self._allocate(svc, old, others)

    # -- the work --------------------------------------------------------------------------

    def _allocate(self, svc: Obj, old: Obj | None, others: list[Obj]) -> None:
        spec = svc.get("spec")
        if not isinstance(spec, dict):
            return
        errors: list[FieldCause] = []
        old_spec = (old or {}).get("spec") or {}
        if old is not None:
            for key in ("clusterIP", "clusterIPs"):
                if not spec.get(key) and old_spec.get(key):
                    spec[key] = old_spec[key]
        self._cluster_ip(spec, old_spec, others, errors)
        self._ports(spec, old_spec, others, errors)
        if errors:
            raise Invalid("", "Service", _ident(svc)[1], errors)

    def _cluster_ip(
        self, spec: Obj, old_spec: Obj, others: list[Obj], errors: list[FieldCause]
    ) -> None:
        if spec.get("type") == "ExternalName":
            return
        asked = spec.get("clusterIP") or next(iter(spec.get("clusterIPs") or ()), None)
        if old_spec.get("clusterIP") and asked != old_spec["clusterIP"]:
            errors.append(
                field_error(
                    "spec.clusterIPs[0]", "FieldValueInvalid", "may not change once set", [asked]
                )
            )
            return
        if asked == "None":
            spec["clusterIP"], spec["clusterIPs"] = "None", ["None"]
            return
        if old_spec.get("clusterIP") == asked and asked:
            spec["clusterIPs"] = [asked]
            return  # kept from before: already ours
        used = {str((o.get("spec") or {}).get("clusterIP")) for o in others}
        if asked:
            problem = self._check_ip(str(asked), used)
            if problem:
                errors.append(
                    field_error(
                        "spec.clusterIPs",
                        "FieldValueInvalid",
                        f"failed to allocate IP {asked}: {problem}",
                        [asked],
                    )
                )
                return
            ip = str(asked)
        else:
            found = self._free_ip(used)
            if found is None:
                errors.append(
                    field_error(
                        "spec.clusterIPs",
                        "FieldValueInvalid",
                        "failed to allocate a serviceIP: range is full",
                        [],
                    )
                )
                return
            ip = found
        spec["clusterIP"], spec["clusterIPs"] = ip, [ip]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")

    def _check_ip(self, asked: str, used: set[str]) -> str:
        try:
            addr = ipaddress.ip_address(asked)
        except ValueError:
            return "must be a valid IP address"
        if addr not in self.network or addr in (
            self.network.network_address,
            self.network.broadcast_address,
        ):
            return (
                f"the provided IP ({asked}) is not in the valid range. The range of valid IPs is"
                f" {self.network}"
            )
        if asked in used:
            return "provided IP is already allocated"
        return ""

    def _free_ip(self, used: set[str]) -> str | None:
        for addr in self.network.hosts():
            text = str(addr)
            if text not in used:
                return text
        return None

    def _ports(self, spec: Obj, old_spec: Obj, others: list[Obj], errors: list[FieldCause]) -> None:
        ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
        if not ports and spec.get("clusterIP") != "None" and spec.get("type") != "ExternalName":
            errors.append(field_error("spec.ports", "FieldValueRequired"))
            return
        wants_node_ports = spec.get("type") in NODE_PORT_TYPES
        previous = {
            (p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
            for p in old_spec.get("ports") or []
            if isinstance(p, dict) and p.get("nodePort")
        }
        used = {
            int(p["nodePort"])
            for o in others
            for p in (o.get("spec") or {}).get("ports") or []
            if isinstance(p, dict) and isinstance(p.get("nodePort"), int)
        }
        low, high = self.node_ports
        for i, port in enumerate(ports):
            if not wants_node_ports:
                if port.get("nodePort"):
                    errors.append(
                        field_error(
                            f"spec.ports[{i}].nodePort",
                            "FieldValueForbidden",
                            "may not be used when `type` is 'ClusterIP'",
                        )
                    )
                continue
            asked = port.get("nodePort") or previous.get(
                (port.get("port"), port.get("protocol", "TCP"))
            )
            if asked:
                if not isinstance(asked, int) or not low <= asked <= high:
                    errors.append(
                        field_error(
                            f"spec.ports[{i}].nodePort",
                            "FieldValueInvalid",
                            "provided port is not in the valid range. The range of"
                            f" valid ports is {low}-{high}",
                            asked,
                        )
                    )
                elif asked in used:
                    errors.append(
                        field_error(
                            f"spec.ports[{i}].nodePort",
                            "FieldValueInvalid",
                            "provided port is already allocated",
                            asked,
                        )
                    )
                else:
                    port["nodePort"] = asked
                    used.add(asked)
                continue
            free = next((n for n in range(low, high + 1) if n not in used), None)
            if free is None:
                errors.append(
                    field_error(
                        f"spec.ports[{i}].nodePort",
                        "FieldValueInvalid",
                        "failed to allocate a nodePort: range is full",
                        0,
                    )
                )
                continue
            port["nodePort"] = free
            used.add(free)
