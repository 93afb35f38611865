"""Build a ``Cluster`` from a YAML definition, or from the ``--nodes/--gpus-per-node`` generator.

YAML format (every key but ``nodes`` is optional; see ``examples/cluster.yaml``)::

    name: demo
    enforce_part_limits: false    # Slurm's EnforcePartLimits: refuse a job over its partition
    enforce_qos: false            # Slurm's AccountingStorageEnforce=qos: refuse unknown QOS
    nodes:                        # at least one entry; node indexes follow this order
      - names: gpu[001-016]       # a hostlist: one entry may describe many identical nodes
        gpus: 8                   # required, >= 0
        gpu_model: H100           # required when gpus > 0
        cpus: 96                  # required, >= 1
        memory: 1024G             # required: K/M/G/T (MiB base: 1024G = 1048576 MB) or int MB
        features: [ib, nvlink]
        nvlink_block: null        # optional block index; or use topology.blocks
    topology:                     # absent: one leaf per 8 nodes in name order, under spine1
      leaves:                     # every node in exactly one leaf
        - {name: leaf1, nodes: "gpu[001-008]"}
      spines:                     # needs leaves; a leaf under no spine has parent None
        - {name: spine1, leaves: [leaf1]}
      blocks:                     # NVLink blocks; block index = position in this list
        - {nodes: "gpu[001-004]"}
    partitions:                   # absent: partition "gpu" with ALL nodes, default
      - name: gpu                 # required
        nodes: ALL                # hostlist or list of names; default ALL
        default: true             # at most one partition
        default_time: "1:00:00"   # Slurm time (plain number = minutes) or UNLIMITED
        max_time: 7-00:00:00
        priority_tier: 1
        priority_job_factor: 1
        preempt_mode: requeue     # off | requeue | cancel
        grace_time: "00:05:00"    # Slurm GraceTime: a plain number is SECONDS
        profile: phalanx
        cluster_queue: team-a     # its jobs that name no LocalQueue go to this ClusterQueue
    accounts:                     # "root" (parent None, shares 1) is added if absent
      - {name: research, parent: root, shares: 60, quota_gpus: 64}   # parent defaults to root
    qos:                          # "normal" (priority 0) is added if absent
      - {name: high, priority: 1000, preempt: [normal], preempt_mode: requeue,
         grace_time: 60, max_gpus_per_account: null, cluster_queue: null}  # as partitions'
                                  # (a QOS's ClusterQueue comes before its partition's)
    health_check:                 # what agents check (Slurm's HealthCheckProgram/Interval)
      program: /usr/sbin/nhc      # a non-zero exit or a "DRAIN reason" line drains the node
      interval: 300               # seconds between runs; 0 (default) runs no program
      fatal_xids: [48, 79]        # Xid errors that requeue the node's jobs at once
      gpus: true                  # NVML probes (Xid, ECC, PCIe link, throttling, GPU count)
      gpu_interval: 30            # seconds between GPU probes
    associations:                 # Slurm's association limits (config.associations)
      - {account: research, GrpTRES: "gres/gpu=16", MaxJobs: 4, MaxSubmitJobs: 10}
    queues:                       # Kueue/Volcano objects, as in a --queues file (config.queues)
      - {apiVersion: kueue.x-k8s.io/v1beta1, kind: ResourceFlavor, metadata: {name: h100}}

Times are read from the scalar's text, so unquoted ``1:00:00`` is not YAML 1.1's sexagesimal
3600. ``null`` means "absent". Every error is a ``ConfigError`` naming the source, the line and
the field path (``nodes[2].gpus``); unknown or duplicate keys, unknown node/leaf/account/QOS
names, a node in two leaves or none, and duplicate names are errors.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import yaml

from phalanx.config.associations import (
    QOS_LIMIT_KEYS,
    associations_from_yaml,
    qos_limits_from_yaml,
)
from phalanx.config.queues import queues_from_documents
from phalanx.config.yamlfield import MAX_INT, YamlField, compose_yaml, optional
from phalanx.domain.cluster import Account, Cluster, Node, Partition, PreemptMode, Qos, Switch
from phalanx.domain.health import DEFAULT_FATAL_XIDS, HealthCheck
from phalanx.domain.hostlist import MAX_HOSTS, compress, expand
from phalanx.domain.queues import Queues
from phalanx.domain.time import MINUTE, SECOND, Duration
from phalanx.errors import ConfigError

__all__ = [
    "DEFAULT_NODES_PER_LEAF",
    "check_queue_routes",
    "cluster_from_yaml",
    "default_tree",
    "regular_cluster",
]

DEFAULT_NODES_PER_LEAF = 8
"""Leaf size when a YAML file gives no ``topology``: a common 8-node rail-optimised leaf."""

_TOP_KEYS = (
    "name",
    "enforce_part_limits",
    "enforce_qos",
    "nodes",
    "topology",
    "partitions",
    "accounts",
    "qos",
    "health_check",
    "queues",
    "associations",
)
_MEMORY = re.compile(r"^(\d+)\s*([KMGT]?)$", re.IGNORECASE)
_UNIT_MB = {"": 1, "M": 1, "G": 1024, "T": 1024 * 1024}
_MAX_MEMORY_MB = 2**50  # a zebibyte: sums over a million nodes stay inside int64


def _names(field: YamlField) -> list[str]:
    """A hostlist string (``gpu[001-004]``) or a list of them, expanded; never empty."""
    items = field.sequence() if isinstance(field.node, yaml.SequenceNode) else [field]
    names: list[str] = []
    for item in items:
        try:
            names.extend(expand(item.as_str()))
        except ConfigError as exc:
            raise item.error(exc.message) from None
    if not names:
        raise field.error("expected at least one name")
    return names


def _minutes(field: YamlField) -> Duration | None:
    return field.as_duration(MINUTE)


def _grace(field: YamlField) -> Duration:
    value = field.as_duration(SECOND)
    if value is None:
        raise field.error("grace time cannot be UNLIMITED")
    return value


def _preempt_mode(field: YamlField) -> PreemptMode:
    value = field.as_str().lower()
    try:
        return PreemptMode(value)
    except ValueError:
        choices = "|".join(m.value for m in PreemptMode)
        raise field.error(f"unknown preempt_mode {value!r}; expected {choices}") from None


@dataclass(frozen=True, slots=True)
class _NodeEntry:
    name: str
    gpus: int
    gpu_model: str
    cpus: int
    memory_mb: int
    features: frozenset[str]
    block: int | None
    where: YamlField


def cluster_from_yaml(text: str, source: str = "<cluster>") -> Cluster:
    """Parse a YAML cluster definition (format in the module docstring).

    Raises ``ConfigError`` naming ``source``, the line and the field for anything unusable.
    """
    top = compose_yaml(text, source).mapping(_TOP_KEYS, required=("nodes",))
    entries = _parse_nodes(top["nodes"])
    index = {e.name: i for i, e in enumerate(entries)}
    leaves, spines, blocks = _parse_topology(top.get("topology"), entries, index)
    leaf_of = {n: leaf.index for leaf in leaves for n in leaf.children}
    for i, e in enumerate(entries):
        if e.block is not None and i in blocks and blocks[i] != e.block:
            raise e.where.error(
                f"node {e.name!r} has nvlink_block {e.block} and is in block "
                f"{blocks[i]} of topology.blocks"
            )
    nodes = tuple(
        Node(
            index=i,
            name=e.name,
            gpus=e.gpus,
            gpu_model=e.gpu_model,
            cpus=e.cpus,
            memory_mb=e.memory_mb,
            leaf=leaf_of[i],
            features=e.features,
            block=e.block if e.block is not None else blocks.get(i),
        )
        for i, e in enumerate(entries)
    )
    accounts = _parse_accounts(top.get("accounts"))
    return Cluster(
        nodes=nodes,
        leaves=leaves,
        spines=spines,
        partitions=_parse_partitions(top.get("partitions"), index),
        accounts=accounts,
        associations=associations_from_yaml(top.get("associations"), accounts),
        qos=_parse_qos(top.get("qos")),
        name=top["name"].as_str() if "name" in top else "cluster",
        enforce_part_limits=optional(top, "enforce_part_limits", YamlField.as_bool, False),
        enforce_qos=optional(top, "enforce_qos", YamlField.as_bool, False),
        health=_parse_health(top.get("health_check")),
        queues=queues_from_documents(top["queues"].sequence()) if "queues" in top else Queues(),
    )


def check_queue_routes(cluster: Cluster, source: str) -> None:
    """Every partition and QOS that names a ClusterQueue names one the cluster's queues have
    (its own ``queues:`` or ``--queues``, whichever it runs with), else a ``ConfigError``."""
    for where, name in cluster.queue_routes():
        known = ", ".join(sorted(cluster.queues.cluster_queues)) or "none"
        raise ConfigError(
            f"no ClusterQueue named {name!r} (ClusterQueues: {known})", source=source, field=where
        )


def _parse_health(field: YamlField | None) -> HealthCheck:
    if field is None:
        return HealthCheck()
    spec = field.mapping(("program", "interval", "fatal_xids", "gpus", "gpu_interval"))
    program = spec["program"].as_str() if "program" in spec else None
    interval = optional(spec, "interval", YamlField.as_int, 0)
    if program is None and interval:
        raise spec["interval"].error("an interval needs a program to run")
    xids = DEFAULT_FATAL_XIDS
    if "fatal_xids" in spec:
        xids = frozenset(item.as_int(minimum=1) for item in spec["fatal_xids"].sequence())
    return HealthCheck(
        program=program,
        interval_s=float(interval),
        fatal_xids=xids,
        gpus=optional(spec, "gpus", YamlField.as_bool, True),
        gpu_interval_s=float(optional(spec, "gpu_interval", lambda f: f.as_int(minimum=1), 30)),
    )


def _parse_nodes(field: YamlField) -> list[_NodeEntry]:
    entries: list[_NodeEntry] = []
    seen: set[str] = set()
    for item in field.sequence():
        spec = item.mapping(
            ("names", "gpus", "gpu_model", "cpus", "memory", "features", "nvlink_block"),
            required=("names", "gpus", "cpus", "memory"),
        )
        gpus = spec["gpus"].as_int()
        if gpus > 0 and "gpu_model" not in spec:
            raise item.error("missing required key 'gpu_model' (the node has GPUs)")
        model = spec["gpu_model"].as_str() if "gpu_model" in spec else ""
        cpus = spec["cpus"].as_int(minimum=1)
        memory_mb = _memory_mb(spec["memory"])
        features = frozenset(spec["features"].as_str_list()) if "features" in spec else frozenset()
        block = spec["nvlink_block"].as_int() if "nvlink_block" in spec else None
        for name in _names(spec["names"]):
            if name in seen:
                raise spec["names"].error(f"duplicate node name {name!r}")
            seen.add(name)
            entries.append(_NodeEntry(name, gpus, model, cpus, memory_mb, features, block, item))
    if not entries:
        raise field.error("at least one node is required")
    return entries


def _memory_mb(field: YamlField) -> int:
    m = _MEMORY.match(field.text())
    if m is None:
        raise field.error(f"invalid memory {field.text()!r}; expected e.g. 512G, 2T or MB as int")
    amount, unit = int(m.group(1)), m.group(2).upper()
    mb = -(-amount // 1024) if unit == "K" else amount * _UNIT_MB[unit]  # K rounds up to 1 MB
    if not 1 <= mb <= _MAX_MEMORY_MB:
        raise field.error("memory must be from 1M to 2^50M")
    return mb


def _node_indexes(field: YamlField, index: dict[str, int]) -> list[int]:
    out = []
    for name in _names(field):
        if name not in index:
            raise field.error(f"unknown node {name!r}")
        out.append(index[name])
    return out


def _natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """``gpu9`` before ``gpu10``: digit runs compare as numbers."""
    return tuple((0, int(p)) if p.isdecimal() else (1, p) for p in re.split(r"(\d+)", name) if p)


def _auto_tree(
    order: Sequence[int], per_leaf: int, leaves_per_spine: int | None
) -> tuple[tuple[Switch, ...], tuple[Switch, ...]]:
    """Leaves ``leaf01..`` of ``per_leaf`` nodes in ``order``; spines only if over one leaf."""
    groups = [tuple(sorted(order[i : i + per_leaf])) for i in range(0, len(order), per_leaf)]
    width = max(2, len(str(len(groups))))
    per_spine = leaves_per_spine or len(groups)
    n_spines = 0 if len(groups) <= 1 else -(-len(groups) // per_spine)
    leaves = tuple(
        Switch(i, f"leaf{i + 1:0{width}d}", g, i // per_spine if n_spines else None)
        for i, g in enumerate(groups)
    )
    spines = tuple(
        Switch(s, f"spine{s + 1}", _span(s, per_spine, len(groups))) for s in range(n_spines)
    )
    return leaves, spines


def default_tree(names: Sequence[str]) -> tuple[tuple[Switch, ...], tuple[Switch, ...]]:
    """The tree used when a definition gives no topology: leaves of ``DEFAULT_NODES_PER_LEAF``
    nodes in natural name order (``gpu9`` before ``gpu10``), under ``spine1`` when over one leaf.
    ``names[i]`` is the node of index ``i``; children are node indexes."""
    order = sorted(range(len(names)), key=lambda i: _natural_key(names[i]))
    return _auto_tree(order, DEFAULT_NODES_PER_LEAF, None)


def _span(k: int, size: int, total: int) -> tuple[int, ...]:
    """The ``k``-th chunk of ``size`` out of ``range(total)``."""
    return tuple(range(k * size, min(total, (k + 1) * size)))


def _unique_name(item: YamlField, spec: dict[str, YamlField], seen: set[str], what: str) -> str:
    name = spec["name"].as_str()
    if name in seen:
        raise spec["name"].error(f"duplicate {what} name {name!r}")
    seen.add(name)
    return name


def _parse_topology(
    field: YamlField | None, entries: list[_NodeEntry], index: dict[str, int]
) -> tuple[tuple[Switch, ...], tuple[Switch, ...], dict[int, int]]:
    """Leaves, spines and the block of each node listed under ``topology.blocks``."""
    spec = field.mapping(("leaves", "spines", "blocks")) if field is not None else {}
    blocks: dict[int, int] = {}
    for b, item in enumerate(spec["blocks"].sequence() if "blocks" in spec else []):
        block_spec = item.mapping(("name", "nodes"), required=("nodes",))
        for n in _node_indexes(block_spec["nodes"], index):
            if n in blocks:
                raise block_spec["nodes"].error(f"node {entries[n].name!r} is in two blocks")
            blocks[n] = b
    if "leaves" not in spec:
        if "spines" in spec:
            raise spec["spines"].error("spines need topology.leaves to name the leaves")
        leaves, spines = default_tree([e.name for e in entries])
        return leaves, spines, blocks

    leaves, spines = _explicit_spines(
        spec.get("spines"), _explicit_leaves(spec["leaves"], entries, index)
    )
    return leaves, spines, blocks


def _explicit_leaves(
    field: YamlField, entries: list[_NodeEntry], index: dict[str, int]
) -> tuple[Switch, ...]:
    """``topology.leaves``, each with no parent yet; every node in exactly one leaf."""
    leaves: list[Switch] = []
    owner: dict[int, str] = {}
    seen: set[str] = set()
    for i, item in enumerate(field.sequence()):
        leaf_spec = item.mapping(("name", "nodes"), required=("name", "nodes"))
        name = _unique_name(item, leaf_spec, seen, "leaf")
        members = _node_indexes(leaf_spec["nodes"], index)
        for n in members:
            if n in owner:
                raise leaf_spec["nodes"].error(
                    f"node {entries[n].name!r} is in leaf {owner[n]!r} and leaf {name!r}"
                )
            owner[n] = name
        leaves.append(Switch(i, name, tuple(sorted(set(members)))))
    orphans = [e.name for i, e in enumerate(entries) if i not in owner]
    if orphans:
        raise field.error(f"nodes in no leaf: {compress(orphans)}")
    return tuple(leaves)


def _explicit_spines(
    field: YamlField | None, leaves: tuple[Switch, ...]
) -> tuple[tuple[Switch, ...], tuple[Switch, ...]]:
    """``topology.spines``, and the leaves again with their ``parent`` set."""
    leaf_index = {leaf.name: leaf.index for leaf in leaves}
    parent: dict[int, int] = {}
    spines: list[Switch] = []
    seen: set[str] = set()
    for s, item in enumerate(field.sequence() if field is not None else []):
        spine_spec = item.mapping(("name", "leaves"), required=("name", "leaves"))
        name = _unique_name(item, spine_spec, seen, "spine")
        for leaf in _names(spine_spec["leaves"]):
            if leaf not in leaf_index:
                raise spine_spec["leaves"].error(f"unknown leaf {leaf!r}")
            if leaf_index[leaf] in parent:
                raise spine_spec["leaves"].error(f"leaf {leaf!r} is under two spines")
            parent[leaf_index[leaf]] = s
        children = tuple(sorted(i for i, p in parent.items() if p == s))
        spines.append(Switch(s, name, children))
    with_parents = tuple(
        Switch(leaf.index, leaf.name, leaf.children, parent.get(leaf.index)) for leaf in leaves
    )
    return with_parents, tuple(spines)


def _is_all(field: YamlField) -> bool:
    return isinstance(field.node, yaml.ScalarNode) and field.text().upper() == "ALL"


def _parse_partitions(field: YamlField | None, index: dict[str, int]) -> dict[str, Partition]:
    if field is None:
        return {"gpu": Partition("gpu", tuple(range(len(index))), default=True)}
    out: dict[str, Partition] = {}
    has_default = False
    for item in field.sequence():
        spec = item.mapping(
            (
                "name",
                "nodes",
                "default",
                "default_time",
                "max_time",
                "priority_tier",
                "priority_job_factor",
                "preempt_mode",
                "grace_time",
                "profile",
                "cluster_queue",
            ),
            required=("name",),
        )
        name = _unique_name(item, spec, set(out), "partition")
        nodes = tuple(range(len(index)))
        if "nodes" in spec and not _is_all(spec["nodes"]):
            nodes = tuple(sorted(set(_node_indexes(spec["nodes"], index))))
        default = optional(spec, "default", YamlField.as_bool, False)
        if default and has_default:
            raise spec["default"].error("more than one partition has default: true")
        has_default = has_default or default
        default_time = optional(spec, "default_time", _minutes, None)
        max_time = optional(spec, "max_time", _minutes, None)
        if default_time is not None and max_time is not None and default_time > max_time:
            raise spec["default_time"].error("default_time is longer than max_time")
        out[name] = Partition(
            name=name,
            nodes=nodes,
            default_time=default_time,
            max_time=max_time,
            priority_tier=optional(spec, "priority_tier", YamlField.as_int, 1),
            priority_job_factor=optional(spec, "priority_job_factor", YamlField.as_int, 1),
            preempt_mode=optional(spec, "preempt_mode", _preempt_mode, PreemptMode.OFF),
            grace_time=optional(spec, "grace_time", _grace, 0),
            profile=optional(spec, "profile", YamlField.as_str, "phalanx"),
            default=default,
            cluster_queue=optional(spec, "cluster_queue", YamlField.as_str, None),
        )
    if not out:
        raise field.error("at least one partition is required")
    return out


def _parse_accounts(field: YamlField | None) -> dict[str, Account]:
    parsed: dict[str, tuple[Account, YamlField]] = {}
    for item in field.sequence() if field is not None else []:
        spec = item.mapping(("name", "parent", "shares", "quota_gpus"), required=("name",))
        name = _unique_name(item, spec, set(parsed), "account")
        parent: str | None = spec["parent"].as_str() if "parent" in spec else "root"
        if name == "root":
            if "parent" in spec:
                raise spec["parent"].error("account 'root' cannot have a parent")
            parent = None
        parsed[name] = (
            Account(
                name,
                parent,
                shares=optional(spec, "shares", YamlField.as_int, 1),
                quota_gpus=optional(spec, "quota_gpus", YamlField.as_int, None),
            ),
            spec.get("parent", item),
        )
    accounts = {"root": Account("root", None)}
    accounts.update({name: acct for name, (acct, _) in parsed.items()})
    for name, (acct, where) in parsed.items():
        if acct.parent is not None and acct.parent not in accounts:
            raise where.error(f"account {name!r} has unknown parent {acct.parent!r}")
    for name, (_, where) in parsed.items():
        # Every parent exists, so a walk that does not reach root within len() steps loops.
        current: str | None = name
        for _step in range(len(accounts) + 1):
            current = accounts[current].parent if current is not None else None
        if current is not None:
            raise where.error(f"account {name!r} is in a parent cycle")
    return accounts


def _parse_qos(field: YamlField | None) -> dict[str, Qos]:
    parsed: dict[str, Qos] = {}
    preempt_fields: dict[str, YamlField] = {}
    for item in field.sequence() if field is not None else []:
        spec = item.mapping(
            (
                "name",
                "priority",
                "preempt",
                "preempt_mode",
                "grace_time",
                "max_gpus_per_account",
                "cluster_queue",
                *QOS_LIMIT_KEYS,
            ),
            required=("name",),
        )
        name = _unique_name(item, spec, set(parsed), "qos")
        preempt = frozenset(optional(spec, "preempt", YamlField.as_str_list, list[str]()))
        if "preempt" in spec:
            preempt_fields[name] = spec["preempt"]
        parsed[name] = Qos(
            name,
            priority=optional(spec, "priority", YamlField.as_int, 0),
            preempt=preempt,
            preempt_mode=optional(spec, "preempt_mode", _preempt_mode, PreemptMode.REQUEUE),
            grace_time=optional(spec, "grace_time", _grace, 0),
            max_gpus_per_account=optional(spec, "max_gpus_per_account", YamlField.as_int, None),
            limits=qos_limits_from_yaml(spec),
            cluster_queue=optional(spec, "cluster_queue", YamlField.as_str, None),
        )
    qos = {"normal": Qos("normal")} if "normal" not in parsed else {}
    qos.update(parsed)
    for name, where in preempt_fields.items():
        for target in sorted(qos[name].preempt):
            if target not in qos:
                raise where.error(f"qos {name!r} preempts unknown qos {target!r}")
            if target == name:
                raise where.error(f"qos {name!r} cannot preempt itself")
    return qos


def _check_positive(value: int, flag: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_INT:
        raise ConfigError(f"must be an integer from 1 to {MAX_INT}, got {value!r}", field=flag)


def regular_cluster(
    nodes: int,
    gpus_per_node: int,
    nodes_per_switch: int,
    *,
    leaves_per_spine: int | None = None,
    gpu_model: str = "A100",
    cpus_per_node: int = 64,
    memory_mb: int = 512 * 1024,
    prefix: str = "gpu",
) -> Cluster:
    """A uniform cluster: ``nodes`` names ``gpu001..`` (width max(3, digits)), ``nodes_per_switch``
    per leaf ``leaf01..``, leaves under ``spine1..`` (``leaves_per_spine`` each, default all) when
    there is more than one leaf; partition ``gpu`` (default, all nodes); account ``root``; QOS
    ``normal`` (priority 0) and ``high`` (priority 1000, may preempt ``normal``).

    Raises ``ConfigError`` whose field is the command-line flag (``--nodes``) of a bad argument.
    """
    _check_positive(nodes, "--nodes")
    if nodes > MAX_HOSTS:  # the bound of a YAML hostlist; 10^11 nodes were built until killed
        raise ConfigError(f"at most {MAX_HOSTS:,} nodes, got {nodes:,}", field="--nodes")
    _check_positive(gpus_per_node, "--gpus-per-node")
    _check_positive(nodes_per_switch, "--nodes-per-switch")
    if leaves_per_spine is not None:
        _check_positive(leaves_per_spine, "--leaves-per-spine")
    _check_positive(cpus_per_node, "--cpus-per-node")
    _check_positive(memory_mb, "--memory-mb")
    if not gpu_model.strip():
        raise ConfigError("must not be empty", field="--gpu-model")
    if not prefix or re.search(r"[\[\],\s]|\d$", prefix):
        raise ConfigError(f"invalid node name prefix {prefix!r}", field="--prefix")
    leaves, spines = _auto_tree(range(nodes), nodes_per_switch, leaves_per_spine)
    width = max(3, len(str(nodes)))
    node_list = tuple(
        Node(
            index=i,
            name=f"{prefix}{i + 1:0{width}d}",
            gpus=gpus_per_node,
            gpu_model=gpu_model,
            cpus=cpus_per_node,
            memory_mb=memory_mb,
            leaf=i // nodes_per_switch,
        )
        for i in range(nodes)
    )
    return Cluster(
        nodes=node_list,
        leaves=leaves,
        spines=spines,
        partitions={"gpu": Partition("gpu", tuple(range(nodes)), default=True)},
        accounts={"root": Account("root", None)},
        qos={
            "normal": Qos("normal", priority=0),
            "high": Qos("high", priority=1000, preempt=frozenset({"normal"})),
        },
        name="cluster",
    )
