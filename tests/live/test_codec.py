"""The journal's codec: every journaled event and every JobSpec field survive a round trip."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phalanx.domain.jobspec import ArraySpec, Dependency, DepKind, JobSpec, TaskLaunch
from phalanx.domain.jobstep import StepRecord
from phalanx.domain.rusage import RunUsage
from phalanx.domain.time import HOUR, MINUTE, SECOND
from phalanx.engine import (
    Cancel,
    CleanupDone,
    Event,
    LaunchFailed,
    NodeDown,
    NodeUp,
    Submit,
    TasksExited,
    TimerFired,
)
from phalanx.engine.timers import PASS
from phalanx.live.codec import decode, encode, spec_from_dict, spec_to_dict

FULL = JobSpec(
    name="train-llm",
    user="alice",
    account="physics",
    partition="gpu",
    qos="high",
    nodes_min=2,
    nodes_max=4,
    tasks_per_node=8,
    gpus_per_task=1,
    gpu_milli=0,  # a fraction excludes several tasks; covered by its own spec below
    cpus_per_task=6,
    mem_per_node_mb=512_000,
    gpu_models=frozenset({"A100", "H100"}),
    features=frozenset({"ib", "nvlink"}),
    time_limit=2 * HOUR,
    switches=1,
    switches_wait=5 * MINUTE,
    exclusive=True,
    elastic=True,
    requeue=False,
    checkpoint_interval=10 * MINUTE,
    checkpoint_on_signal=True,
    signal=10,
    signal_lead=90 * SECOND,
    dependencies=(
        Dependency(DepKind.AFTEROK, (1, 2)),
        Dependency(DepKind.AFTERANY, (3,)),
        Dependency(DepKind.SINGLETON),
    ),
    array=ArraySpec((0, 2, 4, 1000), 2),
    begin=1_700_000_000_000,
    hold=True,
    batch=True,
    nice=-5,
    comment='a comment, with "quotes" and ünïcode',
    command=("python", "-m", "train", "--lr=1e-3", ""),
    workdir="/home/alice/run",
    output="out-%j.log",
    error="err-%j.log",
    environment=(("A", "1"), ("EMPTY", ""), ("PATH", "/opt/bin:/usr/bin")),
    extra=(("open_mode", "append"),),
)


def _every_field_differs_from_its_default(spec: JobSpec) -> list[str]:
    return [f.name for f in dataclasses.fields(spec) if getattr(spec, f.name) == f.default]


def test_the_full_spec_sets_every_field_but_the_gpu_fraction() -> None:
    # a GPU fraction and per-task launches exclude a node range: each has its own spec below
    assert _every_field_differs_from_its_default(FULL) == ["gpu_milli", "tasks"]


def test_spec_round_trip_of_every_field() -> None:
    back = spec_from_dict(json.loads(json.dumps(spec_to_dict(FULL))))
    assert back == FULL
    assert isinstance(back.gpu_models, frozenset)
    assert isinstance(back.features, frozenset)
    assert isinstance(back.command, tuple)
    assert isinstance(back.environment, tuple)
    assert all(isinstance(pair, tuple) for pair in back.environment)
    assert isinstance(back.dependencies[0].job_ids, tuple)
    assert back.array is not None and isinstance(back.array.task_ids, tuple)


def test_spec_round_trip_of_a_gpu_fraction() -> None:
    spec = JobSpec(gpu_milli=250, time_limit=MINUTE)
    assert spec_from_dict(json.loads(json.dumps(spec_to_dict(spec)))) == spec


def test_spec_round_trip_of_per_task_launches() -> None:
    spec = JobSpec(
        nodes_min=2,
        nodes_max=2,
        command=("python", "train.py"),
        tasks=(
            TaskLaunch(("python", "-c", "master"), (("RANK", "0"),), "/w", "/logs/m.log"),
            TaskLaunch(("python", "-c", "worker"), (("RANK", "1"), ("EMPTY", ""))),
        ),
    )
    data = json.loads(json.dumps(spec_to_dict(spec)))
    assert data["tasks"][1] == {
        "command": ["python", "-c", "worker"],
        "environment": [["RANK", "1"], ["EMPTY", ""]],
    }
    assert spec_from_dict(data) == spec


def test_defaults_stay_implicit() -> None:
    assert spec_to_dict(JobSpec()) == {}
    assert spec_to_dict(JobSpec(name="x")) == {"name": "x"}
    assert spec_from_dict({}) == JobSpec()


def test_spec_dict_is_plain_json() -> None:
    data = spec_to_dict(FULL)
    assert json.loads(json.dumps(data)) == data
    assert data["gpu_models"] == ["A100", "H100"]  # sorted: the same spec, the same row
    assert data["dependencies"] == [["afterok", [1, 2]], ["afterany", [3]], ["singleton", []]]
    assert data["array"] == [[0, 2, 4, 1000], 2]


def test_array_without_throttle_round_trips() -> None:
    spec = JobSpec(array=ArraySpec((3, 5)))
    assert spec_from_dict(json.loads(json.dumps(spec_to_dict(spec)))) == spec


EVENTS: list[tuple[str, Event]] = [
    ("submit", Submit(1_000, FULL)),
    ("submit", Submit(0, JobSpec())),
    ("cancel", Cancel(2_000, 7, by="alice")),
    ("exited", TasksExited(3_000, 7, 2, exit_code=3, signal=9)),
    (
        "exited",
        TasksExited(
            3_500, 7, 3, usage=RunUsage(310, 40, 51_200), steps_usage=RunUsage(5, 1, 2_048)
        ),
    ),
    ("launch_failed", LaunchFailed(4_000, 8, 1, reason="no such user")),
    ("node_down", NodeDown(5_000, 3, reason="Not responding")),
    ("node_up", NodeUp(6_000, 3)),
    ("cleanup_done", CleanupDone(7_000, 7, 2)),
]


@pytest.mark.parametrize(
    ("kind", "event"), EVENTS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(EVENTS)]
)
def test_event_round_trip(kind: str, event: Event) -> None:
    got_kind, body = encode(event)
    assert got_kind == kind
    assert isinstance(json.loads(body), dict)
    back = decode(got_kind, body)
    assert type(back) is type(event)
    assert back == event


def test_an_unmeasured_end_is_journaled_as_before_usage_existed() -> None:
    kind, body = encode(TasksExited(3_000, 7, 2, exit_code=3))
    assert json.loads(body) == {"at": 3_000, "job_id": 7, "run": 2, "exit_code": 3, "signal": 0}
    # and a row written before usage existed reads back unmeasured
    assert decode(kind, body) == TasksExited(3_000, 7, 2, exit_code=3)


def test_usage_is_journaled_compactly() -> None:
    _, body = encode(TasksExited(1, 2, 3, usage=RunUsage(310, 40, 51_200)))
    assert json.loads(body)["usage"] == [310, 40, 51_200]
    assert "steps_usage" not in json.loads(body)


def test_steps_ride_on_the_end_of_their_run() -> None:
    steps = (
        StepRecord(7, 0, "python", "n[1-2]", 2, 16, 4.0, 8000, 1_000, 2_000, "COMPLETED"),
        StepRecord(
            7, 1, "sh", "n1", 1, 8, 2.0, 0, 2_100, 2_900, "FAILED", 3, 0, "", RunUsage(5, 1, 9)
        ),
    )
    kind, body = encode(TasksExited(3_000, 7, 2, steps=steps))
    assert json.loads(body)["steps"][1]["usage"] == [5, 1, 9]
    assert decode(kind, body) == TasksExited(3_000, 7, 2, steps=steps)


def test_every_journaled_kind_is_covered() -> None:
    kinds = {k for k, _ in EVENTS}
    assert kinds == {
        "submit",
        "cancel",
        "exited",
        "launch_failed",
        "node_down",
        "node_up",
        "cleanup_done",
    }


def test_timer_is_not_journaled() -> None:
    with pytest.raises(TypeError, match="TimerFired"):
        encode(TimerFired(10, PASS))


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(KeyError):
        decode("timer", json.dumps({"at": 1, "key": []}))


_names = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=12)
_pairs = st.lists(st.tuples(_names, st.text(max_size=8)), max_size=4).map(tuple)
_deps = st.lists(
    st.builds(
        Dependency,
        st.sampled_from([DepKind.AFTER, DepKind.AFTEROK, DepKind.AFTERANY, DepKind.AFTERNOTOK]),
        st.lists(st.integers(1, 10**9), min_size=1, max_size=4).map(tuple),
    ),
    max_size=3,
).map(tuple)
_arrays = st.none() | st.builds(
    ArraySpec,
    st.lists(st.integers(0, 1000), min_size=1, max_size=20, unique=True).map(
        lambda ids: tuple(sorted(ids))
    ),
    st.none() | st.integers(1, 50),
)
_specs = st.builds(
    JobSpec,
    name=_names,
    user=_names,
    nodes_min=st.just(1),
    nodes_max=st.integers(1, 64),
    gpus_per_task=st.integers(0, 8),
    gpu_models=st.frozensets(_names, max_size=3),
    time_limit=st.none() | st.integers(1, 10 * 24 * HOUR),
    command=st.lists(st.text(max_size=10), max_size=5).map(tuple),
    environment=_pairs,
    dependencies=_deps,
    array=_arrays,
    hold=st.booleans(),
    nice=st.integers(-10_000, 10_000),
)


@given(st.integers(0, 2**53), _specs)
def test_submit_round_trip_property(at: int, spec: JobSpec) -> None:
    kind, body = encode(Submit(at, spec))
    assert kind == "submit"
    assert decode(kind, body) == Submit(at, spec)
