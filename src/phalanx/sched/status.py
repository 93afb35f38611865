"""Expected scheduling outcomes are values, not exceptions.

A ``Status`` says whether a job may go on, and if not, the reason users will see in ``squeue``
and the plugin that gave it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from mypy_extensions import mypyc_attr

__all__ = ["OK", "Code", "Status"]


class Code(enum.Enum):
    SUCCESS = "success"
    WAIT = "wait"
    """Cannot go on now; may later (resources, priority, quota)."""
    NEVER = "never"
    """Can never go on as asked (bigger than the cluster, unknown partition)."""


@mypyc_attr(allow_interpreted_subclasses=True)
@dataclass(frozen=True, slots=True)
class Status:
    code: Code
    reason: str = "None"
    plugin: str = ""
    message: str = ""
    """Why, in the plugin's own terms, beyond the reason ``squeue`` shows ("ClusterQueue
    team-a at its nominal 64 GPUs, cohort has none to lend"); empty if the reason says all."""
    resolvable: bool = False
    """A pre-filter's WAIT that preemption may resolve, so the post-filter is asked for
    victims (Kubernetes' ``Unschedulable``, against ``UnschedulableAndUnresolvable``): a
    ClusterQueue short of quota that may reclaim or preempt."""

    def __reduce__(self) -> tuple[type[Status], tuple[object, ...]]:
        # Pickled as a call of the class with its fields: compiled (tools/native.py), the
        # default unpickling would set them through the frozen class's ``__setattr__``.
        return Status, (self.code, self.reason, self.plugin, self.message, self.resolvable)

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS

    @staticmethod
    def wait(reason: str, plugin: str) -> Status:
        # Passes ask for the same few statuses for every job they pass over: one each.
        key = (reason, plugin)
        status = _WAITS.get(key)
        if status is None:
            status = _WAITS[key] = Status(Code.WAIT, reason, plugin)
        return status

    @staticmethod
    def wait_because(reason: str, plugin: str, message: str) -> Status:
        """``wait`` with a message (not shared: messages name jobs and amounts)."""
        return Status(Code.WAIT, reason, plugin, message)

    @staticmethod
    def wait_resolvable(reason: str, plugin: str, message: str) -> Status:
        """``wait_because`` that the post-filter may resolve by preempting."""
        return Status(Code.WAIT, reason, plugin, message, resolvable=True)

    @staticmethod
    def never(reason: str, plugin: str) -> Status:
        return Status(Code.NEVER, reason, plugin)


OK = Status(Code.SUCCESS)
_WAITS: dict[tuple[str, str], Status] = {}
