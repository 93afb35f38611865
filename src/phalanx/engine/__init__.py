"""The sans-IO scheduling engine: ``handle(event) -> list[Command]``, no clock, no I/O."""

from phalanx.engine.commands import Cleanup, Command, Kill, Launch, Resize, Signal, WakeAt
from phalanx.engine.engine import Engine
from phalanx.engine.events import (
    AccountingChange,
    Cancel,
    CleanupDone,
    Event,
    Forget,
    LaunchFailed,
    NodeDown,
    NodeUp,
    NodeUpdate,
    QueuesChange,
    Requeue,
    Submit,
    TasksExited,
    TimerFired,
    Update,
)

__all__ = [
    "AccountingChange",
    "Cancel",
    "Cleanup",
    "CleanupDone",
    "Command",
    "Engine",
    "Event",
    "Forget",
    "Kill",
    "Launch",
    "LaunchFailed",
    "NodeDown",
    "NodeUp",
    "NodeUpdate",
    "QueuesChange",
    "Requeue",
    "Resize",
    "Signal",
    "Submit",
    "TasksExited",
    "TimerFired",
    "Update",
    "WakeAt",
]
