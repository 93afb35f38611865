"""A scheduling profile: which plugin serves each extension point, and their parameters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from phalanx.domain.time import MINUTE, Duration

__all__ = ["Profile"]


@dataclass(frozen=True)
class Profile:
    name: str
    scheduler: str
    """``sched/*`` id: the pass itself (``sched/backfill``, ``sched/builtin``, ...)."""
    priority: str
    """``priority/*`` id."""
    select: str
    """``select/*`` id."""
    admit: tuple[str, ...] = ()
    preempt: str | None = None
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
