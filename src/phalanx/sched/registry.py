"""Plugins by stable id ``<major>/<minor>``, as Slurm names them (``sched/backfill``).

Built-in plugins are registered by ``phalanx.policies.catalog``. Plugins of other packages
register through the entry-point group ``phalanx.plugins``: the entry point's name is the
plugin id, its object a factory taking the plugin's parameters, e.g. in pyproject.toml::

    [project.entry-points."phalanx.plugins"]
    "select/random" = "mypkg.select:RandomSelect"

They are looked up the first time an id is not known, so a run that names only built-in
plugins imports nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

from phalanx.errors import ConfigError

__all__ = ["ENTRY_POINT_GROUP", "Registry"]

ENTRY_POINT_GROUP = "phalanx.plugins"

Factory = Callable[[Mapping[str, object]], Any]


def _check_id(plugin_id: str) -> None:
    major, _, minor = plugin_id.partition("/")
    if not major or not minor or "/" in minor:
        raise ValueError(f"plugin id must be <major>/<minor>: {plugin_id!r}")


class Registry:
    def __init__(self, group: str = ENTRY_POINT_GROUP) -> None:
        self._factories: dict[str, Factory] = {}
        self._group = group
        self._loaded = False

    def register(self, plugin_id: str, factory: Factory) -> None:
        _check_id(plugin_id)
        if plugin_id in self._factories:
            raise ValueError(f"plugin {plugin_id!r} registered twice")
        self._factories[plugin_id] = factory

    def load_entry_points(self) -> None:
        """Register the factories of the ``phalanx.plugins`` entry points (once). An entry
        point whose id is malformed, taken, or whose object cannot be imported is a
        configuration error naming its distribution."""
        if self._loaded:
            return
        self._loaded = True
        for ep in entry_points(group=self._group):
            dist = ep.dist.name if ep.dist is not None else "?"
            where = f"entry point {ep.name!r} = {ep.value!r} of {dist}"
            try:
                _check_id(ep.name)
            except ValueError as exc:
                raise ConfigError(f"{where}: {exc}", field=self._group) from None
            if ep.name in self._factories:
                raise ConfigError(f"{where}: id already registered", field=self._group)
            try:
                factory = ep.load()
            except Exception as exc:  # an out-of-tree package failing to import is bad input
                raise ConfigError(f"{where}: cannot load: {exc}", field=self._group) from exc
            if not callable(factory):
                raise ConfigError(f"{where}: not callable", field=self._group)
            self._factories[ep.name] = factory

    def create(self, plugin_id: str, params: Mapping[str, object]) -> Any:
        factory = self._factories.get(plugin_id)
        if factory is None:
            self.load_entry_points()
            factory = self._factories.get(plugin_id)
        if factory is None:
            known = ", ".join(sorted(self._factories))
            raise ConfigError(f"unknown plugin {plugin_id!r}; known: {known}", field="profile")
        return factory(params)

    def ids(self) -> list[str]:
        return sorted(self._factories)
