"""CPU time of a task's processes, for the usage rate reported with its container status
(what the HorizontalPodAutoscaler reads, as from the kubelet's summary).

A run placed in a cgroup of ours reads the cgroup's ``cpu.stat`` (``usage_usec``: every
process of the run, exited children too); otherwise the task's process tree is its session
(tasks start in a session of their own), summed from ``/proc/<pid>/stat`` (``utime`` and
``stime`` of every process whose session is the task's pid).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["CpuMeter", "session_cpu_seconds"]

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def session_cpu_seconds(session: int, proc: Path = Path("/proc")) -> float | None:
    """User plus system CPU seconds of the live processes of ``session`` and of the children
    they waited for; None when there are none (or no ``/proc``)."""
    total = 0
    found = False
    try:
        entries = os.listdir(proc)
    except OSError:
        return None
    for name in entries:
        if not name.isdecimal():
            continue
        try:
            text = (proc / name / "stat").read_text()
        except OSError:
            continue  # ended meanwhile
        # The command name (field 2) is in parentheses and may hold spaces: fields after it.
        fields = text[text.rfind(")") + 2 :].split()
        if len(fields) < 15 or int(fields[3]) != session or fields[0] == "Z":
            continue  # (a zombie's time goes to its parent's once it is waited for)
        found = True
        # utime, stime, and cutime, cstime: of the children it waited for
        total += sum(int(v) for v in fields[11:15])
    return total / _TICKS if found else None


def cgroup_cpu_seconds(group: Path) -> float | None:
    try:
        for line in (group / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
    except (OSError, ValueError):
        return None
    return None


class CpuMeter:
    """``seconds(job_id, run, pid)``: CPU seconds of the task ``pid`` of the run, from its
    cgroup when ``cgroup_of`` names one, else from its session."""

    def __init__(self, cgroup_of: Callable[[int, int], Path | None]) -> None:
        self._cgroup_of = cgroup_of

    def seconds(self, job_id: int, run: int, pid: int) -> float | None:
        group = self._cgroup_of(job_id, run)
        if group is not None:
            value = cgroup_cpu_seconds(group)
            if value is not None:
                return value
        return session_cpu_seconds(pid)
