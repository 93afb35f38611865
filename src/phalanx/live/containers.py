"""The latest container status of every running task that restarts in place or is probed,
as the node agents report it (``phalanx.protocol.agent.ContainerReport``): soft state, like
the kubelet's pod status, kept in memory only and never journaled. An agent reports all of
its node's containers at once; a job's entries go when its run ends or its node is lost.

Readers:

- ``ContainerStatuses.get(job_id, rank)``: the latest report of the task (``ready``,
  ``started``, ``restart_count``, ``state``, ``last_state``, ``cpu_millicores``), None when
  no agent reported one (a task without restarts or probes, or not started yet).
- ``subscribe(callback)``: ``callback(job_ids)`` when a report of those jobs changed in what
  a pod's status shows (CPU usage alone is no change); called on the controller's loop.

Pods are looked up by name on the Kubernetes side: ``phalanx.kube.controllers.
WorkloadRunner.pod_container(namespace, name)`` answers a pod's report (other controllers,
the HorizontalPodAutoscaler and the router, read it there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from phalanx.protocol.agent import ContainerReport

__all__ = ["ContainerStatuses"]

TaskKey = tuple[int, int]
"""(job_id, rank)."""


def _shown(report: ContainerReport) -> ContainerReport:
    """The report less what changes without a pod's status changing."""
    return report.model_copy(update={"cpu_millicores": None})


class ContainerStatuses:
    def __init__(self) -> None:
        self._latest: dict[TaskKey, tuple[str, ContainerReport]] = {}
        """(job_id, rank) -> (node, report)."""
        self._callbacks: list[Callable[[set[int]], None]] = []

    def subscribe(self, callback: Callable[[set[int]], None]) -> None:
        self._callbacks.append(callback)

    def get(self, job_id: int, rank: int = 0) -> ContainerReport | None:
        found = self._latest.get((job_id, rank))
        return None if found is None else found[1]

    def update(
        self, node: str, reports: Iterable[ContainerReport], current: Callable[[int, int], bool]
    ) -> None:
        """``node``'s agent tells every container it has; ``current(job_id, run)``: the run is
        still running there as this controller sees it (a report of an older run, or one
        crossing the run's end, is dropped)."""
        changed: set[int] = set()
        told: set[TaskKey] = set()
        for report in reports:
            if not current(report.job_id, report.run):
                continue
            key = (report.job_id, report.rank)
            told.add(key)
            before = self._latest.get(key)
            if before is None or _shown(before[1]) != _shown(report):
                changed.add(report.job_id)
            self._latest[key] = (node, report)
        for key, (where, _) in list(self._latest.items()):
            if where == node and key not in told:
                del self._latest[key]
                changed.add(key[0])
        self._notify(changed)

    def drop(self, job_id: int) -> None:
        """The job's run ended: its tasks' reports go."""
        gone = [key for key in self._latest if key[0] == job_id]
        for key in gone:
            del self._latest[key]
        if gone:
            self._notify({job_id})

    def drop_node(self, node: str) -> None:
        """The node's agent is gone: what it reported is no longer known."""
        gone = {key for key, (where, _) in self._latest.items() if where == node}
        for key in gone:
            del self._latest[key]
        self._notify({key[0] for key in gone})

    def _notify(self, job_ids: set[int]) -> None:
        if job_ids:
            for callback in self._callbacks:
                callback(job_ids)
