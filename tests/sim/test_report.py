"""The comparison table, its markdown twin and the JSON file."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from phalanx.sim.metrics import SIZE_CLASSES, PolicyMetrics, SizeWait, to_json_dict
from phalanx.sim.report import (
    format_duration_s,
    markdown_table,
    print_table,
    render_table,
    write_json,
)


def metrics(policy: str, **kw: Any) -> PolicyMetrics:
    base = PolicyMetrics(
        policy=policy,
        jobs=82_000,
        rejected=3,
        unfinished=0,
        eta_sched=0.9,
        theta_overhead=0.05,
        utilization=0.8,
        jct_mean_s=3600.0,
        jct_p50_s=600.0,
        jct_p95_s=86_400.0,
        jct_p99_s=200_000.0,
        wait_mean_s=45.0,
        wait_p95_s=7200.0,
        bounded_slowdown_mean=3.0,
        makespan_s=30 * 86_400.0,
        compute_gpu_hours=1e6,
        gang_wait_gpu_hours=12_345.0,
        launch_gpu_hours=10.0,
        evict_gpu_hours=5.0,
        cleanup_gpu_hours=7.0,
        lost_gpu_hours=23_456.0,
        preempt_penalty_gpu_hours=23_461.0,
        productive_gpu_hours=4e5,
        preemptions=1234,
        node_failures=2,
        restarts=2,
        deadlocks=0,
        fairness_jain=0.876,
        sim_wall_s=12.5,
        jobs_per_s=6560.0,
        passes=99_999,
    )
    return dataclasses.replace(base, **kw)


RESULTS = {
    "k8s-default": metrics("k8s-default", eta_sched=0.7, deadlocks=12, wait_mean_s=900.0),
    "phalanx-topology": metrics("phalanx-topology", eta_sched=0.95, fairness_jain=0.91),
}


def test_the_size_table_bolds_the_shortest_wait_of_each_class() -> None:
    waits = {
        "k8s-default": summarize_like(mean_9_64=7200.0),
        "phalanx": summarize_like(mean_9_64=600.0),
    }
    size = markdown_table(waits).rstrip("\n").split("\n\n")[2].split("\n")
    k8s, phalanx = size[2], size[3]
    assert "| **10.0 min** |" in phalanx and "| 2.0 h |" in k8s


def summarize_like(mean_9_64: float) -> PolicyMetrics:
    by_size = {k: SizeWait(jobs=1, mean_s=1.0, p95_s=1.0, max_s=1.0) for k in SIZE_CLASSES}
    by_size["9-64"] = SizeWait(jobs=1, mean_s=mean_9_64, p95_s=mean_9_64, max_s=mean_9_64)
    return metrics("x", wait_by_size=by_size)


def test_format_duration_picks_a_readable_unit() -> None:
    assert format_duration_s(12.34) == "12.3 s"
    assert format_duration_s(90) == "1.5 min"
    assert format_duration_s(5400) == "1.5 h"


def test_markdown_has_a_header_a_rule_and_one_row_per_policy() -> None:
    md = markdown_table(RESULTS)
    main, title, size = md.rstrip("\n").split("\n\n")
    assert title.startswith("Queue wait by job size (GPUs)")
    size_lines = size.split("\n")
    assert len(size_lines) == 2 + len(RESULTS)
    assert size_lines[0].startswith("| policy | 1 mean | 1 p95 | 2-4 mean |")
    assert "| idle pend | extra leaves |" in size_lines[0]
    lines = main.split("\n")
    assert len(lines) == 2 + len(RESULTS)
    widths = {line.count("|") for line in lines}
    assert len(widths) == 1, "every row has as many cells as the header"
    assert lines[0].startswith("| policy | jobs | eta sched |")
    assert "makespan" in lines[0] and "deadlock" in lines[0]
    assert set(lines[1]) <= set("|:-")
    k8s, phalanx = lines[2], lines[3]
    assert k8s.startswith("| k8s-default |") and phalanx.startswith("| phalanx-topology |")
    assert "**95.00%**" in phalanx and "70.00%" in k8s and "**70.00%**" not in k8s
    assert "| **45.0 s** |" in phalanx and "| 15.0 min |" in k8s
    # Equal values are all best; the job count is never highlighted.
    assert "**720.0 h**" in k8s and "**720.0 h**" in phalanx
    assert "**82,000**" not in md


def test_single_policy_is_not_highlighted() -> None:
    assert "**" not in markdown_table({"only": metrics("only")})


def test_rich_table_fits_a_terminal_and_bolds_the_best() -> None:
    table = render_table(RESULTS, title="Philly, 82k jobs")
    assert table.row_count == 2
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None, record=True)
    print_table(RESULTS, title="Philly, 82k jobs", console=console)
    text = out.getvalue()
    assert "phalanx-topology" in text and "Philly, 82k jobs" in text
    assert "queue wait by job size" in text
    assert max(len(line) for line in text.splitlines()) <= 160


def test_write_json_has_policies_with_their_figures_and_extra(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    write_json(str(path), RESULTS, extra={"trace": "philly", "seed": 1})
    text = path.read_text()
    doc = json.loads(text)
    assert doc["trace"] == "philly" and doc["seed"] == 1
    assert sorted(doc["policies"]) == sorted(RESULTS)
    assert doc["policies"]["k8s-default"] == to_json_dict(RESULTS["k8s-default"])
    assert text == json.dumps(doc, sort_keys=True, indent=2) + "\n"


def test_write_json_refuses_an_extra_that_would_hide_the_policies(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_json(str(tmp_path / "x.json"), RESULTS, extra={"policies": {}})
