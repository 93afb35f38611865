"""Plugins by stable id ``<major>/<minor>``, as Slurm names them (``sched/backfill``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from phalanx.errors import ConfigError

__all__ = ["Registry"]

Factory = Callable[[Mapping[str, object]], Any]


class Registry:
    def __init__(self) -> None:
        self._factories: dict[str, Factory] = {}

    def register(self, plugin_id: str, factory: Factory) -> None:
        major, _, minor = plugin_id.partition("/")
        if not major or not minor:
            raise ValueError(f"plugin id must be <major>/<minor>: {plugin_id!r}")
        if plugin_id in self._factories:
            raise ValueError(f"plugin {plugin_id!r} registered twice")
        self._factories[plugin_id] = factory

    def create(self, plugin_id: str, params: Mapping[str, object]) -> Any:
        factory = self._factories.get(plugin_id)
        if factory is None:
            known = ", ".join(sorted(self._factories))
            raise ConfigError(f"unknown plugin {plugin_id!r}; known: {known}", field="profile")
        return factory(params)

    def ids(self) -> list[str]:
        return sorted(self._factories)
