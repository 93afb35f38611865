"""``phalanx simulate-serving`` end to end, in-process through ``main``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from phalanx.cli.main import main

SERVING = """\
sync_seconds: 30
services:
  - name: chat
    gpus: 8
    capacity_rps: 10
    slo_ms: 500
    min_replicas: 1
    max_replicas: 3
    target_utilization: 0.5
    startup_seconds: 60
    load:
      generator: {mean_rps: 8, days: 0.25, amplitude: 0.5, peak_hour: 3,
                  bursts_per_day: 8, burst_factor: 2, seed: 1}
"""
PNG = b"\x89PNG\r\n\x1a\n"


def test_three_setups_table_json_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serving = tmp_path / "serving.yaml"
    serving.write_text(SERVING)
    out = tmp_path / "out"
    status = main(
        [
            "simulate-serving",
            "--generate", "0.25",
            "--limit", "40",
            "--nodes", "8",
            "--serving", str(serving),
            "--json", str(tmp_path / "s.json"),
            "--out", str(out),
        ]
    )  # fmt: skip
    assert status == 0
    printed = capsys.readouterr().out
    for name in ("split", "preempt", "phalanx"):
        assert name in printed
    body = json.loads((tmp_path / "s.json").read_text())
    assert set(body["setups"]) == {"split", "preempt", "phalanx"}
    for figures in body["setups"].values():
        assert 0 < figures["slo_attainment"] <= 1
        assert figures["serving_gpu_hours"] > 0
        assert figures["training_jobs"] == 40
    assert body["setups"]["split"]["serving_nodes"] >= 1
    assert body["services"][0]["name"] == "chat"
    assert (out / "serving.png").read_bytes().startswith(PNG)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (SERVING.replace("slo_ms: 500", "slo_ms: -1"), "services[0].slo_ms"),
        (SERVING.replace("gpus: 8", "gpus: 16"), "services[0].gpus"),
        (
            SERVING.replace("startup_seconds", "priority_class: gold\n    startup_seconds"),
            "services[0].priority_class",
        ),
    ],
)
def test_bad_serving_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, needle: str
) -> None:
    serving = tmp_path / "serving.yaml"
    serving.write_text(text)
    status = main(
        ["simulate-serving", "--generate", "0.1", "--nodes", "4", "--serving", str(serving)]
    )
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("phalanx: error:") and needle in err and "\n" not in err


def test_queues_are_refused_for_now(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    serving = tmp_path / "serving.yaml"
    serving.write_text(SERVING)
    queues = Path(__file__).parents[2] / "examples" / "queues.yaml"
    argv = ["simulate-serving", "--generate", "0.1", "--nodes", "8", "--serving", str(serving)]
    assert main([*argv, "--queues", str(queues)]) == 2
    assert "--queues" in capsys.readouterr().err
