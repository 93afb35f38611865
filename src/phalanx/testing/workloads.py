"""Test helpers for the workload reconcilers: names in sequence, and a bench that carries
plans out on pods in memory and an engine whose jobs a test moves by hand."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from phalanx.domain.state import JobState
from phalanx.domain.time import Instant
from phalanx.workloads.plan import ANNOTATION_JOB_ID, EngineJob, Plan, Submission

__all__ = ["Bench", "sequence_names"]

Obj = dict[str, Any]


def sequence_names() -> Callable[[], str]:
    """``p0000``, ``p0001``, ...: generated-name suffixes, predictable."""
    counter = itertools.count()
    return lambda: f"p{next(counter):04d}"


class Bench:
    """One workload object, its pods and their engine jobs, in memory.

    ``apply(plan)`` does what the runner does: submissions (by key: a key seen before gets
    the ids it got), cancels, pod creations, updates and deletions, the object's status."""

    def __init__(self, obj: Obj) -> None:
        self.obj = copy.deepcopy(obj)
        self.pods: dict[str, Obj] = {}
        self.jobs: dict[int, EngineJob] = {}
        self.keys: dict[str, int] = {}
        self.specs: dict[int, Submission] = {}
        self.cancelled: list[int] = []
        self.events: list[Obj] = []
        self.deleted = False
        self._ids = itertools.count(1)
        self.names = sequence_names()

    def engine(self) -> Mapping[int, EngineJob]:
        return dict(self.jobs)

    def apply(self, plan: Plan) -> None:
        for pod in plan.create:
            self.pods[pod["metadata"]["name"]] = copy.deepcopy(pod)
        for pod in plan.update:
            self.pods[pod["metadata"]["name"]] = copy.deepcopy(pod)
        for sub in plan.submit:
            job_id = self.keys.get(sub.key)
            if job_id is None:
                job_id = self.keys[sub.key] = next(self._ids)
                self.jobs[job_id] = EngineJob(job_id, JobState.PENDING)
                self.specs[job_id] = sub
            for rank, name in enumerate(sub.pods):
                held = self.pods.get(name)
                if held is not None:
                    notes = held["metadata"].setdefault("annotations", {})
                    notes[ANNOTATION_JOB_ID] = str(job_id)
                    notes["phalanx.io/rank"] = str(rank)
        for job_id in plan.cancel:
            self.cancelled.append(job_id)
            job = self.jobs.get(job_id)
            if job is not None and job.state in (JobState.PENDING, JobState.RUNNING):
                self.jobs[job_id] = replace(job, state=JobState.CANCELLED)
        for name in plan.delete:
            self.pods.pop(name, None)
        if plan.status is not None:
            self.obj["status"] = copy.deepcopy(plan.status)
        self.events.extend(plan.events)
        self.deleted = self.deleted or plan.delete_self

    def move(self, job_id: int, state: JobState, at: Instant, **fields: Any) -> None:
        """Engine job ``job_id`` takes ``state`` at ``at`` (start or end time set to match)."""
        job = self.jobs[job_id]
        if state is JobState.RUNNING:
            sub = self.specs[job_id]
            nodes = tuple(f"node{r + 1}" for r in range(len(sub.pods)))
            job = replace(job, start=at, nodes=nodes, addresses=("127.0.0.1",) * len(nodes))
        elif state is not JobState.PENDING:
            job = replace(job, end=at, exit_code=0 if state is JobState.COMPLETED else 1)
        self.jobs[job_id] = replace(job, state=state, **fields)

    def job_of(self, pod: str) -> int:
        return int(self.pods[pod]["metadata"]["annotations"][ANNOTATION_JOB_ID])

    def phases(self) -> dict[str, str]:
        return {name: pod["status"]["phase"] for name, pod in sorted(self.pods.items())}
