"""``phalanx nodes``: one line per node, like ``sinfo -N``.

Columns: NODE, STATE, GPUS and CPUS as allocated/total, MEMORY, PARTITIONS, LEAF (the
node's leaf switch), REASON (why a node is drained or down, and who said so).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from phalanx.cli.remote import caller, exit_status, fail
from phalanx.cli.table import format_count, render_table
from phalanx.client.wirecall import ApiError, ControllerUnreachable

__all__ = ["HEADER", "add_arguments", "format_memory", "row", "run"]

HEADER = ("NODE", "STATE", "GPUS", "CPUS", "MEMORY", "PARTITIONS", "LEAF", "REASON")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options yet


def run(args: argparse.Namespace) -> int:
    del args
    try:
        answer = caller().call_ok("GET", "/v1/nodes")
    except (ApiError, ControllerUnreachable) as exc:
        return fail("nodes", str(exc), exit_status(exc))
    print(render_table(HEADER, (row(node) for node in answer)))
    return 0


def row(node: Mapping[str, Any]) -> list[str]:
    """One ``NodeInfo`` (decoded JSON) as table cells."""
    state = str(node["state"])
    if not node.get("agent", True):
        # A node without its agent cannot launch anything, whatever the scheduler thinks.
        state += "*"
    gpus = f"{format_count(node['gpus_alloc'])}/{node['gpus']}"
    return [
        str(node["name"]),
        state,
        gpus,
        f"{node['cpus_alloc']}/{node['cpus']}",
        format_memory(int(node["memory_mb"])),
        ",".join(node.get("partitions") or []) or "-",
        str(node.get("leaf") or "-"),
        _reason(node),
    ]


def _reason(node: Mapping[str, Any]) -> str:
    reason = str(node.get("reason") or "")
    if not reason:
        return "-"
    by = node.get("reason_user")
    return f"{reason} [{by}]" if by else reason


def format_memory(mb: int) -> str:
    """``512G``, ``1.5T``, ``900M``: the largest unit that keeps the value at least 1."""
    value, unit = float(mb), "M"
    for bigger in ("G", "T"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f}".removesuffix(".0") + unit
