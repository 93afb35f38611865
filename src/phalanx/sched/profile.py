"""A scheduling profile: the plugins at each extension point, and their parameters.

A policy is a profile (ARCHITECTURE.md): the baselines differ only in which plugins they name
here and with which parameters. Points are listed in ``phalanx.sched.points``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from phalanx.domain.time import MINUTE, Duration

__all__ = ["Profile"]


@dataclass(frozen=True)
class Profile:
    name: str
    queue_sort: str
    """``priority/*``: the queue order (Slurm's PriorityType)."""
    score: str
    """``select/*``: where a gang goes among the nodes that fit (Slurm's SelectType)."""
    reservation: str
    """``sched/*``: what blocked jobs get and where later jobs may start (SchedulerType)."""
    pre_filter: tuple[str, ...] = ()
    """``admit/*``: quotas and limits beyond the cluster's own (QOS, partitions, arrays)."""
    filter: tuple[str, ...] = ("filter/fit",)
    """``filter/*``: the nodes that can hold one node's share of a job."""
    reserve: tuple[str, ...] = ()
    """``reserve/*``: told of each placement before it is taken; may refuse it."""
    permit: str | None = None
    """``permit/*``: with ``members="pods"``, when a partly placed gang may start."""
    post_filter: str | None = None
    """``preempt/*``: victims for a job that fits nowhere (Slurm's PreemptType)."""
    members: Literal["gang", "pods"] = "gang"
    """What one placement covers: the whole gang (Slurm, Kueue, Volcano) or one pod, each
    reserved on its own while the others are placed (vanilla Kubernetes)."""
    params: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    calc_period: Duration = 5 * MINUTE
    """How often priorities are recalculated (Slurm's PriorityCalcPeriod); 0 never, for
    priorities that do not change while a job waits."""
    pass_on_recalc: bool = False
    """Run a pass after every recalculation even if the order did not change."""
    suspend_grace: Duration = 0
    """Tiresias' suspension: a preemption asks the victim to checkpoint now (SIGTERM; the
    ``preempt`` decision says so) and gives it at least this long to save before the kill, so
    it is requeued with its work up to the signal. 0: no suspension; victims get their
    partition's or QOS's grace and keep what their own checkpoints saved."""
    description: str = ""

    def plugin_params(self, plugin: str) -> Mapping[str, object]:
        return self.params.get(plugin, {})

    def plugin_ids(self) -> list[str]:
        """Every plugin the profile names, point by point."""
        ids = [self.queue_sort, *self.pre_filter, *self.filter, self.score, *self.reserve]
        ids += [p for p in (self.permit, self.post_filter) if p is not None]
        return [*ids, self.reservation]
