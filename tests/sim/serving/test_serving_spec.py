"""The serving description: what it reads, and errors that name the file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.domain.time import HOUR, SECOND
from phalanx.errors import ConfigError
from phalanx.sim.serving.spec import read_serving, read_serving_text

GOOD = """\
sync_seconds: 30
services:
  - name: chat
    gpus: 4
    capacity_rps: 20
    slo_ms: 500
    min_replicas: 2
    max_replicas: 10
    startup_seconds: 90
    load:
      generator: {mean_rps: 100, days: 0.5, amplitude: 0, bursts_per_day: 0}
"""


def test_a_good_file_reads_with_its_defaults() -> None:
    spec = read_serving_text(GOOD, "s.yaml")
    (chat,) = spec.services
    assert spec.sync == 30 * SECOND
    assert (chat.gpus, chat.min_replicas, chat.max_replicas) == (4, 2, 10)
    assert chat.latency.capacity_rps == 20 and chat.latency.slo_s == 0.5
    assert chat.latency.percentile == 0.99 and chat.target_utilization == 0.7
    assert chat.priority_class == "high" and chat.startup == 90 * SECOND
    assert spec.horizon == 12 * HOUR
    # 100 rps at 14 rps per replica (20 x 0.7): 8 replicas of 4 GPUs.
    assert chat.replicas_for(100) == 8 and spec.peak_gpus() == 32


def test_a_csv_load_is_read_next_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "rates.csv").write_text("0,5\n60,7\n")
    path = tmp_path / "serving.yaml"
    path.write_text(
        GOOD.replace(
            "generator: {mean_rps: 100, days: 0.5, amplitude: 0, bursts_per_day: 0}",
            "csv: rates.csv",
        )
    )
    spec = read_serving(str(path))
    assert spec.services[0].load.rates == (5.0, 7.0)


@pytest.mark.parametrize(
    ("old", "new", "line", "field", "message"),
    [
        ("    gpus: 4\n", "", 3, "services[0]", "missing required key 'gpus'"),
        ("max_replicas: 10", "max_replicas: 1", 8, "services[0].max_replicas", "must be >= "),
        ("slo_ms: 500", "slo_ms: fast", 6, "services[0].slo_ms", "expected a number"),
        ("gpus: 4", "gpus: 4\n    colour: red", 5, "services[0].colour", "unknown key"),
        ("min_replicas: 2", "min_replicas: 0", 7, "services[0].min_replicas", "must be >= 1"),
        ("days: 0.5", "days: -1", 11, "services[0].load.generator.days", "must be >= "),
        (
            "load:\n",
            "slo_percentile: 1.5\n    load:\n",
            10,
            "services[0].slo_percentile",
            "must be in",
        ),
        (
            "      generator:",
            "      csv: x.csv\n      generator:",
            11,
            "services[0].load",
            "exactly one",
        ),
    ],
)
def test_errors_name_line_and_field(
    old: str, new: str, line: int, field: str, message: str
) -> None:
    text = GOOD.replace(old, new, 1)
    assert text != GOOD
    with pytest.raises(ConfigError, match=message) as caught:
        read_serving_text(text, "s.yaml")
    assert caught.value.source == "s.yaml"
    assert caught.value.field == field
    assert caught.value.line == line


def test_duplicate_service_names_are_refused() -> None:
    body = GOOD.split("services:\n", 1)[1]
    with pytest.raises(ConfigError, match="duplicate service name 'chat'"):
        read_serving_text(GOOD + body, "s.yaml")
