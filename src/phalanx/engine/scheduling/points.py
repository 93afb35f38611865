"""A profile's plugins, created once from the registry and grouped by extension point."""

from __future__ import annotations

from typing import Any

from mypy_extensions import mypyc_attr

from phalanx.policies.catalog import REGISTRY
from phalanx.sched.points import (
    Compacts,
    FilterPlugin,
    PermitPlugin,
    PostFilterPlugin,
    PreFilterPlugin,
    QueueSortPlugin,
    ReservationPlugin,
    ReservePlugin,
    ScorePlugin,
)
from phalanx.sched.profile import Profile

__all__ = ["Points"]


@mypyc_attr(allow_interpreted_subclasses=True)
class Points:
    """Plugin instances by point. Empty points are empty tuples or None, so the pass can
    skip them without a call."""

    def __init__(self, profile: Profile) -> None:
        def make(plugin_id: str) -> Any:
            return REGISTRY.create(plugin_id, profile.plugin_params(plugin_id))

        self.queue_sort: QueueSortPlugin = make(profile.queue_sort)
        self.pre_filter: tuple[PreFilterPlugin, ...] = tuple(map(make, profile.pre_filter))
        self.filter: tuple[FilterPlugin, ...] = tuple(map(make, profile.filter))
        self.score: ScorePlugin = make(profile.score)
        self.reserve: tuple[ReservePlugin, ...] = tuple(map(make, profile.reserve))
        self.permit: PermitPlugin | None = make(profile.permit) if profile.permit else None
        self.post_filter: PostFilterPlugin | None = (
            make(profile.post_filter) if profile.post_filter else None
        )
        self.reservation: ReservationPlugin = make(profile.reservation)
        self.post_filter_id = profile.post_filter or ""
        self.score_id = profile.score
        self.params = profile.plugin_params
        self.pods = profile.members == "pods"

    def compact(self) -> None:
        """``compact`` every plugin that can (``Compacts``)."""
        plugins = (
            self.queue_sort, *self.pre_filter, *self.filter, self.score, *self.reserve,
            self.permit, self.post_filter, self.reservation,
        )  # fmt: skip
        for plugin in plugins:
            if isinstance(plugin, Compacts):
                plugin.compact()
