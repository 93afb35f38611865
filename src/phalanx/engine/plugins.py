"""The plugins of a profile, created once from the registry."""

from __future__ import annotations

from phalanx.policies.catalog import REGISTRY
from phalanx.sched.profile import Profile
from phalanx.sched.protocols import (
    AdmitPlugin,
    PreemptPlugin,
    PriorityPlugin,
    SchedulerPlugin,
    SelectPlugin,
)

__all__ = ["Plugins"]


class Plugins:
    def __init__(self, profile: Profile) -> None:
        p = profile.plugin_params
        self.scheduler: SchedulerPlugin = REGISTRY.create(profile.scheduler, p(profile.scheduler))
        self.priority: PriorityPlugin = REGISTRY.create(profile.priority, p(profile.priority))
        self.select: SelectPlugin = REGISTRY.create(profile.select, p(profile.select))
        self.admit: list[AdmitPlugin] = [REGISTRY.create(a, p(a)) for a in profile.admit]
        self.preempt: PreemptPlugin | None = (
            REGISTRY.create(profile.preempt, p(profile.preempt)) if profile.preempt else None
        )
