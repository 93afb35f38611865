"""``v1`` Node objects: a view of the engine's nodes, and ``kubectl cordon``/``uncordon``.

Each node of the cluster is a Node (rewritten every tick where it changed): capacity and
allocatable ``cpu``, ``memory``, ``nvidia.com/gpu`` and ``pods`` (110, the kubelet's
default), label ``kubernetes.io/hostname`` (and ``nvidia.com/gpu.product``, the GPU
model), condition ``Ready`` (False while its agent is down or the node is downed, reason
``KubeletNotReady`` with the node's reason), and for a drained node ``spec.unschedulable``
with the ``node.kubernetes.io/unschedulable:NoSchedule`` taint, as the node lifecycle
controller adds it. Nodes are not created or deleted through the API (they are the
cluster's).

A change of ``spec.unschedulable`` through the API (``kubectl cordon`` and ``uncordon``
patch it) drains the node (running jobs go on, none start) or resumes it, as ``scontrol
update State=DRAIN|RESUME`` does: journaled, with the reason ``cordoned with kubectl``.
Only an administrator may (RBAC decides who may patch nodes at all).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from phalanx.domain.caller import Caller
from phalanx.domain.cluster import Cluster, Node
from phalanx.errors import PhalanxError
from phalanx.kube.errors import KubeError
from phalanx.kube.store import ObjectStore

__all__ = ["CORDON_REASON", "NODES", "NodeViews", "node_object"]

log = logging.getLogger("phalanx.kube.nodes")

NODES = ("", "nodes")
CORDON_REASON = "cordoned with kubectl"
_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
_PODS = "110"


class Controller(Protocol):
    """What of the live controller this needs (``phalanx.live.controller.Controller``)."""

    @property
    def cluster(self) -> Cluster: ...

    def node_down(self, name: str) -> bool: ...

    def node_note(self, name: str) -> Any: ...

    def update_nodes(
        self, names: list[str], state: str, reason: str, caller: Caller, *, kill: bool = False
    ) -> None: ...


def node_object(node: Node, down: bool, note: Any) -> dict[str, Any]:
    """The Node of ``node`` (module docstring); ``note``: the engine's ``NodeNote`` or None."""
    resources = {
        "cpu": str(node.cpus),
        "memory": f"{node.memory_mb}Mi",
        "nvidia.com/gpu": str(node.gpus),
        "pods": _PODS,
    }
    labels = {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux"}
    if node.gpu_model:
        labels["nvidia.com/gpu.product"] = node.gpu_model
    state = getattr(note, "state", None)
    ready = not down and state != "down"
    condition: dict[str, Any] = {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "KubeletNotReady",
        "message": "kubelet is posting ready status"
        if ready
        else str(getattr(note, "reason", "") or "Not responding"),
    }
    spec: dict[str, Any] = {}
    if state in ("drain", "down"):
        spec = {"unschedulable": True, "taints": [dict(_TAINT)]}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": labels},
        "spec": spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [condition],
            # every field the Node schema requires; what no agent reports reads "unknown"
            # (tasks run as host processes: there is no container runtime)
            "nodeInfo": {
                "machineID": node.name,
                "systemUUID": node.name,
                "bootID": "unknown",
                "kernelVersion": "unknown",
                "osImage": "unknown",
                "containerRuntimeVersion": "none",
                "kubeletVersion": "phalanx",
                "kubeProxyVersion": "phalanx",
                "operatingSystem": "linux",
                "architecture": "unknown",
            },
        },
    }


class NodeViews:
    """``tick()`` writes the Nodes; ``start()`` follows cordons (module docstring)."""

    def __init__(
        self,
        store: ObjectStore,
        controller: Controller,
        *,
        defer: Callable[[Callable[[], None]], object],
    ) -> None:
        self.store = store
        self.controller = controller
        self.defer = defer
        self._writing = False

    def start(self) -> None:
        self.store.subscribe(self._changed)
        self.tick()

    def stop(self) -> None:
        self.store.unsubscribe(self._changed)

    def tick(self) -> None:
        cluster = self.controller.cluster
        self._writing = True
        try:
            for node in cluster.nodes:
                wanted = node_object(
                    node, self.controller.node_down(node.name), self.controller.node_note(node.name)
                )
                self._write(wanted)
        finally:
            self._writing = False

    def _write(self, wanted: dict[str, Any]) -> None:
        name = wanted["metadata"]["name"]
        current = self.store.get(NODES, None, name)
        try:
            if current is None:
                status = wanted.pop("status")
                made = self.store.create(wanted)
                made["status"] = status
                made["metadata"].pop("resourceVersion", None)
                self.store.update_status(made)
                return
            if current.get("spec") != wanted["spec"] or _labels(current) != _labels(wanted):
                current["spec"] = wanted["spec"]
                current["metadata"]["labels"] = wanted["metadata"]["labels"]
                current["metadata"].pop("resourceVersion", None)
                current = self.store.update(current)
            if current.get("status") != wanted["status"]:
                current["status"] = wanted["status"]
                current["metadata"].pop("resourceVersion", None)
                self.store.update_status(current)
        except KubeError as exc:
            log.debug("node %s: %s", name, exc)

    def _changed(self, verb: str, obj: dict[str, Any]) -> None:
        if self._writing or obj.get("kind") != "Node" or verb == "DELETED":
            return
        name = str(obj["metadata"].get("name", ""))
        wanted = bool((obj.get("spec") or {}).get("unschedulable"))
        self.defer(lambda: self._cordon(name, wanted))

    def _cordon(self, name: str, wanted: bool) -> None:
        note = self.controller.node_note(name)
        drained = getattr(note, "state", None) in ("drain", "down")
        if wanted != drained and self.controller.cluster.node_index(name) is not None:
            admin = Caller(0, "root", admin=True)
            try:
                state = "drain" if wanted else "resume"
                self.controller.update_nodes([name], state, CORDON_REASON, admin)
            except PhalanxError as exc:
                log.warning("node %s: %s", name, exc)
        self.tick()  # the view as the engine has it now (a downed node stays unschedulable)


def _labels(obj: dict[str, Any]) -> Any:
    return (obj.get("metadata") or {}).get("labels")
