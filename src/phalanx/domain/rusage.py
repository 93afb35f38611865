"""What the processes of a run used, as the kernel counts it when they end (``wait4``).

Agents measure it; the engine keeps it on the job for accounting (``sacct`` TotalCPU,
UserCPU, SystemCPU, MaxRSS) and never decides anything by it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RunUsage", "combined"]


@dataclass(frozen=True, slots=True)
class RunUsage:
    """CPU time in user and kernel mode, in milliseconds, summed over the tasks (and the
    descendants they waited for); the largest resident set size of any one task, in KiB."""

    user_ms: int = 0
    system_ms: int = 0
    max_rss_kb: int = 0

    @property
    def cpu_ms(self) -> int:
        """Slurm's TotalCPU: user plus system time."""
        return self.user_ms + self.system_ms

    def plus(self, other: RunUsage) -> RunUsage:
        """Both together: CPU times add up; the peak stays one task's (Slurm's MaxRSS)."""
        return RunUsage(
            self.user_ms + other.user_ms,
            self.system_ms + other.system_ms,
            max(self.max_rss_kb, other.max_rss_kb),
        )


def combined(a: RunUsage | None, b: RunUsage | None) -> RunUsage | None:
    """``a.plus(b)``, where an unmeasured side (None) adds nothing."""
    if a is None:
        return b
    if b is None:
        return a
    return a.plus(b)
