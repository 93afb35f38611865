"""A pod template as one task: argv, environment, directory and resources, in Phalanx terms.

Kubernetes semantics where there is no image runtime: ``command`` replaces the image's
ENTRYPOINT and ``args`` its CMD, so ``command + args`` is the argv (``args`` alone when there
is no ``command``; neither is an error, since an image's entrypoint cannot run on the host).
``$(VAR)`` in them expands to the container's variables (``$$`` escapes), as the kubelet does.
``env`` values are taken as given; ``valueFrom.fieldRef`` resolves what is known before the pod
runs (its name, namespace, uid, labels, annotations, service account) and marks what is known
only once it is placed, which the launch fills in (``spec.nodeName``; ``status.podIP`` and
``status.hostIP`` as the node's address, since tasks run as host processes); ``secretKeyRef`` and
``configMapKeyRef`` read the key of a Secret (decoded) or ConfigMap of the pod's namespace
when the pod is made (a missing one, unless ``optional``, is an error naming the field, as
the kubelet's CreateContainerConfigError names it). Resources come from
``requests``, else ``limits`` (Kubernetes' defaulting); ``nvidia.com/gpu`` from limits first.
The first container runs; the image is recorded, not pulled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from phalanx.domain.jobspec import NODE_ADDRESS_AT_LAUNCH, NODE_NAME_AT_LAUNCH
from phalanx.domain.probes import Probes
from phalanx.domain.quantity import GPU, MILLI_UNITS, parse_quantity
from phalanx.errors import InputError
from phalanx.workloads.probespec import pod_probes, restart_policy

if TYPE_CHECKING:  # plan's Context only as a type: the reconcilers pass theirs
    from phalanx.workloads.plan import Context

__all__ = ["PodTask", "expand", "pod_task"]

_MB = 2**20
_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
LOCALHOST = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class PodTask:
    """One pod's process and what it asks for."""

    container: str
    image: str
    argv: tuple[str, ...]
    environment: tuple[tuple[str, str], ...]
    workdir: str | None
    gpus: int
    cpus: int
    """Whole CPUs, rounded up from the request (``500m`` -> 1); 1 when none is asked."""
    mem_mb: int
    """MiB, rounded up; 0 when none is asked (no limit)."""
    ports: tuple[tuple[str, int], ...] = ()
    """Container ports by name."""
    restart: str = "Always"
    """The pod's ``restartPolicy``."""
    probes: Probes | None = None


def expand(text: str, variables: Mapping[str, str]) -> str:
    """``$(VAR)`` as the kubelet expands it: unknown references stay as written."""

    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return variables.get(m.group(1), m.group(0))

    return _VAR.sub(one, text)


def pod_task(
    template: Mapping[str, Any],
    meta: Mapping[str, Any],
    *,
    extra_env: Mapping[str, str] | None = None,
    where: str = "spec.template",
    refs: Context | None = None,
) -> PodTask:
    """The task of the pod made from ``template`` (a PodTemplateSpec) with metadata ``meta``
    (the pod's own: name, namespace, labels, annotations). ``extra_env``: variables a
    controller injects (JOB_COMPLETION_INDEX, RANK...), after the container's, as the
    controllers append them. ``refs``: the Secrets and ConfigMaps ``valueFrom`` may read.
    Raises ``InputError`` naming the field (under ``where``)."""
    spec = _mapping(template.get("spec"), f"{where}.spec")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise InputError("a pod needs at least one container", field=f"{where}.spec.containers")
    path = f"{where}.spec.containers[0]"
    container = _mapping(containers[0], path)
    env = _environment(container.get("env"), meta, spec, f"{path}.env", refs)
    if extra_env:
        env.update(extra_env)
    command = _strings(container.get("command"), f"{path}.command")
    args = _strings(container.get("args"), f"{path}.args")
    argv = tuple(expand(a, env) for a in (*command, *args))
    if not argv:
        raise InputError(
            "no command: without a container runtime the image's entrypoint cannot run; "
            "give command (or args)",
            field=f"{path}.command",
        )
    resources = _mapping(container.get("resources") or {}, f"{path}.resources")
    requests = _mapping(resources.get("requests") or {}, f"{path}.resources.requests")
    limits = _mapping(resources.get("limits") or {}, f"{path}.resources.limits")

    def amount(name: str, *, limits_first: bool = False) -> int | None:
        order = [("requests", requests), ("limits", limits)]
        for kind, values in reversed(order) if limits_first else order:
            if name in values:
                return parse_quantity(str(values[name]), field=f"{path}.resources.{kind}.{name}")
        return None

    gpu = amount(GPU, limits_first=True)
    cpu = amount("cpu")
    memory = amount("memory")
    for name, value in ((GPU, gpu), ("cpu", cpu), ("memory", memory)):
        if value is not None and value < 0:
            raise InputError("must be non-negative", field=f"{path}.resources.{name}")
    if gpu is not None and gpu % MILLI_UNITS:
        raise InputError("GPUs come whole", field=f"{path}.resources.limits.{GPU}")
    workdir = container.get("workingDir")
    if workdir is not None and not isinstance(workdir, str):
        raise InputError("must be a string", field=f"{path}.workingDir")
    ports = []
    for i, port in enumerate(container.get("ports") or ()):
        port = _mapping(port, f"{path}.ports[{i}]")
        number = port.get("containerPort")
        if not isinstance(number, int) or isinstance(number, bool):
            raise InputError("must be an integer", field=f"{path}.ports[{i}].containerPort")
        ports.append((str(port.get("name", "")), number))
    return PodTask(
        container=str(container.get("name", "")),
        image=str(container.get("image", "")),
        argv=argv,
        environment=tuple(env.items()),
        workdir=workdir or None,
        gpus=(gpu or 0) // MILLI_UNITS,
        cpus=max(1, -(-(cpu or 0) // MILLI_UNITS)),
        mem_mb=-(-(memory or 0) // (MILLI_UNITS * _MB)),
        ports=tuple(ports),
        restart=restart_policy(spec, f"{where}.spec"),
        probes=pod_probes(spec, container, ports, path),
    )


def _environment(
    entries: object,
    meta: Mapping[str, Any],
    spec: Mapping[str, Any],
    where: str,
    refs: Context | None = None,
) -> dict[str, str]:
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise InputError("must be a list", field=where)
    env: dict[str, str] = {}
    for i, entry in enumerate(entries):
        entry = _mapping(entry, f"{where}[{i}]")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise InputError("a variable needs a name", field=f"{where}[{i}].name")
        if "valueFrom" in entry:
            value = _value_from(entry["valueFrom"], meta, spec, f"{where}[{i}].valueFrom", refs)
            if value is not None:  # an optional key that is missing sets nothing
                env[name] = value
        else:
            # later variables may refer to earlier ones, as in Kubernetes
            env[name] = expand(str(entry.get("value", "")), env)
    return env


_LABEL_REF = re.compile(r"^metadata\.(labels|annotations)\['([^']+)'\]$")


def _value_from(
    source: object,
    meta: Mapping[str, Any],
    spec: Mapping[str, Any],
    where: str,
    refs: Context | None = None,
) -> str | None:
    source = _mapping(source, where)
    for kind, field in (("Secret", "secretKeyRef"), ("ConfigMap", "configMapKeyRef")):
        if field in source:
            held = (refs.secrets if kind == "Secret" else refs.config_maps) if refs else {}
            return _key_ref(kind, held, source[field], meta, f"{where}.{field}")
    ref = source.get("fieldRef")
    if ref is None:
        kinds = ", ".join(sorted(source)) or "nothing"
        raise InputError(
            f"only fieldRef, secretKeyRef and configMapKeyRef are supported here (got {kinds});"
            " give the value itself",
            field=where,
        )
    path = _mapping(ref, f"{where}.fieldRef").get("fieldPath")
    simple: dict[str, object] = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "spec.nodeName": NODE_NAME_AT_LAUNCH,
        "status.podIP": NODE_ADDRESS_AT_LAUNCH,
        "status.hostIP": NODE_ADDRESS_AT_LAUNCH,
        "status.podIPs": NODE_ADDRESS_AT_LAUNCH,
        "status.hostIPs": NODE_ADDRESS_AT_LAUNCH,
    }
    if path in simple:
        return str(simple[path] or "")
    m = _LABEL_REF.match(str(path))
    if m is not None:
        return str((meta.get(m.group(1)) or {}).get(m.group(2), ""))
    raise InputError(f"unsupported fieldPath {path!r}", field=f"{where}.fieldRef.fieldPath")


def _key_ref(
    kind: str,
    held: Mapping[tuple[str, str], Mapping[str, str]],
    ref: object,
    meta: Mapping[str, Any],
    where: str,
) -> str | None:
    """A ``secretKeyRef``/``configMapKeyRef``'s value; None for a missing optional one."""
    ref = _mapping(ref, where)
    name, key = ref.get("name"), ref.get("key")
    if not isinstance(name, str) or not name or not isinstance(key, str) or not key:
        raise InputError("name and key are required", field=where)
    namespace = str(meta.get("namespace") or "default")
    values = held.get((namespace, name))
    if values is None or key not in values:
        if ref.get("optional") is True:
            return None
        missing = (
            f'{kind.lower()} "{name}" not found'
            if values is None
            else (f"couldn't find key {key} in {kind} {namespace}/{name}")
        )
        raise InputError(missing, field=where)
    return values[key]


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError("must be an object", field=where)
    return value


def _strings(value: object, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError("must be a list of strings", field=where)
    return list(value)
