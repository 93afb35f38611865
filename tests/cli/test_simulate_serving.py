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


QUEUES = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: all}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu, memory]
    flavors:
    - name: gpu
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 64}
      - {name: cpu, nominalQuota: 100000}
      - {name: memory, nominalQuota: 1Ei}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: default, namespace: chat}
spec: {clusterQueue: all}
"""


def test_queues_that_admit_no_training_job_still_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The replicas have a LocalQueue, the training jobs' namespaces none: they wait
    forever. The run used never to end (the priority recalculation's timer stays set while
    the queue is not empty); it ends with the load and reports them unfinished."""
    serving = tmp_path / "serving.yaml"
    serving.write_text(SERVING)
    queues = tmp_path / "queues.yaml"
    queues.write_text(QUEUES)
    argv = ["simulate-serving", "--generate", "0.1", "--limit", "10", "--nodes", "8"]
    argv += ["--serving", str(serving), "--queues", str(queues), "--setup", "phalanx"]
    assert main([*argv, "--json", str(tmp_path / "s.json")]) == 0
    figures = json.loads((tmp_path / "s.json").read_text())["setups"]["phalanx"]
    assert figures["training_jobs"] == 10 and figures["training_unfinished"] == 10
    assert figures["slo_attainment"] > 0.5 and figures["serving_gpu_hours"] > 0


def test_replicas_no_queue_admits_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serving = tmp_path / "serving.yaml"
    serving.write_text(SERVING)
    queues = Path(__file__).parents[2] / "examples" / "queues.yaml"
    argv = ["simulate-serving", "--generate", "0.1", "--nodes", "8", "--serving", str(serving)]
    assert main([*argv, "--queues", str(queues)]) == 2
    err = capsys.readouterr().err
    assert "services[0]" in err and "no ClusterQueue admits the replicas" in err


def test_pools_are_rows_of_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    serving = tmp_path / "serving.yaml"
    serving.write_text(SERVING)
    argv = ["simulate-serving", "--generate", "0.25", "--limit", "30", "--nodes", "8"]
    argv += ["--serving", str(serving), "--json", str(tmp_path / "s.json")]
    assert main([*argv, "--pool", "guaranteed:16", "--pool", "static:16"]) == 0
    body = json.loads((tmp_path / "s.json").read_text())
    assert list(body["setups"]) == ["guaranteed:16", "static:16"]
    assert body["setups"]["static:16"]["training_preemptions"] == 0
    for figures in body["setups"].values():
        assert figures["training_unfinished"] == 0 and figures["serving_gpu_hours"] > 0


@pytest.mark.parametrize("pool", ["guaranteed", "static:100000", "elastic:8"])
def test_bad_pools_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pool: str
) -> None:
    serving = tmp_path / "serving.yaml"
    serving.write_text(SERVING)
    argv = ["simulate-serving", "--generate", "0.1", "--nodes", "8", "--serving", str(serving)]
    assert main([*argv, "--pool", pool]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("phalanx: error:") and "--pool" in err and "\n" not in err
