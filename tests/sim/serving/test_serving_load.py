"""Request-rate series: the seeded diurnal generator and the CSV reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.domain.time import HOUR, MINUTE, SECOND
from phalanx.errors import ConfigError
from phalanx.sim.serving.load import Diurnal, diurnal, read_rate_csv


def test_one_seed_gives_one_series_and_another_seed_another() -> None:
    params = Diurnal(mean_rps=100, days=2, bursts_per_day=4, seed=3)
    assert diurnal(params) == diurnal(params)
    assert diurnal(params).rates != diurnal(Diurnal(100, 2, bursts_per_day=4, seed=4)).rates


def test_the_day_peaks_at_peak_hour_and_bottoms_twelve_hours_later() -> None:
    series = diurnal(Diurnal(mean_rps=100, days=1, amplitude=0.5, peak_hour=14, bursts_per_day=0))
    assert series.rate_at(14 * HOUR) == pytest.approx(150)
    assert series.rate_at(2 * HOUR) == pytest.approx(50)
    assert series.peak == pytest.approx(150)
    assert series.rate_at(24 * HOUR) == 0.0  # past the end


def test_bursts_multiply_the_base_rate() -> None:
    flat = Diurnal(mean_rps=100, days=1, amplitude=0, bursts_per_day=6, burst_factor=3, seed=1)
    rates = set(diurnal(flat).rates)
    assert rates == {100.0, 300.0}


def test_csv_series_steps_and_ends_one_step_after_its_last_row(tmp_path: Path) -> None:
    path = tmp_path / "rates.csv"
    path.write_text("time_s,rps\n0,10\n60,20\n120,5\n")
    series = read_rate_csv(str(path))
    assert series.rate_at(30 * SECOND) == 10
    assert series.rate_at(1 * MINUTE) == 20
    assert series.end == 3 * MINUTE
    assert series.rate_at(3 * MINUTE) == 0.0


@pytest.mark.parametrize(
    ("text", "line", "field", "message"),
    [
        ("0,10\n60,abc\n", 2, "rps", "not a number"),
        ("0,10\n0,5\n", 2, "time_s", "times must increase"),
        ("0,-1\n", 1, "rps", "must not be negative"),
    ],
)
def test_csv_errors_name_file_line_and_field(
    tmp_path: Path, text: str, line: int, field: str, message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as caught:
        read_rate_csv(str(path))
    assert (caught.value.source, caught.value.line, caught.value.field) == (str(path), line, field)
