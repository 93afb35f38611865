"""``sinfo``: partitions and nodes, printed as Slurm 22.05 prints them.

Reads ``GET /v1/nodes`` and ``GET /v1/partitions``. Without ``-N`` a row is a partition's
nodes that print alike (same state and attributes), their names compressed into a hostlist
and their counts summed; with ``-N`` a row is one node in one partition. Groups come in
partition order, then by state (mixed, allocated, idle, down), then by first node. Exit
status: 0, or 1 for a bad option or no controller.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from phalanx.client.wirecall import ApiError, ControllerUnreachable, WireCaller
from phalanx.slurm.commandline import (
    CommandLineError,
    Usage,
    clusters_reached,
    node_list,
    parse_args,
    unreachable_clusters,
)
from phalanx.slurm.format import (
    Spec,
    clock,
    compress,
    instant,
    parse_long,
    parse_percent,
    render,
    user_ids,
)
from phalanx.slurm.querytables import SINFO

__all__ = ["main"]

Node = dict[str, Any]
Partition = dict[str, Any]

DEFAULT_FORMAT = "%{P}P %.5a %.10l %.6D %.6t %N"
LONG_FORMAT = "%{P}P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N"
SUMMARY_FORMAT = "%{P}P %.5a %.10l %.16F %N"
NODE_FORMAT = "%{N}N %.6D %{P}P %6t"
NODE_LONG_FORMAT = "%{N}N %.6D %.{P}P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E"

HEADERS = {
    "a": "AVAIL",
    "C": "CPUS(A/I/O/T)",
    "c": "CPUS",
    "D": "NODES",
    "d": "TMP_DISK",
    "E": "REASON",
    "e": "FREE_MEM",
    "F": "NODES(A/I/O/T)",
    "f": "AVAIL_FEATURES",
    "G": "GRES",
    "g": "GROUPS",
    "h": "OVERSUBSCRIBE",
    "l": "TIMELIMIT",
    "m": "MEMORY",
    "N": "NODELIST",
    "n": "HOSTNAMES",
    "O": "CPU_LOAD",
    "P": "PARTITION",
    "R": "PARTITION",
    "r": "ROOT",
    "s": "JOB_SIZE",
    "T": "STATE",
    "t": "STATE",
    "U": "USER",
    "u": "USER",
    "H": "TIMESTAMP",
    "gresused": "GRES_USED",
    "w": "WEIGHT",
    "z": "S:C:T",
}
LONG_FIELDS = {
    "Available": "a",
    "CPUs": "c",
    "CPUsLoad": "O",
    "CPUsState": "C",
    "Disk": "d",
    "Features": "f",
    "FreeMem": "e",
    "Gres": "G",
    "GresUsed": "gresused",
    "Groups": "g",
    "Memory": "m",
    "NodeAIOT": "F",
    "NodeHost": "n",
    "NodeList": "N",
    "Nodes": "D",
    "OverSubscribe": "h",
    "Partition": "P",
    "PartitionName": "R",
    "Reason": "E",
    "Timestamp": "H",
    "User": "u",
    "UserLong": "U",
    "Root": "r",
    "Size": "s",
    "SocketCoreThread": "z",
    "StateCompact": "t",
    "StateLong": "T",
    "Time": "l",
    "Weight": "w",
}
# Summed over a group rather than part of what makes nodes alike.
AGGREGATE = frozenset("NDCFn")
SHORT_NODE_STATE = {
    "allocated": "alloc",
    "mixed": "mix",
    "idle": "idle",
    "down": "down",
    "drained": "drain",
    "draining": "drng",
}
# Slurm sorts rows by node state, highest first: a drain flag above any base state.
STATE_RANK = {"draining": 0, "drained": 1, "mixed": 2, "allocated": 3, "idle": 4, "down": 5}
REASONS_FORMAT = "%20E %9u %19H %N"
REASONS_LONG_FORMAT = "%20E %12U %19H %6t %N"


class _Options:
    def __init__(self) -> None:
        self.header = True
        self.long = False
        self.node = False
        self.summary = False
        self.format: str | None = None
        self.long_format: str | None = None
        self.partitions: set[str] | None = None
        self.nodes: set[str] | None = None
        self.states: set[str] | None = None
        self.responding = False
        self.dead = False
        self.reasons = False


def _clusters(_: _Options, value: str) -> None:
    if not clusters_reached(value):
        raise unreachable_clusters("sinfo", value)


def _usage(_: _Options, __: str) -> None:
    raise Usage("Usage: sinfo [OPTIONS]")


def _version(_: _Options, __: str) -> None:
    raise Usage("slurm 22.05.8 (phalanx)")


_HANDLERS: dict[str, Callable[[_Options, str], None]] = {
    "noheader": lambda o, _: setattr(o, "header", False),
    "long": lambda o, _: setattr(o, "long", True),
    "Node": lambda o, _: setattr(o, "node", True),
    "summarize": lambda o, _: setattr(o, "summary", True),
    "format": lambda o, v: setattr(o, "format", v),
    "Format": lambda o, v: setattr(o, "long_format", v),
    "partition": lambda o, v: setattr(o, "partitions", {p for p in v.split(",") if p}),
    "nodes": lambda o, v: setattr(o, "nodes", set(node_list("sinfo", "nodes", v))),
    "states": lambda o, v: setattr(o, "states", _states(v)),
    "responding": lambda o, _: setattr(o, "responding", True),
    "dead": lambda o, _: setattr(o, "dead", True),
    "list-reasons": lambda o, _: setattr(o, "reasons", True),
    "clusters": _clusters,
    "help": _usage,
    "usage": _usage,
    "version": _version,
}
"""What each implemented option of ``querytables.SINFO`` does to the options."""


def _parse(argv: list[str]) -> _Options:
    found, rest = parse_args(argv, SINFO)
    if rest:
        raise Usage(f"sinfo: error: Unrecognized option: {rest[0]}")
    opts = _Options()
    for name, value in found.pairs:
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(opts, value)
    return opts


def _states(value: str) -> set[str]:
    names = {"alloc": "allocated", "mix": "mixed", "allocated": "allocated", "mixed": "mixed"}
    names |= {"idle": "idle", "down": "down", "drained": "drained", "draining": "draining"}
    names |= {"drng": "draining"}
    out: set[str] = set()
    for item in value.split(","):
        key = item.strip().lower()
        if key == "drain":  # the drain flag: drained and draining nodes
            out |= {"drained", "draining"}
            continue
        name = names.get(key)
        if name is None:
            raise Usage(f"sinfo: error: Invalid node state specified: {item}")
        out.add(name)
    return out


# ------------------------------------------------------------------------------ fields
def _state(node: Node, short: bool) -> str:
    state = str(node["state"])
    text = SHORT_NODE_STATE.get(state, state) if short else state
    return text + ("*" if not node.get("agent", True) else "")


_OUT = ("down", "drained")


def _cpus_aiot(nodes: list[Node]) -> str:
    # Slurm counts a down or drained node's CPUs as "other"; a draining node's as in use.
    alloc = sum(int(n["cpus_alloc"]) for n in nodes if n["state"] not in _OUT)
    total = sum(int(n["cpus"]) for n in nodes)
    other = sum(int(n["cpus"]) for n in nodes if n["state"] in _OUT)
    return f"{alloc}/{total - alloc - other}/{other}/{total}"


def _nodes_aiot(nodes: list[Node]) -> str:
    alloc = sum(1 for n in nodes if n["state"] in ("allocated", "mixed", "draining"))
    idle = sum(1 for n in nodes if n["state"] == "idle")
    return f"{alloc}/{idle}/{len(nodes) - alloc - idle}/{len(nodes)}"


def _gres(node: Node) -> str:
    if not node["gpus"]:
        return "(null)"
    return f"gpu:{node['gpu_model']}:{node['gpus']}" if node["gpu_model"] else f"gpu:{node['gpus']}"


def _gres_used(node: Node) -> str:
    if not node["gpus"]:
        return "(null)"
    used = float(node["gpus_alloc"])
    count = int(used) if used == int(used) else used
    model = f"gpu:{node['gpu_model']}" if node["gpu_model"] else "gpu"
    # Which GPUs are taken is not on the wire: known only when none or all are.
    if used == 0:
        index = "N/A"
    elif used >= node["gpus"]:
        index = f"0-{node['gpus'] - 1}" if node["gpus"] > 1 else "0"
    else:
        index = "N/A"
    return f"{model}:{count}(IDX:{index})"


def _user_uid(node: Node) -> str:
    user = node.get("reason_user")
    if not user:
        return "Unknown"
    found = user_ids(str(user))
    return f"{user}({found[0]})" if found is not None else str(user)


def _limit(part: Partition) -> str:
    ms = part.get("max_time_ms")
    return "infinite" if ms is None else clock(int(ms) // 1000)


_NODE_VALUES: dict[str, Callable[[Node], str]] = {
    "c": lambda n: str(n["cpus"]),
    "d": lambda n: "0",
    "E": lambda n: str(n.get("reason") or "none"),
    "e": lambda n: str(n.get("free_mem_mb", "N/A")),
    "f": lambda n: ",".join(n.get("features") or ()) or "(null)",
    "G": _gres,
    "h": lambda n: "NO",
    "m": lambda n: str(n["memory_mb"]),
    "O": lambda n: "N/A",
    "T": lambda n: _state(n, False),
    "t": lambda n: _state(n, True),
    "gresused": _gres_used,
    "u": lambda n: str(n.get("reason_user") or "Unknown"),
    "U": _user_uid,
    "H": lambda n: instant(n.get("reason_time"), "Unknown"),
    "w": lambda n: "1",
    "z": lambda n: str(n.get("sockets_cores_threads") or f"1:{n['cpus']}:1"),
}


def value(key: str, part: Partition, nodes: list[Node]) -> str:
    """Field ``key`` (an ``-o`` letter) of a row: ``nodes`` of partition ``part``."""
    if key == "P":
        return str(part["name"]) + ("*" if part["default"] else "")
    if key == "R":
        return str(part["name"])
    if key == "a":
        return "up"
    if key == "l":
        return _limit(part)
    if key == "s":
        return "1-infinite"
    if key == "r":
        return "no"
    if key == "g":
        return "all"
    if key == "N":
        return compress([n["name"] for n in nodes])
    if key == "n":
        return compress([n["name"] for n in nodes])
    if key == "D":
        return str(len(nodes))
    if key == "C":
        return _cpus_aiot(nodes)
    if key == "F":
        return _nodes_aiot(nodes)
    if not nodes:  # a partition none of whose nodes is shown (``-t`` and the like)
        return "n/a"
    return _NODE_VALUES[key](nodes[0])


# ------------------------------------------------------------------------------ rows
def groups(
    specs: list[Spec], parts: list[Partition], nodes: list[Node], opts: _Options
) -> list[tuple[Partition, list[Node]]]:
    """The rows: (partition, its nodes in the row)."""
    by_name = {n["name"]: n for n in nodes}
    out: list[tuple[Partition, list[Node]]] = []
    if opts.reasons:
        return _reason_rows(specs, parts, nodes, opts)
    for part in parts:
        if opts.partitions is not None and part["name"] not in opts.partitions:
            continue
        members = [by_name[name] for name in part["nodes"] if name in by_name]
        members = [n for n in members if _shown(n, opts)]
        if opts.node:
            out.extend((part, [n]) for n in members)
            continue
        if not members:
            out.append((part, []))  # Slurm still prints the partition: 0 nodes, n/a
            continue
        keys = [s.key for s in specs if s.key not in AGGREGATE]
        if not opts.summary:
            keys.append("T")
        found: dict[tuple[str, ...], list[Node]] = {}
        for node in members:
            found.setdefault(tuple(value(k, part, [node]) for k in keys), []).append(node)
        rows = sorted(
            found.values(),
            key=lambda g: (STATE_RANK.get(g[0]["state"], 9), members.index(g[0])),
        )
        if opts.summary:
            rows = sorted(rows, key=lambda g: members.index(g[0]))
        out.extend((part, g) for g in rows)
    return out


def _reason_rows(
    specs: list[Spec], parts: list[Partition], nodes: list[Node], opts: _Options
) -> list[tuple[Partition, list[Node]]]:
    """``-R``: nodes down, drained or draining, each once, grouped by what prints alike."""
    keys = [s.key for s in specs if s.key not in AGGREGATE]
    part = parts[0] if parts else {"name": "", "default": False}
    found: dict[tuple[str, ...], list[Node]] = {}
    for node in nodes:
        if node["state"] not in ("down", "drained", "draining") or not _shown(node, opts):
            continue
        found.setdefault(tuple(value(k, part, [node]) for k in keys), []).append(node)
    rows = sorted(
        found.values(), key=lambda g: (STATE_RANK.get(g[0]["state"], 9), nodes.index(g[0]))
    )
    return [(part, g) for g in rows]


def _shown(node: Node, opts: _Options) -> bool:
    if opts.nodes is not None and node["name"] not in opts.nodes:
        return False
    if opts.states is not None and node["state"] not in opts.states:
        return False
    responding = bool(node.get("agent", True))
    if opts.responding and not responding:
        return False
    return not (opts.dead and responding)


def _format(opts: _Options, parts: list[Partition], nodes: list[Node]) -> tuple[str, list[Spec]]:
    if opts.long_format is not None:
        fields, bad = parse_long(opts.long_format, LONG_FIELDS)
        for name in bad:
            print(f"sinfo: error: Invalid node format specification: {name}", file=sys.stderr)
        return "", [Spec(LONG_FIELDS[s.key], s.width, s.right, s.suffix) for s in fields]
    if opts.format is not None:
        text = opts.format
    elif opts.reasons:
        text = REASONS_LONG_FORMAT if opts.long else REASONS_FORMAT
    elif opts.summary:
        text = SUMMARY_FORMAT
    elif opts.node:
        text = NODE_LONG_FORMAT if opts.long else NODE_FORMAT
    else:
        text = LONG_FORMAT if opts.long else DEFAULT_FORMAT
    part_width = max([9, *(len(p["name"]) + 1 for p in parts)])
    node_width = max([8, *(len(n["name"]) for n in nodes)]) + 1
    text = text.replace("{P}", str(part_width)).replace("{N}", str(node_width))
    prefix, specs, bad = parse_percent(text, "".join(k for k in HEADERS if len(k) == 1))
    for key in bad:
        print(f"sinfo: error: Invalid node format specification: {key}", file=sys.stderr)
    return prefix, specs


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        opts = _parse(args)
    except CommandLineError as exc:
        print(exc, file=sys.stderr)
        return exc.status
    try:
        caller = WireCaller()
        nodes = _get(caller, "/v1/nodes")
        parts = _get(caller, "/v1/partitions")
    except ControllerUnreachable as exc:
        print(f"slurm_load_partitions: Unable to contact slurm controller ({exc})", file=sys.stderr)
        return 1
    except ApiError as exc:
        print(f"sinfo: error: {exc}", file=sys.stderr)
        return 1
    prefix, specs = _format(opts, parts, nodes)
    lines: list[str] = []
    if opts.long:
        lines.append(time.strftime("%a %b %d %H:%M:%S %Y"))
    if opts.header:
        lines.append(render(prefix, specs, [HEADERS[s.key] for s in specs]))
    for part, members in groups(specs, parts, nodes, opts):
        lines.append(
            render(prefix, specs, [value(s.key, part, members) for s in specs], frozenset("N"))
        )
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _get(caller: WireCaller, path: str) -> Any:
    answer = caller.call_ok("GET", path)
    return answer


if __name__ == "__main__":
    sys.exit(main())
