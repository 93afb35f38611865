import itertools
from collections import Counter
from pathlib import Path

import pytest

from phalanx.domain.time import MINUTE, SECOND
from phalanx.errors import TraceError
from phalanx.sim.traces import read_trace
from phalanx.sim.traces.options import TraceOptions
from phalanx.sim.traces.philly import CHECKPOINT_INTERVAL, read_philly

REAL = Path(__file__).resolve().parents[3] / "shared" / "traces" / "philly" / "philly.csv"
HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"
ROWS = [
    "2017-10-09 07:01:55,66.0,1,66.0,11cb48",  # line 2
    "2017-10-09 06:13:03,2951.0,12,35412.0,6214e9",  # line 3: the earliest
    "2017-10-09 07:01:55,0.0,16,0.0,11cb48",  # line 4: same second as line 2
    "2017-10-09 08:13:04,10.5,2,21.0,b436b2",  # line 5
]


def write(tmp_path: Path, rows: list[str], header: str = HEADER) -> str:
    path = tmp_path / "philly.csv"
    path.write_text(header + "\n".join(rows) + "\n\n")  # a trailing blank line, as in the file
    return str(path)


def test_jobs_are_sorted_rebased_and_mapped(tmp_path: Path) -> None:
    jobs = read_philly(write(tmp_path, ROWS))
    assert [job.line for job in jobs] == [3, 2, 4, 5]
    assert [job.submit for job in jobs] == [0, 2_932_000, 2_932_000, 7_201_000]
    first = jobs[0]
    assert (first.spec.account, first.spec.user) == ("6214e9", "6214e9")
    assert (first.spec.nodes_min, first.spec.nodes_max, first.spec.gpus_per_node) == (2, 2, 6)
    assert first.runtime == 2951 * SECOND
    assert first.trace_id == first.spec.name == "philly-1"
    assert jobs[2].runtime == SECOND  # a duration of 0 still occupies the GPUs
    assert (jobs[2].spec.nodes_min, jobs[2].spec.gpus_per_task) == (2, 8)
    assert jobs[3].runtime == 10_500
    for job in jobs:
        assert job.spec.checkpoint_interval == CHECKPOINT_INTERVAL == 30 * MINUTE
        assert job.spec.time_limit is not None and job.spec.time_limit >= job.runtime
        assert job.spec.cpus_per_task == max(1, job.spec.gpus_per_task)


def test_options(tmp_path: Path) -> None:
    path = write(tmp_path, ROWS)
    plain = read_philly(path)
    halved = read_philly(path, TraceOptions(load=2.0))
    assert [job.submit for job in halved] == [job.submit // 2 for job in plain]
    assert [job.runtime for job in halved] == [job.runtime for job in plain]
    assert [job.line for job in read_philly(path, TraceOptions(limit=2))] == [3, 2]
    windowed = read_philly(path, TraceOptions(window=(2_932_000, 7_201_000)))
    assert [(job.line, job.submit) for job in windowed] == [(2, 0), (4, 0)]
    assert read_philly(path, TraceOptions(seed=5)) == read_philly(path, TraceOptions(seed=5))


@pytest.mark.parametrize(
    ("row", "field", "needle"),
    [
        ("2017-13-09 07:01:55,66.0,1,66.0,11cb48", "timestamp", "not a timestamp"),
        ("2017-10-09 07:01:55,66.0,two,66.0,11cb48", "num_gpus", "not a number"),
        ("2017-10-09 07:01:55,66.0,-1,66.0,11cb48", "num_gpus", "negative"),
        ("2017-10-09 07:01:55,66.0,1.5,66.0,11cb48", "num_gpus", "whole"),
        ("2017-10-09 07:01:55,nan,1,66.0,11cb48", "duration", "finite"),
        ("2017-10-09 07:01:55,-3,1,66.0,11cb48", "duration", "negative"),
        ("2017-10-09 07:01:55,66.0,1", "cluster", "missing"),
        # 10^400 GPUs passed int() and overflowed the simulator's float GPU sums.
        ("2017-10-09 07:01:55,66.0,1" + "0" * 400 + ",66.0,11cb48", "num_gpus", "finite"),
        ("2017-10-09 07:01:55,66.0,9007199254740994,66.0,11cb48", "num_gpus", "too large"),
        ("2017-10-09 07:01:55,1e300,1,66.0,11cb48", "duration", "beyond 10^12 seconds"),
    ],
)
def test_malformed_rows_name_line_and_field(
    tmp_path: Path, row: str, field: str, needle: str
) -> None:
    path = write(tmp_path, [ROWS[0], ROWS[1], row])
    with pytest.raises(TraceError) as info:
        read_philly(path)
    error = info.value
    assert (error.source, error.line, error.field) == (path, 4, field)
    assert needle in error.message
    assert f"{path}:4" in str(error) and f"'{field}'" in str(error)


def test_missing_column_and_file(tmp_path: Path) -> None:
    path = write(tmp_path, ROWS, header="timestamp,duration,gpu_time,cluster\n")
    with pytest.raises(TraceError) as info:
        read_philly(path)
    assert (info.value.line, info.value.field) == (1, "num_gpus")
    missing = str(tmp_path / "nope.csv")
    with pytest.raises(TraceError, match="no such trace file") as info:
        read_philly(missing)
    assert info.value.source == missing


def test_timestamps_with_offsets_are_utc(tmp_path: Path) -> None:
    rows = ["2017-10-09 07:00:00,1,1,1,a", "2017-10-09 09:00:00+02:00,1,1,1,a"]
    assert [job.submit for job in read_philly(write(tmp_path, rows))] == [0, 0]


@pytest.mark.skipif(not REAL.exists(), reason="shared Philly trace not present")
def test_the_real_trace() -> None:
    jobs = read_trace(str(REAL))
    assert len(jobs) == 82_247
    assert jobs[0].submit == 0
    assert all(a.submit <= b.submit for a, b in itertools.pairwise(jobs))
    gpus = Counter(job.spec.min_gpus for job in jobs)
    assert gpus[1] == 76_627
    assert (gpus[2], gpus[4], gpus[8], gpus[16], gpus[128]) == (1_818, 1_870, 1_643, 199, 3)
    assert len({job.spec.account for job in jobs}) == 15
    assert all(
        job.spec.time_limit is not None and job.spec.time_limit >= job.runtime for job in jobs
    )
