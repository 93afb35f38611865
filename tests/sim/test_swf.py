from pathlib import Path

import pytest

from phalanx.domain.time import SECOND
from phalanx.errors import TraceError
from phalanx.sim.traces import read_trace
from phalanx.sim.traces.options import TraceOptions
from phalanx.sim.traces.swf import load_swf, read_swf

LINES = [
    "; Version: 2.2",  # line 1
    "; MaxProcs: 128",
    "1 100 5 3600 16 -1 -1 16 7200 -1 1 3 1 -1 1 -1 -1 -1",  # line 3: asks 2 h
    "2 10 0 0 -1 -1 -1 4 -1 -1 1 -1 1 -1 1 -1 -1 -1",  # line 4: runtime 0, no limit
    "",
    "3 50 0 -1 8 -1 -1 8 600 -1 5 3 1 -1 1 -1 -1 -1",  # line 6: unknown runtime: skipped
    "4 70 0 60 12 -1 -1 -1 -1 -1 1 7 1 -1 1 -1 -1 -1",  # line 7: allocated only
    "5 80 0 60 0 -1 -1 0 -1 -1 1 7 1 -1 1 -1 -1 -1",  # line 8: no processors: skipped
]


def write(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "log.swf"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_jobs_are_read_and_odd_ones_skipped(tmp_path: Path) -> None:
    path = write(tmp_path, LINES)
    loaded = load_swf(path)
    assert loaded.skipped == 2
    jobs = loaded.jobs
    assert [(job.trace_id, job.submit, job.line) for job in jobs] == [
        ("swf-2", 0, 4),
        ("swf-4", 60 * SECOND, 7),
        ("swf-1", 90 * SECOND, 3),
    ]
    two, four, one = jobs
    assert (one.spec.nodes_min, one.spec.gpus_per_node, one.spec.time_limit) == (2, 8, 7200_000)
    assert (one.spec.account, one.spec.user, one.runtime) == ("u3", "u3", 3600 * SECOND)
    assert (two.runtime, two.spec.account, two.spec.min_gpus) == (SECOND, "unknown", 4)
    assert two.spec.time_limit is not None and two.spec.time_limit >= two.runtime
    assert (four.spec.nodes_min, four.spec.gpus_per_node) == (2, 6)
    assert read_trace(path) == jobs


def test_options(tmp_path: Path) -> None:
    path = write(tmp_path, LINES)
    assert [job.submit for job in read_swf(path, TraceOptions(load=2.0))] == [
        0,
        30 * SECOND,
        45 * SECOND,
    ]
    assert [job.trace_id for job in read_swf(path, TraceOptions(limit=2))] == ["swf-2", "swf-4"]
    assert [job.trace_id for job in read_swf(path, TraceOptions(window=(60_000, 61_000)))] == [
        "swf-4"
    ]


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("6 90 0 60 8 -1 -1 8 -1 -1 1 3 1 -1 1", "partition"),  # the first missing
        ("6 90 0 sixty 8 -1 -1 8 -1 -1 1 3 1 -1 1 -1 -1 -1", "run_time"),
        ("6 90 0 60 8 -1 -1 2.5 -1 -1 1 3 1 -1 1 -1 -1 -1", "requested_processors"),
        ("6 -90 0 60 8 -1 -1 8 -1 -1 1 3 1 -1 1 -1 -1 -1", "submit_time"),
        ("6 90 0 1e300 8 -1 -1 8 -1 -1 1 3 1 -1 1 -1 -1 -1", "run_time"),  # past int64 ms
    ],
)
def test_malformed_lines_name_line_and_field(tmp_path: Path, line: str, field: str) -> None:
    path = write(tmp_path, [*LINES[:4], line])
    with pytest.raises(TraceError) as info:
        read_swf(path)
    assert (info.value.source, info.value.line, info.value.field) == (path, 5, field)


def test_gzipped_logs_are_read(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "log.swf.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("\n".join(LINES) + "\n")
    assert len(read_trace(str(path))) == 3
