"""The switch tree and NVLink blocks from a Slurm topology.conf.

* ``SwitchName=X Nodes=HOSTLIST`` is a leaf; every node must be in exactly one leaf.
* ``SwitchName=Y Switches=LIST`` whose switches are leaves is a spine; a leaf under no spine
  has parent None. Phalanx's tree has two levels: switches above the spines (a core over
  aggregation switches) are read past.
* ``BlockName=B Nodes=HOSTLIST`` (topology/block) gives NVLink blocks, numbered in file order;
  ``BlockSizes=`` is read past. With blocks and no switches the tree is ``default_tree``.
"""

from __future__ import annotations

from collections.abc import Iterable

from phalanx.config.clusterspec import default_tree
from phalanx.config.slurmconf_lines import ConfLine, ConfValue
from phalanx.domain.cluster import Switch
from phalanx.domain.hostlist import compress, expand
from phalanx.errors import ConfigError

__all__ = ["Topology", "topology_from_lines"]

Topology = tuple[tuple[Switch, ...], tuple[Switch, ...], dict[int, int]]
"""Leaves, spines, and the NVLink block of each node index that has one."""

_SWITCH_KEYS = frozenset({"switchname", "nodes", "switches", "linkspeed"})
_BLOCK_KEYS = frozenset({"blockname", "nodes", "blocksizes"})


def _expand(where: ConfValue) -> list[str]:
    try:
        return expand(where.text)
    except ConfigError as exc:
        raise where.error(exc.message) from None


def _node_indexes(where: ConfValue, index: dict[str, int]) -> list[int]:
    out = []
    for name in _expand(where):
        if name not in index:
            raise where.error(f"unknown node {name!r}")
        out.append(index[name])
    return out


def _check_keys(line: ConfLine, allowed: frozenset[str]) -> None:
    for key, value in line.pairs.items():
        if key not in allowed:
            raise value.error(f"unknown topology.conf key {value.key!r}")


def topology_from_lines(lines: Iterable[ConfLine], names: list[str]) -> Topology:
    """Leaves, spines and blocks for the nodes ``names`` (node index = position)."""
    index = {n: i for i, n in enumerate(names)}
    leaf_lines: list[ConfLine] = []
    upper: list[ConfLine] = []
    blocks: dict[int, int] = {}
    block_count = 0
    for line in lines:
        if line.kind == "blocksizes" and len(line.pairs) == 1:
            continue
        if line.kind == "blockname":
            _check_keys(line, _BLOCK_KEYS)
            if "nodes" in line.pairs:
                for n in _node_indexes(line.pairs["nodes"], index):
                    if n in blocks:
                        raise line.pairs["nodes"].error(f"node {names[n]!r} is in two blocks")
                    blocks[n] = block_count
            block_count += 1
            continue
        if line.kind != "switchname":
            raise line.error(f"expected SwitchName= or BlockName=, got {line.head.key!r}")
        _check_keys(line, _SWITCH_KEYS)
        if ("nodes" in line.pairs) == ("switches" in line.pairs):
            raise line.error("a switch needs one of Nodes= (a leaf) or Switches=")
        (leaf_lines if "nodes" in line.pairs else upper).append(line)
    if not leaf_lines:
        if upper:
            raise upper[0].error("switches but no leaf (SwitchName=... Nodes=...)")
        leaves, spines = default_tree(names)
        return leaves, spines, blocks
    with_parents, spines = _spines(upper, _leaves(leaf_lines, names, index))
    return with_parents, spines, blocks


def _leaves(lines: list[ConfLine], names: list[str], index: dict[str, int]) -> list[Switch]:
    leaves: list[Switch] = []
    owner: dict[int, str] = {}
    for i, line in enumerate(lines):
        name = line.head.text
        if any(leaf.name == name for leaf in leaves):
            raise line.head.error(f"duplicate switch name {name!r}")
        members = _node_indexes(line.pairs["nodes"], index)
        for n in members:
            if n in owner:
                raise line.pairs["nodes"].error(
                    f"node {names[n]!r} is in switch {owner[n]!r} and switch {name!r}"
                )
            owner[n] = name
        leaves.append(Switch(i, name, tuple(sorted(set(members)))))
    orphans = [n for i, n in enumerate(names) if i not in owner]
    if orphans:
        raise lines[0].error(f"nodes under no switch: {compress(orphans)}")
    return leaves


def _spines(
    lines: list[ConfLine], leaves: list[Switch]
) -> tuple[tuple[Switch, ...], tuple[Switch, ...]]:
    leaf_index = {leaf.name: leaf.index for leaf in leaves}
    upper_names = {line.head.text for line in lines}
    parent: dict[int, int] = {}
    spines: list[Switch] = []
    for line in lines:
        name = line.head.text
        if name in leaf_index or any(s.name == name for s in spines):
            raise line.head.error(f"duplicate switch name {name!r}")
        children = _expand(line.pairs["switches"])
        unknown = [c for c in children if c not in leaf_index and c not in upper_names]
        if unknown:
            raise line.pairs["switches"].error(f"unknown switch {unknown[0]!r}")
        below = [c for c in children if c in leaf_index]
        if not below:
            continue  # a switch above the spines
        if len(below) != len(children):
            raise line.pairs["switches"].error("a switch over both leaves and other switches")
        s = len(spines)
        for leaf in below:
            if leaf_index[leaf] in parent:
                raise line.pairs["switches"].error(f"leaf {leaf!r} is under two switches")
            parent[leaf_index[leaf]] = s
        spines.append(Switch(s, name, tuple(sorted({leaf_index[c] for c in below}))))
    with_parents = tuple(
        Switch(leaf.index, leaf.name, leaf.children, parent.get(leaf.index)) for leaf in leaves
    )
    return with_parents, tuple(spines)
