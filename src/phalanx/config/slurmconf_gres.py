"""GPUs in Slurm's terms: a node's ``Gres=`` value in slurm.conf, and gres.conf.

Only ``gpu`` GRES count; others (``nic:1``, ``mps:100``) are read past. A count may carry
Slurm's K/M/G suffix (powers of 1024). A node has one GPU model in Phalanx, so GPUs of two
types on one node are an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from phalanx.config.slurmconf_lines import ConfLine, ConfValue
from phalanx.config.yamlfield import MAX_INT
from phalanx.domain.hostlist import expand
from phalanx.errors import ConfigError

__all__ = ["GpuSpec", "GresConfGpus", "gres_conf_gpus", "parse_gres"]

_COUNT = re.compile(r"^(\d+)([KMG]?)$", re.IGNORECASE)
_SCALE = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_GRES_CONF_KEYS = frozenset(
    {"name", "type", "file", "count", "nodename", "cores", "links", "flags", "autodetect"}
    | {"multiplefiles", "corecnt"}
)


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """GPUs from slurm.conf ``Gres=``; ``written`` False when a ``gpu`` item gave no count
    (Slurm then counts 1, and gres.conf may say more)."""

    count: int
    model: str | None
    written: bool = True


def _count(text: str, where: ConfValue) -> int:
    m = _COUNT.match(text)
    if m is None:
        raise where.error(f"invalid GRES count {text!r}")
    count = int(m.group(1)) * _SCALE[m.group(2).upper()]
    if count > MAX_INT:  # as the cluster YAML's gpus (yamlfield.MAX_INT)
        raise where.error(f"GRES count {text!r} is over {MAX_INT}")
    return count


def _split_items(text: str) -> list[str]:
    """Comma-separated items; commas inside ``(S:0,1)`` socket lists do not split."""
    items, depth, current = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += ch
    items.append(current)
    return [i.strip() for i in items if i.strip()]


def parse_gres(where: ConfValue) -> GpuSpec:
    """``gpu``, ``gpu:8``, ``gpu:h100:8``, ``gpu:h100:8(S:0-1)``, several joined by commas."""
    total = 0
    written = True
    models: set[str] = set()
    for item in _split_items(where.text):
        parts = [p for p in item.split("(")[0].split(":") if p.lower() != "no_consume"]
        if parts[0].lower() != "gpu":
            continue
        if len(parts) > 3:
            raise where.error(f"invalid GRES {item!r}; expected gpu[:type][:count]")
        if len(parts) == 3:
            models.add(parts[1])
            total += _count(parts[2], where)
        elif len(parts) == 2 and _COUNT.match(parts[1]):
            total += _count(parts[1], where)
        else:
            if len(parts) == 2:
                models.add(parts[1])
            total += 1
            written = False
    if len(models) > 1:
        raise where.error(f"GPUs of several types on one node ({', '.join(sorted(models))})")
    return GpuSpec(total, next(iter(models), None), written)


@dataclass(slots=True)
class GresConfGpus:
    """What gres.conf says of one node: a GPU count (None: not stated) and the types."""

    count: int | None = None
    models: set[str] = field(default_factory=set)
    where: ConfValue | None = None


def _file_count(where: ConfValue) -> int:
    try:
        return len(expand(where.text))
    except ConfigError as exc:
        raise where.error(exc.message) from None


def gres_conf_gpus(lines: Iterable[ConfLine], names: list[str]) -> dict[str, GresConfGpus]:
    """GPUs per node name. A line without ``NodeName`` is for every node; names of nodes not in
    ``names`` are read past (one gres.conf may serve several clusters)."""
    known = set(names)
    out: dict[str, GresConfGpus] = {}
    for line in lines:
        for key, value in line.pairs.items():
            if key not in _GRES_CONF_KEYS:
                raise value.error(f"unknown gres.conf key {value.key!r}")
        if "name" not in line.pairs:
            if "autodetect" in line.pairs:
                continue
            raise line.error("missing Name= (e.g. Name=gpu)")
        if line.pairs["name"].text.lower() != "gpu":
            continue
        count: int | None = None
        if "count" in line.pairs:
            count = _count(line.pairs["count"].text, line.pairs["count"])
        elif "file" in line.pairs:
            count = _file_count(line.pairs["file"])
        elif "multiplefiles" in line.pairs:
            count = 1
        if "nodename" in line.pairs:
            try:
                targets = [n for n in expand(line.pairs["nodename"].text) if n in known]
            except ConfigError as exc:
                raise line.pairs["nodename"].error(exc.message) from None
        else:
            targets = names
        for name in targets:
            gpus = out.setdefault(name, GresConfGpus())
            if count is not None:
                gpus.count = (gpus.count or 0) + count
                gpus.where = line.pairs.get("count") or line.pairs.get("file") or line.head
            if "type" in line.pairs:
                gpus.models.add(line.pairs["type"].text)
                gpus.where = gpus.where or line.pairs["type"]
    return out
