"""The engine's records (``engine.records``: decisions, commands, timer keys) behave as the
frozen dataclasses they were: the same ``repr`` (decision logs are hashed by it), equality
within one type only, the hash of the tuple of their fields, and pickling."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from phalanx.domain.cluster import PreemptMode
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.state import JobState
from phalanx.engine import commands, decisions, timers
from phalanx.engine.records import Record
from phalanx.sched.capacity import Allocation

_ALLOC = Allocation((0, 1), ((0, 1), (2, 3)), 0, 4, 1024)

SAMPLES: list[Record] = [
    decisions.Submitted(5, 1, 7),
    decisions.Rejected(5, 1, "too big"),
    decisions.Started(5, 1, 1, (0, 3)),
    decisions.Held(5, 1, (2,), 0.5),
    decisions.Preempted(9, 2, 1, 3, PreemptMode.REQUEUE, suspend=True),
    decisions.Resized(9, 2, 1, (0,), removed=(1,), for_job=4),
    decisions.Exited(9, 2, 1, 0, 9),
    decisions.Ended(9, 2, 1, JobState.COMPLETED),
    decisions.Updated(9, 2, None, 60_000, 1.5),
    commands.Launch(2, 1, _ALLOC, JobSpec(gpus_per_task=2), 3_600_000, 2, 0),
    commands.Resize(2, 1, _ALLOC, (1,), (), JobSpec(), 60_000, kill=True),
    commands.Cleanup(2, 1),
    commands.WakeAt(8, timers.LimitTimer(2, 1)),
    timers.PASS,
    timers.ReleaseTimer(2, 1, (4, 5)),
]


def _twin(record: Record) -> object:
    """The frozen dataclass ``record``'s class was: same name, same fields."""
    cls = dataclasses.make_dataclass(
        type(record).__name__, list(record.__match_args__), frozen=True, slots=True
    )
    return cls(*record.fields())


@pytest.mark.parametrize("record", SAMPLES, ids=lambda r: type(r).__name__)
def test_a_record_is_what_its_frozen_dataclass_was(record: Record) -> None:
    assert repr(record) == repr(_twin(record))
    assert hash(record) == hash(record.fields())
    copy = pickle.loads(pickle.dumps(record, pickle.HIGHEST_PROTOCOL))
    assert type(copy) is type(record)
    assert copy == record
    assert repr(copy) == repr(record)
    match record:
        case decisions.Started(at, job_id, run, nodes):
            assert (at, job_id, run, nodes) == (5, 1, 1, (0, 3))


def test_records_of_other_types_never_compare_equal() -> None:
    assert timers.LimitTimer(1, 2) == timers.LimitTimer(1, 2)
    assert timers.LimitTimer(1, 2) != timers.KillTimer(1, 2)
    assert timers.LimitTimer(1, 2) != timers.LimitTimer(1, 3)
    assert timers.PassTimer() == timers.PASS != timers.WAKE
    assert decisions.TimedOut(1, 2, 3) != decisions.Requeued(1, 2, 3)
    assert {timers.LimitTimer(1, 2): 1}[timers.LimitTimer(1, 2)] == 1


def test_replace_copies_a_record_with_some_fields_changed() -> None:
    launch = commands.Launch(2, 1, _ALLOC, JobSpec(gpus_per_task=2), 3_600_000)
    later = launch.replace(run=2, time_limit=60_000)
    assert type(later) is commands.Launch
    assert later.fields() == (2, 2, _ALLOC, launch.spec, 60_000, None, None)
    assert launch.run == 1
    with pytest.raises(TypeError, match="no field 'runs'"):
        launch.replace(runs=2)
