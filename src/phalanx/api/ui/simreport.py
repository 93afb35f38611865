"""The simulation report page's model: a ``phalanx simulate --json`` document read and
checked here, in the API layer (which may not import ``phalanx.sim``: the layer contracts keep
the two apart), and its policies compared figure by figure.

The document is ``{"policies": {NAME: {figure: number, "wait_by_size": {...}, "jct_by_size":
{...}, "queues": {...}}}, ...what was run}``; bad input is an ``InputError`` naming the source,
line and field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from phalanx.api.ui.charts import bars
from phalanx.errors import InputError

__all__ = ["COMPARED", "SimReport", "read_report"]

COMPARED: tuple[tuple[str, str, bool, bool], ...] = (
    # (figure, title, lower is better, a fraction shown as %)
    ("eta_sched", "eta_sched (scheduling efficiency)", False, True),
    ("theta_overhead", "theta_overhead (GPU time lost to overheads)", True, True),
    ("utilization", "GPU utilisation", False, True),
    ("idle_while_pending", "GPUs idle while jobs wait", True, True),
    ("productive_gpu_hours", "productive GPU-hours", False, False),
    ("jct_mean_s", "mean job completion time (s)", True, False),
    ("wait_mean_s", "mean wait (s)", True, False),
    ("bounded_slowdown_mean", "mean bounded slowdown", True, False),
    ("fairness_jain", "Jain fairness over users", False, False),
    ("preemptions", "preemptions", True, False),
)
"""The figures the page compares, in order."""

_FACTS = ("trace", "trace_format", "load", "seed", "limit", "mfu")


@dataclass(frozen=True, slots=True)
class SimReport:
    source: str
    facts: dict[str, str]
    """What was run (trace, load, seed, cluster...), as text."""
    policies: dict[str, dict[str, Any]]

    def figures(self) -> list[str]:
        """Every numeric figure some policy has, sorted."""
        names = {
            k
            for m in self.policies.values()
            for k, v in m.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        return sorted(names)

    def charts(self) -> list[tuple[str, Markup]]:
        """(title, bars) for each compared figure some policy has."""
        out = []
        for key, title, lower, percent in COMPARED:
            values = {
                name: float(m[key]) * (100.0 if percent else 1.0)
                for name, m in self.policies.items()
                if isinstance(m.get(key), int | float)
            }
            if values:
                out.append(
                    (title, bars(values, unit="%" if percent else "", lower_is_better=lower))
                )
        return out

    def sizes(self) -> list[str]:
        """The job size classes of ``wait_by_size``, smallest first ("1", "2-4", ..., "65+"):
        a file written with sorted keys has "65+" before "9-64"."""
        seen: dict[str, None] = {}
        for m in self.policies.values():
            for size in m.get("wait_by_size") or {}:
                seen.setdefault(str(size), None)
        return sorted(seen, key=_lower_bound)


def _lower_bound(size: str) -> tuple[int, str]:
    """A size class's smallest GPU count, for ordering; classes not so named go last."""
    head = size.split("-")[0].rstrip("+")
    return (int(head), size) if head.isdecimal() else (2**63, size)


# Figures that ``phalanx simulate --json`` writes as objects: by job size class, and per queue
# (with ``--queues``); every other figure is a number, a string or null.
_NESTED = frozenset({"wait_by_size", "jct_by_size", "queues"})


def read_report(text: str | bytes, source: str = "upload") -> SimReport:
    """The report in ``text``; ``InputError`` (source, line, field) for anything else."""
    try:
        doc = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(f"not JSON: {exc}", source=source, line=line) from None
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object (phalanx simulate --json)", source=source)
    policies = doc.get("policies")
    if not isinstance(policies, dict) or not policies:
        raise InputError(
            "expected an object of policies' figures (phalanx simulate --json)",
            source=source,
            field="policies",
        )
    checked: dict[str, dict[str, Any]] = {}
    for name, figures in policies.items():
        if not isinstance(figures, dict):
            raise InputError(
                "expected an object of figures", source=source, field=f"policies.{name}"
            )
        for key, value in figures.items():
            if key in _NESTED:
                if not isinstance(value, dict):
                    raise InputError(
                        "expected an object by size class",
                        source=source,
                        field=f"policies.{name}.{key}",
                    )
            elif value is not None and not isinstance(value, int | float | str):
                raise InputError("expected a number", source=source, field=f"policies.{name}.{key}")
            elif isinstance(value, float) and not math.isfinite(value):
                raise InputError(
                    "expected a finite number", source=source, field=f"policies.{name}.{key}"
                )
        checked[str(name)] = figures
    facts = {k: str(doc[k]) for k in _FACTS if doc.get(k) is not None}
    cluster = doc.get("cluster")
    if isinstance(cluster, dict):
        facts["cluster"] = ", ".join(
            f"{k} {cluster[k]}" for k in ("name", "nodes", "gpus", "leaves") if k in cluster
        )
    return SimReport(source, facts, checked)
