"""Expected scheduling outcomes are values, not exceptions.

A ``Status`` says whether a job may go on, and if not, the reason users will see in ``squeue``
and the plugin that gave it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["OK", "Code", "Status"]


class Code(enum.Enum):
    SUCCESS = "success"
    WAIT = "wait"
    """Cannot go on now; may later (resources, priority, quota)."""
    NEVER = "never"
    """Can never go on as asked (bigger than the cluster, unknown partition)."""


@dataclass(frozen=True, slots=True)
class Status:
    code: Code
    reason: str = "None"
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS

    @staticmethod
    def wait(reason: str, plugin: str) -> Status:
        return Status(Code.WAIT, reason, plugin)

    @staticmethod
    def never(reason: str, plugin: str) -> Status:
        return Status(Code.NEVER, reason, plugin)


OK = Status(Code.SUCCESS)
