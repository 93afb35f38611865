"""The ``Context`` a reconciler reads besides its object (``phalanx.workloads.plan``), as
the workload runner makes it from the object store and the engine's cluster: who asks, the
PriorityClasses, the Secrets and ConfigMaps of the object's namespace, the time limit of a
pod that never ends by itself, and how many nodes a gang may spread over."""

from __future__ import annotations

from phalanx.kube.resources import ANNOTATION_USER
from phalanx.kube.secrets import decoded
from phalanx.kube.workload_ports import PRIORITY_CLASSES, Engine, Obj, Resource, Store
from phalanx.workloads.plan import Context

__all__ = ["CONFIG_MAPS", "SECRETS", "context_of"]

SECRETS: Resource = ("", "secrets")
CONFIG_MAPS: Resource = ("", "configmaps")


def context_of(
    store: Store, engine: Engine, obj: Obj, *, log_dir: str, workdir: str, default_user: str
) -> Context:
    """The context of ``obj``'s reconcile: the requesting user is its ``phalanx.io/user``
    annotation (set by the API server from the bearer token), else ``default_user``."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    classes: dict[str, int] = {}
    default = 0
    for pc in store.list(PRIORITY_CLASSES):
        value = pc.get("value")
        if isinstance(value, int):
            classes[str((pc.get("metadata") or {}).get("name"))] = value
            if pc.get("globalDefault"):
                default = value
    part = engine.cluster.partition(None)
    unlimited = Context.service_time_limit
    if part is not None and part.max_time is not None:
        unlimited = min(unlimited, part.max_time)
    namespace = str((obj.get("metadata") or {}).get("namespace") or "default")
    secrets, config_maps = decoded(
        store.list(SECRETS, namespace), store.list(CONFIG_MAPS, namespace)
    )
    return Context(
        secrets=secrets,
        config_maps=config_maps,
        service_time_limit=unlimited,
        qos_names=frozenset(engine.cluster.qos),
        user=str(annotations.get(ANNOTATION_USER) or default_user),
        log_dir=log_dir,
        workdir=workdir,
        priority_classes=classes,
        global_default_priority=default,
        max_nodes=len(engine.cluster.nodes),
    )
