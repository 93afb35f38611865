"""Plots are written as real PNG files, quickly, without warnings."""

from __future__ import annotations

from pathlib import Path

from phalanx.domain.time import HOUR, SECOND
from phalanx.sim.plots import write_plots
from phalanx.sim.records import JobRecord, RunRecord, Segment
from phalanx.testing import large_run

PNG = b"\x89PNG\r\n\x1a\n"


def small_run(policy: str, shift: int) -> RunRecord:
    jobs, segments, timeline = [], [], []
    for k in range(40):
        submit = k * HOUR
        start = submit + shift * k * SECOND
        end = start + 3 * HOUR
        jobs.append(
            JobRecord(
                job_id=k,
                account="a",
                user="u",
                gpus=4.0,
                submit=submit,
                runtime_ms=3 * HOUR,
                first_start=start,
                end=end,
            )
        )
        segments.append(Segment(k, k % 5, start, end, 4.0))
    level = 0.0
    events = sorted([(j.first_start or 0, 4.0) for j in jobs] + [(j.end or 0, -4.0) for j in jobs])
    for t, delta in events:
        level += delta
        timeline.append((t, level))
    jobs.append(
        JobRecord(
            job_id=99,
            account="a",
            user="u",
            gpus=1.0,
            submit=0,
            runtime_ms=1,
            rejected="never fits",
        )
    )
    return RunRecord(
        policy=policy,
        total_gpus=40,
        node_count=5,
        jobs=jobs,
        alloc_timeline=timeline,
        segments=segments,
    )


def assert_png(path: str) -> None:
    data = Path(path).read_bytes()
    assert data[:8] == PNG and len(data) > 1000


def test_write_plots_writes_pngs(tmp_path: Path) -> None:
    runs = {"fifo": small_run("fifo", 10), "sched/backfill": small_run("sched/backfill", 0)}
    paths = write_plots(str(tmp_path / "plots"), runs)
    names = [Path(p).name for p in paths]
    assert names == [
        "utilization.png",
        "wait_cdf.png",
        "gantt_fifo.png",
        "gantt_sched-backfill.png",
    ]
    for p in paths:
        assert_png(p)


def test_write_plots_copes_with_an_empty_run(tmp_path: Path) -> None:
    empty = RunRecord(policy="none", total_gpus=8, node_count=1, jobs=[])
    for p in write_plots(str(tmp_path), {"none": empty}):
        assert_png(p)


def test_write_plots_draws_a_large_run(tmp_path: Path) -> None:
    # How long it takes is measured by bench/sim_report.py (target: under 5 s).
    run = large_run()
    paths = write_plots(str(tmp_path), {"big": run})
    assert paths
    for p in paths:
        assert_png(p)
