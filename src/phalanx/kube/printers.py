"""What ``kubectl get`` prints for each kind: the columns (the built-in kinds' as
kube-apiserver's printers have them, the CRDs' as their additionalPrinterColumns, priority 1 for
``-o wide``) and the cells that compute them from an object at ``now``. ``phalanx.kube.tables``
makes Table responses of them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from phalanx.kube.hpa_targets import targets
from phalanx.kube.kinds import Kind

__all__ = ["AGE", "NAME", "Cell", "Column", "age", "columns", "human_duration"]

Cell = Callable[[dict[str, Any], float], Any]
Column = tuple[str, str, int, Cell]
"""(name, type, priority, cell(object, now))."""


@functools.lru_cache(maxsize=4096)
def _ts(value: str | None) -> float | None:
    # fromisoformat is C and much faster than strptime: it matters at 10,000 rows.
    if not value or not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


def human_duration(seconds: float) -> str:
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def age(value: str | None, now: float) -> str:
    """How long ago an RFC 3339 timestamp was (``<unknown>`` without one)."""
    at = _ts(value)
    return "<unknown>" if at is None else human_duration(now - at)


@functools.lru_cache(maxsize=1024)
def _path(path: str) -> tuple[str, ...]:
    return tuple(path.split("."))


def _get(obj: Any, path: str, default: Any = None) -> Any:
    for part in _path(path):
        if not isinstance(obj, dict):
            return default
        obj = obj.get(part)
    return default if obj is None else obj


def _f(path: str, default: Any = "<none>") -> Cell:
    return lambda o, now: _get(o, path, default)


def _condition(kind: str) -> Cell:
    """The status ("True", "False", ...) of the object's condition of type ``kind``."""
    return lambda o, now: next(
        (c.get("status") for c in _get(o, "status.conditions", []) if c.get("type") == kind), ""
    )


def _name(o: dict[str, Any], now: float) -> str:
    return str(o["metadata"]["name"])


def _age(o: dict[str, Any], now: float) -> str:
    return age(o["metadata"].get("creationTimestamp"), now)


def _pod_ready(o: dict[str, Any], now: float) -> str:
    containers = _get(o, "spec.containers", [])
    statuses = _get(o, "status.containerStatuses", [])
    ready = sum(1 for s in statuses if s.get("ready"))
    return f"{ready}/{len(containers)}"


def _pod_status(o: dict[str, Any], now: float) -> str:
    if o["metadata"].get("deletionTimestamp"):
        return "Terminating"
    reason = _get(o, "status.reason")
    if reason:
        return str(reason)
    for s in _get(o, "status.containerStatuses", []):
        state = s.get("state", {})
        if "waiting" in state and state["waiting"].get("reason"):
            return str(state["waiting"]["reason"])
        if "terminated" in state and state["terminated"].get("reason"):
            return str(state["terminated"]["reason"])
    return str(_get(o, "status.phase", "Pending"))


def _restarts(o: dict[str, Any], now: float) -> str:
    """``3 (5s ago)``: the restarts and, after one, how long since the last ended (the
    latest ``lastState.terminated.finishedAt``), as kube-apiserver prints them."""
    statuses = _get(o, "status.containerStatuses", [])
    count = sum(int(s.get("restartCount", 0)) for s in statuses)
    ends = [_ts(_get(s, "lastState.terminated.finishedAt")) for s in statuses]
    last = max((at for at in ends if at is not None), default=None)
    if count and last is not None:
        return f"{count} ({human_duration(now - last)} ago)"
    return str(count)


def _conditions_true(o: dict[str, Any]) -> list[str]:
    return [c["type"] for c in _get(o, "status.conditions", []) if c.get("status") == "True"]


def _job_status(o: dict[str, Any], now: float) -> str:
    true = _conditions_true(o)
    for cond, shown in (
        ("Complete", "Complete"),
        ("Failed", "Failed"),
        ("FailureTarget", "FailureTarget"),
        ("SuccessCriteriaMet", "SuccessCriteriaMet"),
        ("Suspended", "Suspended"),
    ):
        if cond in true:
            return shown
    return "Running"


def _job_completions(o: dict[str, Any], now: float) -> str:
    succeeded = _get(o, "status.succeeded", 0)
    completions = _get(o, "spec.completions")
    if completions is None:
        parallelism = _get(o, "spec.parallelism", 1)
        return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"
    return f"{succeeded}/{completions}"


def _job_duration(o: dict[str, Any], now: float) -> str:
    start = _ts(_get(o, "status.startTime"))
    if start is None:
        return ""
    end = _ts(_get(o, "status.completionTime")) or now
    return human_duration(end - start)


def _containers(path: str, field: str) -> Cell:
    return lambda o, now: ",".join(str(c.get(field, "")) for c in _get(o, path, [])) or "<none>"


def _selector(path: str) -> Cell:
    def cell(o: dict[str, Any], now: float) -> str:
        sel = _get(o, path, {})
        labels = sel.get("matchLabels", sel) if isinstance(sel, dict) else {}
        return ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if isinstance(v, str)) or (
            "<none>"
        )

    return cell


def _ports(o: dict[str, Any], now: float) -> str:
    """A Service's ports as kubectl's makePortString: ``80/TCP``, ``80:30080/TCP``."""
    pieces = []
    for p in _get(o, "spec.ports", []):
        if isinstance(p, dict):
            node = f":{p['nodePort']}" if p.get("nodePort") else ""
            pieces.append(f"{p.get('port')}{node}/{p.get('protocol', 'TCP')}")
    return ",".join(pieces) or "<none>"


def _more(items: list[str], count: int, empty: str) -> str:
    """The first three of ``count`` items, then `` + N more...`` (kubectl's formatMoreList)."""
    if not items:
        return empty
    listed = ",".join(items[:3])
    return f"{listed} + {count - 3} more..." if count > 3 else listed


def _endpoints(o: dict[str, Any], now: float) -> str:
    """A v1 Endpoints' ``IP:PORT`` pairs (kubectl's formatEndpoints)."""
    pairs: list[str] = []
    for subset in o.get("subsets") or []:
        ips = [str(a.get("ip")) for a in subset.get("addresses") or []]
        ports = subset.get("ports") or []
        if not ports:
            pairs.extend(ips)
        for port in ports:
            pairs.extend(f"{ip}:{port.get('port')}" for ip in ips)
    return _more(pairs, len(pairs), "<none>")


def _slice_ports(o: dict[str, Any], now: float) -> str:
    ports = [str(p.get("port", "<unset>")) for p in o.get("ports") or []]
    return ",".join(ports) or "<unset>"


def _slice_endpoints(o: dict[str, Any], now: float) -> str:
    addresses = [str(a) for e in o.get("endpoints") or [] for a in e.get("addresses") or []]
    return _more(addresses, len(addresses), "<unset>")


def _last_condition(o: dict[str, Any], now: float) -> str:
    conds = _get(o, "status.conditions", [])
    return str(conds[-1].get("type", "")) if conds else ""


def _event_object(o: dict[str, Any], now: float) -> str:
    ref = o.get("involvedObject", {})
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


def _event_last_seen(o: dict[str, Any], now: float) -> str:
    return age(
        o.get("lastTimestamp") or o.get("eventTime") or _get(o, "metadata.creationTimestamp"), now
    )


def _ref(o: dict[str, Any], path: str) -> str:
    ref = _get(o, path, {})
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


def _traffic(which: str, field: str) -> Cell:
    def cell(o: dict[str, Any], now: float) -> Any:
        for t in _get(o, "status.components.predictor.traffic", []) or []:
            if (t.get("tag") == "prev") if which == "prev" else t.get("latestRevision") is True:
                return t.get(field, "")
        return ""

    return cell


def _subjects(kind: str) -> Cell:
    def cell(o: dict[str, Any], now: float) -> str:
        return ",".join(
            str(s.get("name")) for s in o.get("subjects") or [] if s.get("kind") == kind
        )

    return cell


def _node_status(o: dict[str, Any], now: float) -> str:
    """``Ready``, ``NotReady`` (``Unknown`` without a Ready condition), then
    ``,SchedulingDisabled`` for a cordoned node, as kubectl's node printer writes it."""
    ready = next(
        (c for c in (o.get("status") or {}).get("conditions") or () if c.get("type") == "Ready"),
        None,
    )
    text = (
        "Unknown" if ready is None else ("Ready" if ready.get("status") == "True" else "NotReady")
    )
    if (o.get("spec") or {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


NAME: Column = ("Name", "string", 0, _name)
AGE: Column = ("Age", "string", 0, _age)

_COLUMNS: dict[tuple[str, str], Sequence[Column]] = {
    ("", "Namespace"): (NAME, ("Status", "string", 0, _f("status.phase", "")), AGE),
    ("", "Pod"): (
        NAME,
        ("Ready", "string", 0, _pod_ready),
        ("Status", "string", 0, _pod_status),
        ("Restarts", "string", 0, _restarts),
        AGE,
        ("IP", "string", 1, _f("status.podIP")),
        ("Node", "string", 1, _f("spec.nodeName")),
        ("Nominated Node", "string", 1, _f("status.nominatedNodeName")),
        ("Readiness Gates", "string", 1, lambda o, now: "<none>"),
    ),
    ("", "Event"): (
        ("Last Seen", "string", 0, _event_last_seen),
        ("Type", "string", 0, _f("type", "")),
        ("Reason", "string", 0, _f("reason", "")),
        ("Object", "string", 0, _event_object),
        ("Message", "string", 0, _f("message", "")),
        ("Source", "string", 1, _f("source.component", "")),
        ("Count", "integer", 1, _f("count", 1)),
        ("Name", "string", 1, _name),
    ),
    ("", "Service"): (
        NAME,
        ("Type", "string", 0, _f("spec.type", "ClusterIP")),
        ("Cluster-IP", "string", 0, _f("spec.clusterIP", "None")),
        ("External-IP", "string", 0, lambda o, now: "<none>"),
        ("Port(s)", "string", 0, _ports),
        AGE,
        ("Selector", "string", 1, _selector("spec.selector")),
    ),
    ("", "Endpoints"): (NAME, ("Endpoints", "string", 0, _endpoints), AGE),
    ("discovery.k8s.io", "EndpointSlice"): (
        NAME,
        ("AddressType", "string", 0, _f("addressType", "")),
        ("Ports", "string", 0, _slice_ports),
        ("Endpoints", "string", 0, _slice_endpoints),
        AGE,
    ),
    ("", "ConfigMap"): (
        NAME,
        (
            "Data",
            "integer",
            0,
            lambda o, now: len(o.get("data") or {}) + len(o.get("binaryData") or {}),
        ),
        AGE,
    ),
    ("", "Node"): (
        NAME,
        ("Status", "string", 0, _node_status),
        ("Roles", "string", 0, lambda o, now: "<none>"),
        AGE,
        ("Version", "string", 0, _f("status.nodeInfo.kubeletVersion", "")),
        ("Internal-IP", "string", 1, lambda o, now: "<none>"),
        ("OS-Image", "string", 1, lambda o, now: "<unknown>"),
    ),
    ("", "Secret"): (
        NAME,
        ("Type", "string", 0, _f("type", "")),
        ("Data", "integer", 0, lambda o, now: len(o.get("data") or {})),
        AGE,
    ),
    ("batch", "Job"): (
        NAME,
        ("Status", "string", 0, _job_status),
        ("Completions", "string", 0, _job_completions),
        ("Duration", "string", 0, _job_duration),
        AGE,
        ("Containers", "string", 1, _containers("spec.template.spec.containers", "name")),
        ("Images", "string", 1, _containers("spec.template.spec.containers", "image")),
        ("Selector", "string", 1, _selector("spec.selector")),
    ),
    ("apps", "Deployment"): (
        NAME,
        (
            "Ready",
            "string",
            0,
            lambda o, now: f"{_get(o, 'status.readyReplicas', 0)}/{_get(o, 'spec.replicas', 1)}",
        ),
        ("Up-to-date", "integer", 0, _f("status.updatedReplicas", 0)),
        ("Available", "integer", 0, _f("status.availableReplicas", 0)),
        AGE,
        ("Containers", "string", 1, _containers("spec.template.spec.containers", "name")),
        ("Images", "string", 1, _containers("spec.template.spec.containers", "image")),
        ("Selector", "string", 1, _selector("spec.selector")),
    ),
    ("apps", "ReplicaSet"): (
        NAME,
        ("Desired", "integer", 0, _f("spec.replicas", 1)),
        ("Current", "integer", 0, _f("status.replicas", 0)),
        ("Ready", "integer", 0, _f("status.readyReplicas", 0)),
        AGE,
    ),
    ("autoscaling", "HorizontalPodAutoscaler"): (
        NAME,
        (
            "Reference",
            "string",
            0,
            lambda o, now: _ref(o, "spec.scaleTargetRef"),
        ),
        ("Targets", "string", 0, targets),
        ("MinPods", "string", 0, _f("spec.minReplicas", 1)),
        ("MaxPods", "integer", 0, _f("spec.maxReplicas", 0)),
        ("Replicas", "integer", 0, _f("status.currentReplicas", 0)),
        AGE,
    ),
    ("scheduling.k8s.io", "PriorityClass"): (
        NAME,
        ("Value", "integer", 0, _f("value", 0)),
        ("Global-Default", "boolean", 0, _f("globalDefault", False)),
        AGE,
        ("PreemptionPolicy", "string", 0, _f("preemptionPolicy", "PreemptLowerPriority")),
    ),
    ("rbac.authorization.k8s.io", "Role"): (
        NAME,
        ("Created At", "date", 0, _f("metadata.creationTimestamp", "")),
    ),
    ("rbac.authorization.k8s.io", "ClusterRole"): (
        NAME,
        ("Created At", "date", 0, _f("metadata.creationTimestamp", "")),
    ),
    ("rbac.authorization.k8s.io", "RoleBinding"): (
        NAME,
        (
            "Role",
            "string",
            0,
            lambda o, now: f"{_get(o, 'roleRef.kind', '')}/{_get(o, 'roleRef.name', '')}",
        ),
        AGE,
        ("Users", "string", 1, _subjects("User")),
        ("Groups", "string", 1, _subjects("Group")),
        ("ServiceAccounts", "string", 1, _subjects("ServiceAccount")),
    ),
    ("kubeflow.org", "PyTorchJob"): (NAME, ("State", "string", 0, _last_condition), AGE),
    ("batch.volcano.sh", "Job"): (
        NAME,
        ("Status", "string", 0, _f("status.state.phase", "")),
        ("MinAvailable", "integer", 0, _f("spec.minAvailable", "")),
        ("Runnings", "integer", 0, _f("status.running", "")),
        AGE,
        ("Queue", "string", 1, _f("spec.queue", "")),
    ),
    ("jobset.x-k8s.io", "JobSet"): (
        NAME,
        ("TerminalState", "string", 0, _f("status.terminalState", "")),
        ("Restarts", "string", 0, _f("status.restarts", "")),
        (
            "Completed",
            "string",
            0,
            _condition("Completed"),
        ),
        ("Suspended", "string", 0, _f("spec.suspend", "")),
        AGE,
    ),
    ("kueue.x-k8s.io", "ClusterQueue"): (
        NAME,
        (
            "Cohort",
            "string",
            0,
            # v1beta2's name, v1beta1's for an object read through that version
            lambda o, now: _get(o, "spec.cohortName", _get(o, "spec.cohort", "")),
        ),
        ("Strategy", "string", 1, _f("spec.queueingStrategy", "BestEffortFIFO")),
        ("Pending Workloads", "integer", 0, _f("status.pendingWorkloads", "")),
        ("Admitted Workloads", "integer", 1, _f("status.admittedWorkloads", "")),
    ),
    ("kueue.x-k8s.io", "LocalQueue"): (
        NAME,
        ("ClusterQueue", "string", 0, _f("spec.clusterQueue", "")),
        ("Pending Workloads", "integer", 0, _f("status.pendingWorkloads", "")),
        ("Admitted Workloads", "integer", 0, _f("status.admittedWorkloads", "")),
    ),
    ("kueue.x-k8s.io", "Workload"): (
        NAME,
        ("Queue", "string", 0, _f("spec.queueName", "")),
        ("Reserved in", "string", 0, _f("status.admission.clusterQueue", "")),
        (
            "Admitted",
            "string",
            0,
            _condition("Admitted"),
        ),
        (
            "Finished",
            "string",
            0,
            _condition("Finished"),
        ),
        AGE,
    ),
    ("kueue.x-k8s.io", "WorkloadPriorityClass"): (
        NAME,
        ("Value", "integer", 0, _f("value", 0)),
        AGE,
    ),
    ("scheduling.volcano.sh", "Queue"): (
        NAME,
        ("Parent", "string", 0, _f("spec.parent", "root")),
        AGE,
    ),
    # KServe's additionalPrinterColumns (traffic: the predictor's, latest and previous).
    ("serving.kserve.io", "InferenceService"): (
        NAME,
        ("URL", "string", 0, _f("status.url", "")),
        ("Ready", "string", 0, _condition("Ready")),
        ("Prev", "integer", 0, _traffic("prev", "percent")),
        ("Latest", "integer", 0, _traffic("latest", "percent")),
        ("PrevRolledoutRevision", "string", 0, _traffic("prev", "revisionName")),
        ("LatestReadyRevision", "string", 0, _traffic("latest", "revisionName")),
        AGE,
    ),
}


def columns(kind: Kind) -> Sequence[Column]:
    """The columns of ``kind`` (Name, Age for kinds without printer columns of their own)."""
    return _COLUMNS.get((kind.group, kind.kind), (NAME, AGE))
