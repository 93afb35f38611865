"""A Service's endpoints, sans-IO: the Service and the pods of its namespace -> the
EndpointSlices (``discovery.k8s.io/v1``) and the legacy ``v1`` Endpoints it should have.

As Kubernetes' EndpointSlice and Endpoints controllers (1.32):

- The pods are those its ``spec.selector`` matches (a Service without a selector has endpoints
  its user manages: none are made), that have an IP and have not ended (Succeeded, Failed).
- Pods here share their host's network, so a pod's address (``status.podIP``) is its node's,
  and an endpoint is that address with the container port a Service port's ``targetPort``
  names (a number, or a container port's name, looked up in each pod: two pods may give the
  same name different numbers).
- Endpoints with the same resolved ports share a slice; each slice is named
  ``SERVICE-XXXXXXXX`` after a hash of its ports (deterministic, so the next pass finds it),
  labelled ``kubernetes.io/service-name`` and ``endpointslice.kubernetes.io/managed-by``,
  and owned by the Service (deleted with it).
- Conditions: ``ready`` = the pod's ``Ready`` condition is True and it is not terminating;
  ``serving`` = the Ready condition regardless of terminating; ``terminating`` = it has a
  ``deletionTimestamp``. A Running pod without a Ready condition at all counts as ready (pods
  whose containers run without probes).
- The ``v1`` Endpoints object (what ``kubectl get endpoints`` shows): the same, as subsets of
  ``addresses`` and ``notReadyAddresses``; terminating pods are left out of it.

``reconcile(service, pods, slices)`` -> ``EndpointsPlan``: slices to create, update, delete
and the Endpoints object as it should be. Pure: the runner (``phalanx.kube.endpointrunner``)
carries it out.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MANAGED_BY",
    "MANAGER",
    "SERVICE_NAME",
    "EndpointsPlan",
    "endpoint_ready",
    "reconcile",
    "selects",
]

SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
MANAGER = "endpointslice-controller.k8s.io"

Obj = dict[str, Any]
PortKey = tuple[tuple[str, int, str], ...]
"""A slice's ports: (name, port, protocol) in the Service's order."""


@dataclass
class EndpointsPlan:
    create: list[Obj] = field(default_factory=list)
    update: list[Obj] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    """Names of slices to delete."""
    endpoints: Obj | None = None
    """The v1 Endpoints as it should be (None: the Service has no selector: leave it)."""


def selects(service: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Whether the Service's selector matches the pod (an empty or missing one matches
    nothing, as for the endpoints controllers)."""
    selector = (service.get("spec") or {}).get("selector") or {}
    if not selector:
        return False
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def _ready_condition(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    for cond in status.get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return bool(status.get("phase") == "Running")  # no probes, no condition: running is ready


def endpoint_ready(pod: Mapping[str, Any]) -> tuple[bool, bool, bool]:
    """(ready, serving, terminating) of a pod as an endpoint."""
    serving = _ready_condition(pod)
    terminating = (pod.get("metadata") or {}).get("deletionTimestamp") is not None
    return serving and not terminating, serving, terminating


def _container_port(pod: Mapping[str, Any], name: str, protocol: str) -> int | None:
    for container in (pod.get("spec") or {}).get("containers") or ():
        for port in container.get("ports") or ():
            if port.get("name") == name and port.get("protocol", "TCP") == protocol:
                value = port.get("containerPort")
                return value if isinstance(value, int) else None
    return None


def _ports_of(service: Mapping[str, Any], pod: Mapping[str, Any]) -> PortKey:
    """The Service's ports as resolved for ``pod`` (those it cannot resolve left out)."""
    out = []
    for port in (service.get("spec") or {}).get("ports") or ():
        protocol = str(port.get("protocol", "TCP"))
        target = port.get("targetPort", port.get("port"))
        number = _container_port(pod, target, protocol) if isinstance(target, str) else target
        if isinstance(number, int):
            out.append((str(port.get("name", "")), number, protocol))
    return tuple(out)


def _slice_name(service_name: str, ports: PortKey) -> str:
    digest = zlib.crc32(repr(ports).encode()) & 0xFFFFFFFF
    return f"{service_name}-{digest:08x}"[-63:].lstrip("-")


def _owner(service: Mapping[str, Any]) -> Obj:
    meta = service.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _endpoint(pod: Mapping[str, Any]) -> Obj:
    meta = pod.get("metadata") or {}
    ready, serving, terminating = endpoint_ready(pod)
    out: Obj = {
        "addresses": [str((pod.get("status") or {}).get("podIP"))],
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
        "targetRef": {
            "kind": "Pod",
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
        },
    }
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        out["nodeName"] = node
    return out


def _members(
    service: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    chosen = [
        p
        for p in pods
        if selects(service, p)
        and (p.get("status") or {}).get("podIP")
        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]
    return sorted(chosen, key=lambda p: str((p.get("metadata") or {}).get("name")))


def _desired_slices(
    service: Mapping[str, Any], members: Sequence[Mapping[str, Any]]
) -> dict[str, Obj]:
    meta = service.get("metadata") or {}
    name, namespace = str(meta.get("name")), meta.get("namespace")
    groups: dict[PortKey, list[Obj]] = {}
    for pod in members:
        groups.setdefault(_ports_of(service, pod), []).append(_endpoint(pod))
    if not groups:
        groups[()] = []  # as upstream: a placeholder slice says "no endpoints" (not "unknown")
    labels = {**(meta.get("labels") or {}), SERVICE_NAME: name, MANAGED_BY: MANAGER}
    out: dict[str, Obj] = {}
    for ports, endpoints in groups.items():
        slice_name = _slice_name(name, ports)
        out[slice_name] = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": slice_name,
                "namespace": namespace,
                "labels": labels,
                "ownerReferences": [_owner(service)],
            },
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": [{"name": n, "port": p, "protocol": proto} for n, p, proto in ports],
        }
    return out


def _legacy(service: Mapping[str, Any], members: Sequence[Mapping[str, Any]]) -> Obj:
    meta = service.get("metadata") or {}
    subsets: dict[PortKey, Obj] = {}
    for pod in members:
        ready, _, terminating = endpoint_ready(pod)
        if terminating:
            continue
        pod_meta = pod.get("metadata") or {}
        address: Obj = {
            "ip": str((pod.get("status") or {}).get("podIP")),
            "targetRef": {
                "kind": "Pod",
                "namespace": pod_meta.get("namespace"),
                "name": pod_meta.get("name"),
                "uid": pod_meta.get("uid"),
            },
        }
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            address["nodeName"] = node
        ports = _ports_of(service, pod)
        subset = subsets.setdefault(
            ports,
            {"ports": [{"name": n, "port": p, "protocol": proto} for n, p, proto in ports]},
        )
        subset.setdefault("addresses" if ready else "notReadyAddresses", []).append(address)
    out: Obj = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "labels": dict(meta.get("labels") or {}),
        },
    }
    if subsets:
        out["subsets"] = list(subsets.values())
    return out


def _same(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    cur_meta, want_meta = current.get("metadata") or {}, desired.get("metadata") or {}
    return (
        all(current.get(k) == desired.get(k) for k in ("addressType", "endpoints", "ports"))
        and cur_meta.get("labels") == want_meta.get("labels")
        and cur_meta.get("ownerReferences") == want_meta.get("ownerReferences")
    )


def reconcile(
    service: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    slices: Sequence[Mapping[str, Any]],
) -> EndpointsPlan:
    """The plan that brings ``slices`` (those this controller manages for ``service``) to
    what ``pods`` (the pods of its namespace) make them."""
    plan = EndpointsPlan()
    selector = (service.get("spec") or {}).get("selector")
    members = _members(service, pods) if selector else []
    desired = _desired_slices(service, members) if selector else {}
    current = {str((s.get("metadata") or {}).get("name")): s for s in slices}
    for name, want in sorted(desired.items()):
        have = current.get(name)
        if have is None:
            plan.create.append(want)
        elif not _same(have, want):
            plan.update.append(
                {**want, "metadata": {**(have.get("metadata") or {}), **want["metadata"]}}
            )
    plan.delete = sorted(set(current) - set(desired))
    if selector:
        plan.endpoints = _legacy(service, members)
    return plan
