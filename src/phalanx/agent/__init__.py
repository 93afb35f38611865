"""The node agent: a process per node that runs the tasks of jobs for the controller.

It talks to the controller over HTTP (``phalanx.api.wire`` holds the schemas): it registers
its machine, long-polls commands (launch, signal, kill), runs tasks as real processes and
reports how their runs ended. Start it with ``python -m phalanx.agent``.
"""

from phalanx.agent.agent import EXIT_FENCED, EXIT_REFUSED, Agent
from phalanx.agent.cgroup import Cgroups
from phalanx.agent.machine import Machine, describe
from phalanx.agent.tasks import TaskRunner

__all__ = ["EXIT_FENCED", "EXIT_REFUSED", "Agent", "Cgroups", "Machine", "TaskRunner", "describe"]
