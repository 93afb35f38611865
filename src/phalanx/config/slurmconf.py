"""Build a ``Cluster`` from Slurm's slurm.conf, with its topology.conf and gres.conf.

What is read (everything else in slurm.conf is read past; nothing here does I/O):

* ``ClusterName`` -> ``Cluster.name``.
* ``NodeName=HOSTLIST``: ``CPUs`` (or ``Procs``; else Boards x Sockets[PerBoard] x
  CoresPerSocket x ThreadsPerCore, each default 1), ``RealMemory`` (MB, default 1), ``Gres``
  (``gpu[:type][:count]``; see ``slurmconf_gres``), ``Feature``/``Features``. ``NodeName=DEFAULT``
  sets defaults for the lines after it. Other documented node keys (Weight, State, Port, ...)
  are read past; an unknown key is an error, as in Slurm.
* ``PartitionName=NAME``: ``Nodes`` (hostlists, ``NodeSet`` names or ``ALL``; absent: no node),
  ``Default``, ``MaxTime``/``DefaultTime`` (plain number = minutes), ``PriorityTier``,
  ``PriorityJobFactor`` (``Priority`` sets both), ``PreemptMode``, ``GraceTime`` (plain number
  = seconds). ``PartitionName=DEFAULT`` sets defaults. No partition at all: ``gpu``, ALL,
  default, as for a YAML definition.
* ``PreemptMode`` (global) is the partitions' default. ``PreemptType`` absent or
  ``preempt/none`` turns preemption off for every partition, as in Slurm. Of the modes, OFF,
  CANCEL and REQUEUE are kept; GANG and WITHIN are read past; SUSPEND is an error.
* ``TopologyPlugin`` other than tree/block (or absent) makes topology.conf be ignored
  (``topology/flat``, ``topology/none``, ...); see ``slurmconf_topology`` for that file.
* ``HealthCheckProgram`` and ``HealthCheckInterval`` -> ``Cluster.health`` (the agents run
  the program; ``HealthCheckNodeState`` is read past: every node is checked).
* ``EnforcePartLimits`` ALL, ANY or YES (default NO) -> ``Cluster.enforce_part_limits``;
  ``AccountingStorageEnforce`` with ``qos`` or ``all`` -> ``Cluster.enforce_qos``.
* gres.conf gives a node's GPU model when its ``Gres`` has no type, and its GPU count when
  ``Gres`` has none (``Gres=gpu``); two explicit counts that differ are an error.

Accounts and QOS live in Slurm's database, not in slurm.conf: the cluster gets account ``root``
and QOS ``normal``, as a YAML definition without them. Node indexes follow the file order.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass

from phalanx.config.slurmconf_gres import GpuSpec, gres_conf_gpus, parse_gres
from phalanx.config.slurmconf_lines import ConfLine, ConfValue, IncludeReader, conf_lines
from phalanx.config.slurmconf_topology import topology_from_lines
from phalanx.config.yamlfield import MAX_INT
from phalanx.domain.cluster import Account, Cluster, Node, Partition, PreemptMode, Qos
from phalanx.domain.health import HealthCheck
from phalanx.domain.hostlist import expand
from phalanx.domain.time import MINUTE, SECOND, Duration, parse_duration
from phalanx.errors import ConfigError, InputError

__all__ = ["cluster_from_slurm_conf_text"]

_NODE_KEYS = frozenset(
    [
        "nodename",
        "nodehostname",
        "nodeaddr",
        "bcastaddr",
        "boards",
        "corespeccount",
        "corespersocket",
        "cpubind",
        "cpus",
        "cpuspeclist",
        "feature",
        "features",
        "gres",
        "memspeclimit",
        "parameters",
        "port",
        "procs",
        "realmemory",
        "reason",
        "restrictedcorespergpu",
        "sockets",
        "socketsperboard",
        "state",
        "threadspercore",
        "tmpdisk",
        "topology",
        "tresweights",
        "weight",
    ]
)
_PARTITION_KEYS = frozenset(
    [
        "partitionname",
        "allocnodes",
        "allowaccounts",
        "allowgroups",
        "allowqos",
        "alternate",
        "cpubind",
        "default",
        "defaulttime",
        "defcpupergpu",
        "defmempercpu",
        "defmempergpu",
        "defmempernode",
        "denyaccounts",
        "denyqos",
        "disablerootjobs",
        "exclusivetopo",
        "exclusiveuser",
        "gracetime",
        "hidden",
        "lln",
        "maxcpuspernode",
        "maxcpuspersocket",
        "maxmempercpu",
        "maxmempernode",
        "maxnodes",
        "maxtime",
        "minnodes",
        "nodes",
        "oversubscribe",
        "overtimelimit",
        "powerdownonidle",
        "preemptmode",
        "priority",
        "priorityjobfactor",
        "prioritytier",
        "qos",
        "reqresv",
        "resumetimeout",
        "rootonly",
        "selecttypeparameters",
        "shared",
        "state",
        "suspendtime",
        "suspendtimeout",
        "tresbillingweights",
        "topology",
    ]
)
_NO_TOPOLOGY = ("topology/flat", "topology/none", "topology/default", "topology/3d_torus")


def cluster_from_slurm_conf_text(
    slurm_conf: str,
    topology: str | None,
    gres: str | None,
    source: str,
    *,
    include: IncludeReader | None = None,
    topology_source: str | None = None,
    gres_source: str | None = None,
) -> Cluster:
    """The cluster described by the text of slurm.conf (``source`` names it in errors) and of
    its topology.conf and gres.conf (None: absent). ``include`` reads ``Include`` files; the
    sibling sources default to ``topology.conf``/``gres.conf`` next to ``source``.

    Raises ``ConfigError`` naming the file, the line and the key of anything unusable.
    """
    here = posixpath.dirname(source)
    lines = conf_lines(slurm_conf, source, include)
    globals_: dict[str, ConfValue] = {}
    node_lines: list[ConfLine] = []
    partition_lines: list[ConfLine] = []
    nodesets: dict[str, ConfLine] = {}
    for line in lines:
        if line.kind == "nodename":
            node_lines.append(line)
        elif line.kind == "partitionname":
            partition_lines.append(line)
        elif line.kind == "nodeset":
            nodesets[line.head.text] = line
        elif line.kind not in ("downnodes", "frontendname", "slurmctldhost"):
            globals_.update(line.pairs)  # a later value wins, as in Slurm
    entries = _nodes(node_lines)
    if not entries:
        raise ConfigError("no NodeName= line: the cluster has no node", source=source)
    names = [e.name for e in entries]
    gres_lines = []
    if gres is not None:
        gres_lines = conf_lines(gres, gres_source or posixpath.join(here, "gres.conf"), include)
    gpus = _gpus(entries, gres_lines)
    plugin = globals_.get("topologyplugin")
    topo_lines = []
    if topology is not None and (plugin is None or plugin.text.lower() not in _NO_TOPOLOGY):
        topo_src = topology_source or posixpath.join(here, "topology.conf")
        topo_lines = conf_lines(topology, topo_src)
    leaves, spines, blocks = topology_from_lines(topo_lines, names)
    leaf_of = {n: leaf.index for leaf in leaves for n in leaf.children}
    nodes = tuple(
        Node(
            index=i,
            name=e.name,
            gpus=gpus[i][0],
            gpu_model=gpus[i][1],
            cpus=e.cpus,
            memory_mb=e.memory_mb,
            leaf=leaf_of[i],
            features=e.features,
            block=blocks.get(i),
        )
        for i, e in enumerate(entries)
    )
    members = _Members({n: i for i, n in enumerate(names)}, nodesets)
    cluster_name = globals_.get("clustername")
    return Cluster(
        nodes=nodes,
        leaves=leaves,
        spines=spines,
        partitions=_partitions(partition_lines, members, _default_preempt(globals_)),
        accounts={"root": Account("root", None)},
        qos={"normal": Qos("normal")},
        name=cluster_name.text if cluster_name is not None else "cluster",
        enforce_part_limits=_enforce_part_limits(globals_.get("enforcepartlimits")),
        enforce_qos=_enforce_qos(globals_.get("accountingstorageenforce")),
        health=_health(globals_),
    )


def _health(globals_: dict[str, ConfValue]) -> HealthCheck:
    """``HealthCheckProgram`` and ``HealthCheckInterval`` (seconds; 0, the default, runs no
    program, as in Slurm)."""
    program = globals_.get("healthcheckprogram")
    interval = globals_.get("healthcheckinterval")
    return HealthCheck(
        program=program.text if program is not None else None,
        interval_s=float(_int(interval)) if interval is not None else 0.0,
    )


def _int(where: ConfValue, minimum: int = 0, maximum: int = MAX_INT) -> int:
    try:
        value = int(where.text)
    except ValueError:
        raise where.error(f"expected an integer, got {where.text!r}") from None
    if value < minimum:
        raise where.error(f"must be at least {minimum}, got {value}")
    if value > maximum:  # as the cluster YAML's fields (yamlfield.MAX_INT)
        raise where.error(f"must be at most {maximum}, got {value}")
    return value


def _expand(where: ConfValue) -> list[str]:
    try:
        return expand(where.text)
    except ConfigError as exc:
        raise where.error(exc.message) from None


@dataclass(frozen=True, slots=True)
class _NodeEntry:
    name: str
    gpus: GpuSpec
    cpus: int
    memory_mb: int
    features: frozenset[str]


def _nodes(lines: Iterable[ConfLine]) -> list[_NodeEntry]:
    """Node entries in file order."""
    defaults: dict[str, ConfValue] = {}
    seen: dict[str, ConfValue] = {}
    out: list[_NodeEntry] = []
    for line in lines:
        for key, value in line.pairs.items():
            if key not in _NODE_KEYS:
                raise value.error(f"unknown NodeName key {value.key!r}")
        if line.head.text.upper() == "DEFAULT":
            defaults.update({k: v for k, v in line.pairs.items() if k != "nodename"})
            continue
        spec = {**defaults, **line.pairs}
        gpus = parse_gres(spec["gres"]) if "gres" in spec else GpuSpec(0, None)
        cpus = _cpus(spec)
        memory_mb = _int(spec["realmemory"], 1, 2**50) if "realmemory" in spec else 1
        features_value = spec.get("features") or spec.get("feature")
        features = frozenset(
            f.strip() for f in (features_value.text if features_value else "").split(",")
        ) - {""}
        for name in _expand(line.head):
            if name in seen:
                raise line.head.error(f"node {name!r} is defined twice (line {seen[name].line})")
            seen[name] = line.head
            out.append(_NodeEntry(name, gpus, cpus, memory_mb, features))
    return out


def _cpus(spec: dict[str, ConfValue]) -> int:
    given = spec.get("cpus") or spec.get("procs")
    if given is not None:
        return _int(given, 1)
    cpus = 1
    sockets = "socketsperboard" if "socketsperboard" in spec else "sockets"
    for key in ("boards", sockets, "corespersocket", "threadspercore"):
        cpus *= _int(spec[key], 1) if key in spec else 1
        if cpus > MAX_INT:  # each factor may pass alone and their product not
            raise spec[key].error(f"the node's CPUs come to over {MAX_INT}")
    return cpus


def _gpus(entries: list[_NodeEntry], gres_lines: list[ConfLine]) -> list[tuple[int, str]]:
    """(count, model) of each node: slurm.conf ``Gres``, completed by gres.conf."""
    per_node = gres_conf_gpus(gres_lines, [e.name for e in entries])
    out = []
    for e in entries:
        count, model = e.gpus.count, e.gpus.model or ""
        found = per_node.get(e.name)
        if found is not None and found.where is not None and count > 0:
            if found.count is not None and not e.gpus.written:
                count = found.count
            elif found.count is not None and found.count != count:
                raise found.where.error(
                    f"node {e.name!r} has {found.count} GPU(s) here and {count} in slurm.conf"
                )
            if not model and len(found.models) > 1:
                kinds = ", ".join(sorted(found.models))
                raise found.where.error(f"node {e.name!r} has GPUs of several types ({kinds})")
            if not model and found.models:
                model = next(iter(found.models))
        out.append((count, model or ("gpu" if count else "")))
    return out


class _Members:
    """Resolves a partition's ``Nodes=``: hostlists, ``NodeSet`` names and ``ALL``."""

    def __init__(self, index: dict[str, int], nodesets: dict[str, ConfLine]) -> None:
        self.index = index
        self.nodesets = nodesets

    def of(self, where: ConfValue) -> tuple[int, ...]:
        if where.text.upper() == "ALL":
            return tuple(range(len(self.index)))
        out: set[int] = set()
        for name in _expand(where):
            if name.upper() == "ALL":
                out.update(range(len(self.index)))
            elif name in self.nodesets:
                out.update(self._nodeset(self.nodesets[name]))
            elif name in self.index:
                out.add(self.index[name])
            else:
                raise where.error(f"unknown node {name!r}")
        return tuple(sorted(out))

    def _nodeset(self, line: ConfLine) -> set[int]:
        for key, value in line.pairs.items():
            if key not in ("nodeset", "nodes", "feature"):
                raise value.error(f"unknown NodeSet key {value.key!r}")
        if "nodes" in line.pairs:
            return set(self.of(line.pairs["nodes"]))
        raise line.error("only NodeSet=NAME Nodes=HOSTLIST is supported", "NodeSet")


def _preempt_mode(where: ConfValue) -> PreemptMode:
    """OFF, CANCEL or REQUEUE; GANG and WITHIN alongside are read past."""
    modes = [m.strip().lower() for m in where.text.split(",") if m.strip()]
    kept = [m for m in modes if m not in ("gang", "within")]
    if "suspend" in kept:
        raise where.error("PreemptMode SUSPEND is not supported; use REQUEUE or CANCEL")
    if len(kept) > 1:
        raise where.error(f"more than one PreemptMode in {where.text!r}")
    if not kept:
        return PreemptMode.OFF
    try:
        return PreemptMode(kept[0])
    except ValueError:
        raise where.error(f"unknown PreemptMode {kept[0]!r}; expected OFF|CANCEL|REQUEUE") from None


def _default_preempt(globals_: dict[str, ConfValue]) -> PreemptMode | None:
    """The partitions' default mode; None when ``PreemptType`` turns preemption off."""
    kind = globals_.get("preempttype")
    if kind is None or kind.text.lower() == "preempt/none":
        return None
    mode = globals_.get("preemptmode")
    return _preempt_mode(mode) if mode is not None else PreemptMode.OFF


def _enforce_part_limits(where: ConfValue | None) -> bool:
    """ALL and ANY (YES) differ only for jobs that name several partitions: both refuse."""
    if where is None:
        return False
    value = where.text.upper()
    if value not in ("ALL", "ANY", "YES", "NO"):
        raise where.error(f"expected ALL, ANY or NO, got {where.text!r}")
    return value != "NO"


def _enforce_qos(where: ConfValue | None) -> bool:
    words = {w.strip().lower() for w in where.text.split(",")} if where is not None else set()
    return bool(words & {"qos", "all"})


def _duration(where: ConfValue, plain_unit: Duration) -> Duration | None:
    if where.text.isdecimal():
        return int(where.text) * plain_unit
    try:
        return parse_duration(where.text, field=where.key)
    except InputError as exc:
        raise where.error(exc.message) from None


def _bool(where: ConfValue) -> bool:
    value = where.text.upper()
    if value not in ("YES", "NO"):
        raise where.error(f"expected YES or NO, got {where.text!r}")
    return value == "YES"


def _partitions(
    lines: list[ConfLine], members: _Members, preempt: PreemptMode | None
) -> dict[str, Partition]:
    if not lines:
        return {"gpu": Partition("gpu", tuple(range(len(members.index))), default=True)}
    defaults: dict[str, ConfValue] = {}
    out: dict[str, Partition] = {}
    default_line: int | None = None
    for line in lines:
        for key, value in line.pairs.items():
            if key not in _PARTITION_KEYS:
                raise value.error(f"unknown PartitionName key {value.key!r}")
        if line.head.text.upper() == "DEFAULT":
            defaults.update({k: v for k, v in line.pairs.items() if k != "partitionname"})
            continue
        name = line.head.text
        if name in out:
            raise line.head.error(f"duplicate partition name {name!r}")
        spec = {**defaults, **line.pairs}
        default = _bool(spec["default"]) if "default" in spec else False
        if default and default_line is not None:
            raise spec["default"].error(
                f"more than one partition has Default=YES (line {default_line})"
            )
        if default:
            default_line = spec["default"].line
        default_time = _duration(spec["defaulttime"], MINUTE) if "defaulttime" in spec else None
        max_time = _duration(spec["maxtime"], MINUTE) if "maxtime" in spec else None
        if default_time is not None and max_time is not None and default_time > max_time:
            raise spec["defaulttime"].error("DefaultTime is longer than MaxTime")
        grace = _duration(spec["gracetime"], SECOND) if "gracetime" in spec else 0
        if grace is None:
            raise spec["gracetime"].error("GraceTime cannot be UNLIMITED")
        legacy = spec.get("priority")
        tier = spec.get("prioritytier") or legacy
        factor = spec.get("priorityjobfactor") or legacy
        mode = PreemptMode.OFF
        if preempt is not None:
            mode = _preempt_mode(spec["preemptmode"]) if "preemptmode" in spec else preempt
        out[name] = Partition(
            name=name,
            nodes=members.of(spec["nodes"]) if "nodes" in spec else (),
            default_time=default_time,
            max_time=max_time,
            priority_tier=_int(tier) if tier is not None else 1,
            priority_job_factor=_int(factor) if factor is not None else 1,
            preempt_mode=mode,
            grace_time=grace,
            default=default,
        )
    return out
