"""Best-effort cgroup v2 limits for the runs of a node: CPU quota and memory ceiling.

A run's processes are moved into ``<root>/phalanx.slice/job_<job>_<run>/`` right after they
are spawned. Anything that goes wrong (no cgroup v2, not root, a controller not delegated)
costs the limits, never the launch: one warning per agent, then runs go unlimited.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["CPU_PERIOD_US", "Cgroups", "limits"]

log = logging.getLogger(__name__)

CPU_PERIOD_US = 100_000
SLICE = "phalanx.slice"


def limits(cpus: int, memory_mb: int) -> dict[str, str]:
    """Interface file -> content for a run with these limits (0: no limit on that resource)."""
    files: dict[str, str] = {}
    if cpus > 0:
        files["cpu.max"] = f"{cpus * CPU_PERIOD_US} {CPU_PERIOD_US}"
    if memory_mb > 0:
        files["memory.max"] = str(memory_mb * 1024 * 1024)
    return files


class Cgroups:
    """The cgroups of one agent's runs under ``root`` (the cgroup v2 mount)."""

    def __init__(self, root: Path | str = "/sys/fs/cgroup") -> None:
        self._root = Path(root)
        self._slice = self._root / SLICE
        self._prepared = False
        self._disabled = False
        """Set after the first failure: one warning per agent, then no more attempts."""

    @property
    def usable(self) -> bool:
        """cgroup v2 is mounted at root and this process may write to it."""
        if self._disabled:
            return False
        controllers = self._root / "cgroup.controllers"
        return controllers.exists() and os.access(self._root, os.W_OK)

    def path(self, job_id: int, run: int) -> Path:
        return self._slice / f"job_{job_id}_{run}"

    def place(
        self, job_id: int, run: int, pids: Iterable[int], *, cpus: int, memory_mb: int
    ) -> bool:
        """Limit the run and move its processes in; False (and nothing raised) on failure."""
        files = limits(cpus, memory_mb)
        if not files or not self.usable:
            return False
        group = self.path(job_id, run)
        try:
            self._prepare()
            group.mkdir(exist_ok=True)
            for name, content in files.items():
                (group / name).write_text(content)
            fd = os.open(group / "cgroup.procs", os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                for pid in pids:
                    # The kernel takes one pid per write(); a task may be gone already.
                    with contextlib.suppress(ProcessLookupError):
                        os.write(fd, f"{pid}\n".encode())
            finally:
                os.close(fd)
        except OSError as exc:
            self._disabled = True
            log.warning("cgroup limits are off for this agent (%s): %s", group, exc)
            return False
        return True

    def remove(self, job_id: int, run: int) -> None:
        """Remove the run's cgroup once its processes have ended; quiet when there is none."""
        group = self.path(job_id, run)
        try:
            group.rmdir()
        except FileNotFoundError:
            pass
        except OSError as exc:
            # Busy: a process of the run escaped its session and lives on.
            log.debug("cannot remove %s: %s", group, exc)

    def _prepare(self) -> None:
        """Delegate cpu and memory down to the runs' cgroups, once per agent."""
        if self._prepared:
            return
        self._slice.mkdir(exist_ok=True)
        for parent in (self._root, self._slice):
            control = parent / "cgroup.subtree_control"
            enabled = control.read_text().split() if control.exists() else []
            wanted = [f"+{c}" for c in ("cpu", "memory") if c not in enabled]
            if wanted:
                control.write_text(" ".join(wanted))
        self._prepared = True
