"""Workload mixes: reading a mix file (errors name file, line and field) and the jobs a mix
makes (seeded, load-scaled, serving as a daily curve of replica jobs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.domain.time import HOUR, MINUTE
from phalanx.errors import ConfigError
from phalanx.sim.mixes import (
    BUILTIN_MIXES,
    SERVING_QOS,
    Mix,
    WorkClass,
    mix_jobs,
    read_mix,
    serving_curve,
)

MIX_YAML = """\
days: 0.5
classes:
  - name: pretrain
    kind: pretrain
    per_day: 8
    nodes: [2, 4]
    gpus: [8]
    hours: [1, 3]
    checkpoint_minutes: 30
    mfu: 0.5
  - name: chat
    kind: serving
    gpus: [2]
    replicas: [1, 5]
    bucket_minutes: 30
"""


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "mix.yaml"
    path.write_text(text)
    return str(path)


def test_a_mix_file_reads_into_its_classes(tmp_path: Path) -> None:
    mix = read_mix(_write(tmp_path, MIX_YAML))
    assert mix.days == 0.5
    assert mix.class_names() == ("pretrain", "chat")
    assert mix.serving_classes() == ("chat",)
    pre = mix.classes[0]
    assert (pre.nodes, pre.gpus, pre.hours, pre.checkpoint_minutes, pre.mfu) == (
        (2, 4),
        (8.0,),
        (1.0, 3.0),
        30.0,
        0.5,
    )
    assert mix.classes[1].replicas == (1, 5)


@pytest.mark.parametrize(
    ("bad", "good", "line", "field", "words"),
    [
        ("per_day: 8", "per_day: lots", 5, "classes[0].per_day", "expected a number"),
        ("kind: serving", "kind: inference", 12, "classes[1].kind", "unknown kind"),
        ("hours: [1, 3]", "hours: [3, 1]", 8, "classes[0].hours", "below low"),
        ("mfu: 0.5", "mfu: 1.5", 10, "classes[0].mfu", "(0, 1]"),
        ("replicas: [1, 5]", "replicas: [1, 5]\n    per_day: 3", 15, "classes[1].per_day",
         "does not apply"),
        ("gpus: [8]", "gpus: [0.5]", 7, "classes[0].gpus", "one-node"),
        ("    per_day: 8\n", "", 3, "classes[0]", "missing required key 'per_day'"),
        ("checkpoint_minutes: 30", "checkpoint_minutes: 30\n    colour: red", 10,
         "classes[0].colour", "unknown key"),
    ],
)  # fmt: skip
def test_a_malformed_mix_names_file_line_and_field(
    tmp_path: Path, bad: str, good: str, line: int, field: str, words: str
) -> None:
    assert bad in MIX_YAML
    path = _write(tmp_path, MIX_YAML.replace(bad, good, 1))
    with pytest.raises(ConfigError) as caught:
        read_mix(path)
    err = caught.value
    assert (err.source, err.line, err.field) == (path, line, field)
    assert words in err.message


def test_jobs_are_seeded_and_load_scales_the_arrivals() -> None:
    mix = BUILTIN_MIXES["gang-heavy"]
    again = mix_jobs(mix, 3)
    assert mix_jobs(mix, 3) == again
    assert mix_jobs(mix, 4) != again
    light, heavy = len(mix_jobs(mix, 3, 0.5)), len(mix_jobs(mix, 3, 2.0))
    assert light < len(again) < heavy
    assert [j.submit for j in again] == sorted(j.submit for j in again)
    pretrain = [j for j in again if j.spec.account == "pretrain"]
    assert pretrain and all(j.spec.nodes_min in (4, 8, 16, 32) for j in pretrain)
    assert all(j.spec.time_limit is not None and j.spec.time_limit >= j.runtime for j in again)


def test_serving_replicas_follow_the_daily_curve() -> None:
    chat = WorkClass("chat", "serving", (2,), replicas=(1, 5), bucket_minutes=60)
    curve = serving_curve(chat, 24 * HOUR, 1.0)
    assert max(curve) == 5 and min(curve) == 1
    # Highest around the peak hour (14:00), lowest twelve hours away.
    assert (curve[13], curve[14], curve[1], curve[2]) == (5, 5, 1, 1)
    jobs = mix_jobs(Mix("m", 1.0, (chat,)), 0)
    assert {j.spec.qos for j in jobs} == {SERVING_QOS}
    assert all(j.spec.time_limit == j.runtime for j in jobs)
    for hour, wanted in enumerate(curve):
        t = hour * HOUR + 30 * MINUTE
        running = sum(1 for j in jobs if j.submit <= t < j.submit + j.runtime)
        assert running == wanted


def test_built_in_mixes_are_what_their_names_say() -> None:
    gangs = mix_jobs(BUILTIN_MIXES["gang-heavy"], 0)
    multi = sum(j.spec.gpu_equivalent * j.runtime for j in gangs if j.spec.nodes_min > 1)
    total = sum(j.spec.gpu_equivalent * j.runtime for j in gangs)
    assert multi / total > 0.9
    small = BUILTIN_MIXES["small-serving"]
    assert small.serving_classes() == ("serving",)
    batch = [j for j in mix_jobs(small, 0) if j.spec.account != "serving"]
    assert max(j.spec.gpu_equivalent for j in batch) <= 8


def test_the_example_mix_reads() -> None:
    example = Path(__file__).parents[2] / "examples" / "mix.yaml"
    mix = read_mix(str(example))
    assert {c.kind for c in mix.classes} == {"pretrain", "finetune", "hpo", "rlhf", "serving"}
    assert mix_jobs(mix, 0)
