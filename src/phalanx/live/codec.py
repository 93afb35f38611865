"""Engine events as JSON, for the journal: ``encode(event) -> (kind, body)`` and back.

Only the events that come from outside the engine are journaled (submissions, cancels,
reports of ended runs, failed launches, node changes, accounting and queue changes);
timers are replayed, not stored. A ``QueuesChange`` is kept as its objects' JSON and read
again through ``phalanx.config.queue_objects`` on replay.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from phalanx.config.queue_objects import active_queues
from phalanx.domain.jobspec import ArraySpec, Dependency, DepKind, JobSpec, TaskLaunch
from phalanx.domain.jobstep import StepRecord
from phalanx.domain.rusage import RunUsage
from phalanx.engine import (
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
    Update,
)
from phalanx.live.probecodec import probes_from_dict, probes_to_dict

__all__ = ["decode", "encode", "spec_from_dict", "spec_to_dict"]

_FROZENSETS = ("gpu_models", "features")
_PAIRS = ("environment", "extra")


def spec_to_dict(spec: JobSpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(spec):
        value = getattr(spec, f.name)
        if value == f.default:
            continue  # defaults stay implicit: smaller rows, and new fields read back
        if f.name in _FROZENSETS:
            value = sorted(value)
        elif f.name in _PAIRS or f.name == "command":
            value = [list(v) for v in value] if f.name != "command" else list(value)
        elif f.name == "dependencies":
            value = [[d.kind.value, list(d.job_ids)] for d in value]
        elif f.name == "array":
            value = [list(value.task_ids), value.throttle]
        elif f.name == "tasks":
            value = [_task_to_dict(task) for task in value]
        out[f.name] = value
    return out


def spec_from_dict(data: dict[str, Any]) -> JobSpec:
    kwargs: dict[str, Any] = dict(data)
    for name in _FROZENSETS:
        if name in kwargs:
            kwargs[name] = frozenset(kwargs[name])
    for name in _PAIRS:
        if name in kwargs:
            kwargs[name] = tuple((str(k), str(v)) for k, v in kwargs[name])
    if "command" in kwargs:
        kwargs["command"] = tuple(kwargs["command"])
    if "dependencies" in kwargs:
        kwargs["dependencies"] = tuple(
            Dependency(DepKind(kind), tuple(ids)) for kind, ids in kwargs["dependencies"]
        )
    if kwargs.get("array") is not None:
        ids, throttle = kwargs["array"]
        kwargs["array"] = ArraySpec(tuple(ids), throttle)
    if "tasks" in kwargs:
        kwargs["tasks"] = tuple(_task_from_dict(task) for task in kwargs["tasks"])
    return JobSpec(**kwargs)


def _task_to_dict(task: TaskLaunch) -> dict[str, Any]:
    out: dict[str, Any] = {"command": list(task.command)}
    if task.environment:
        out["environment"] = [list(pair) for pair in task.environment]
    if task.workdir is not None:
        out["workdir"] = task.workdir
    if task.output is not None:
        out["output"] = task.output
    if task.restart != "Never":
        out["restart"] = task.restart
    if task.probes is not None:
        out["probes"] = probes_to_dict(task.probes)
    return out


def _task_from_dict(data: dict[str, Any]) -> TaskLaunch:
    return TaskLaunch(
        command=tuple(str(a) for a in data["command"]),
        environment=tuple((str(k), str(v)) for k, v in data.get("environment", ())),
        workdir=data.get("workdir"),
        output=data.get("output"),
        restart=str(data.get("restart", "Never")),
        probes=probes_from_dict(data["probes"]) if data.get("probes") is not None else None,
    )


_PLAIN: dict[str, type[Any]] = {
    "cancel": Cancel,
    "exited": TasksExited,
    "launch_failed": LaunchFailed,
    "node_down": NodeDown,
    "node_up": NodeUp,
    "node_update": NodeUpdate,
    "cleanup_done": CleanupDone,
    "update": Update,
    "requeue": Requeue,
    "forget": Forget,
    "accounting": AccountingChange,
}
_KIND = {cls: kind for kind, cls in _PLAIN.items()}


_USAGES = ("usage", "steps_usage")
"""``TasksExited`` fields holding a ``RunUsage``: ``[user_ms, system_ms, max_rss_kb]`` in the
journal, left out when not measured (rows then read as they did before usage existed).
``steps`` is a list of ``StepRecord`` dicts (their usage likewise), left out when empty."""


def encode(event: Event) -> tuple[str, str]:
    if isinstance(event, Submit):
        submit: dict[str, Any] = {"at": event.at, "spec": spec_to_dict(event.spec)}
        if event.key:
            submit["key"] = event.key
        return "submit", json.dumps(submit)
    if isinstance(event, QueuesChange):
        # the objects, read again on replay: the ``Queues`` value is theirs, and a reader
        # that learns more of a kind reads more of an old change too
        return "queues", json.dumps({"at": event.at, "objects": list(event.objects)})
    kind = _KIND.get(type(event))
    if kind is None:
        raise TypeError(f"{type(event).__name__} is not journaled")
    if isinstance(event, TasksExited):
        data: dict[str, Any] = {
            f.name: getattr(event, f.name)
            for f in dataclasses.fields(event)
            if f.name not in (*_USAGES, "steps")
        }
        _put_usages(data, event, _USAGES)
        if event.steps:
            data["steps"] = [_step_to_dict(step) for step in event.steps]
        return kind, json.dumps(data)
    return kind, json.dumps(dataclasses.asdict(event))


def decode(kind: str, body: str) -> Event:
    data = json.loads(body)
    if kind == "submit":
        return Submit(int(data["at"]), spec_from_dict(data["spec"]), str(data.get("key", "")))
    if kind == "queues":
        objects = tuple(str(o) for o in data["objects"])
        queues, _ = active_queues(json.loads(o) for o in objects)
        return QueuesChange(int(data["at"]), queues, objects)
    if kind == "exited":
        _get_usages(data, _USAGES)
        data["steps"] = tuple(_step_from_dict(step) for step in data.get("steps", ()))
    if kind == "accounting":  # JSON has lists where the event has tuples
        data["names"] = tuple(data["names"])
        for name in ("where", "settings"):
            data[name] = tuple((str(k), str(v)) for k, v in data[name])
    cls = _PLAIN[kind]
    event: Event = cls(**data)
    return event


def _put_usages(data: dict[str, Any], holder: object, names: tuple[str, ...]) -> None:
    for name in names:
        usage: RunUsage | None = getattr(holder, name)
        if usage is not None:
            data[name] = [usage.user_ms, usage.system_ms, usage.max_rss_kb]


def _get_usages(data: dict[str, Any], names: tuple[str, ...]) -> None:
    for name in names:
        if data.get(name) is not None:
            data[name] = RunUsage(*(int(v) for v in data[name]))


def _step_to_dict(step: StepRecord) -> dict[str, Any]:
    data = {f.name: getattr(step, f.name) for f in dataclasses.fields(step) if f.name != "usage"}
    _put_usages(data, step, ("usage",))
    return data


def _step_from_dict(data: dict[str, Any]) -> StepRecord:
    _get_usages(data, ("usage",))
    return StepRecord(**data)
