"""Per-ClusterQueue figures on hand-built runs, worked out by hand; and the Philly queues
generator (examples/philly_queues.py) read back by the queue reader."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from phalanx.config.queues import queues_from_yaml
from phalanx.domain.time import HOUR, SECOND
from phalanx.sim.metrics import summarize, to_json_dict
from phalanx.sim.records import JobRecord, RunRecord

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "philly_queues.py"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("philly_queues", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


philly_queues = _generator()
QUEUES = queues_from_yaml(philly_queues.queues_yaml({"a": 4, "b": 4}))


def job(job_id: int, account: str, gpus: float, submit: int, **kw: Any) -> JobRecord:
    return JobRecord(
        job_id=job_id,
        account=account,
        user="u",
        gpus=gpus,
        submit=submit,
        runtime_ms=HOUR,
        state="COMPLETED",
        **kw,
    )


def test_violation_borrowing_and_reclaims_by_hand() -> None:
    """Queues a and b, 4 GPUs of nominal quota each, 8 GPUs in all. b's 8-GPU job runs from
    0 to 2 h, borrowing 4; a asks 2 GPUs at 1 h and gets them at 2 h, when b's job is
    preempted for it (a reclaim), while b's 6-GPU job runs from 2 h to 3 h, borrowing 2.
    So a's guarantee is violated for 1 h on 2 GPUs; b borrows 4 x 2 + 2 x 1 GPU-hours."""
    b = job(1, "b", 8.0, 0, first_start=0, end=2 * HOUR, held=[(0, 2 * HOUR)], preempted_for=[2])
    b2 = job(3, "b", 6.0, 0, first_start=2 * HOUR, end=3 * HOUR, held=[(2 * HOUR, 3 * HOUR)])
    a = job(2, "a", 2.0, HOUR, first_start=2 * HOUR, end=3 * HOUR, held=[(2 * HOUR, 3 * HOUR)])
    run = RunRecord(policy="p", total_gpus=8, node_count=1, jobs=[b, a, b2], queues=QUEUES)
    figures = summarize(run).queues
    assert figures["a"]["guarantee_violation_gpu_hours"] == pytest.approx(2.0)
    assert figures["a"]["borrowed_gpu_hours"] == 0.0
    assert figures["a"]["reclaims"] == 1 and figures["b"]["reclaims"] == 0
    assert figures["b"]["borrowed_gpu_hours"] == pytest.approx(4 * 2 + 2 * 1)
    assert figures["b"]["guarantee_violation_gpu_hours"] == 0.0
    assert figures["a"]["wait_mean_s"] == pytest.approx(HOUR / SECOND)
    assert figures["a"]["jct_mean_s"] == pytest.approx(2 * HOUR / SECOND)
    assert figures["a"]["nominal_gpus"] == 4.0 and figures["b"]["jobs"] == 2


def test_demand_beyond_the_nominal_quota_is_not_a_violation() -> None:
    """a waits 1 h with 6 GPUs asked while it uses none: only its nominal 4 count."""
    a = job(1, "a", 6.0, 0, first_start=HOUR, end=2 * HOUR, held=[(HOUR, 2 * HOUR)])
    run = RunRecord(policy="p", total_gpus=8, node_count=1, jobs=[a], queues=QUEUES)
    assert summarize(run).queues["a"]["guarantee_violation_gpu_hours"] == pytest.approx(4.0)


def test_the_json_has_queues_only_when_the_run_had_them() -> None:
    a = job(1, "a", 1.0, 0, first_start=0, end=HOUR, held=[(0, HOUR)])
    with_queues = to_json_dict(summarize(RunRecord("p", 8, 1, [a], queues=QUEUES)))
    assert set(with_queues["queues"]) == {"a", "b"}
    assert "queues" not in to_json_dict(summarize(RunRecord("p", 8, 1, [a])))


def test_generator_splits_gpus_by_gpu_hours_and_writes_readable_queues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "philly.csv"
    trace.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 07:01:55,3600,3,0,vc1\n"
        "2017-10-09 07:02:55,3600,1,0,vc2\n"
        "2017-10-09 07:03:55,0,8,0,vc3\n"
    )
    assert philly_queues.main([str(trace), "--gpus", "10"]) == 0
    queues = queues_from_yaml(capsys.readouterr().out)
    nominal = {
        name: sum(q.nominal for _, q in cq.quotas() if q.name == "nvidia.com/gpu") // 1000
        for name, cq in queues.cluster_queues.items()
    }
    assert nominal == {"vc1": 8, "vc2": 2, "vc3": 0}  # 7.5 and 2.5: the tie goes by name
    assert {cq.cohort for cq in queues.cluster_queues.values()} == {"philly"}
    assert all(
        cq.preemption.reclaim_within_cohort.value == "Any" for cq in queues.cluster_queues.values()
    )
    assert queues.local_queues[("vc2", "default")].cluster_queue == "vc2"
    # The same shares as Volcano Queues: weight = the share (at least 1), reclaimable, and
    # neither guarantee (it would reserve the GPUs, forbidding borrowing) nor capability.
    volcano = queues.volcano_queues
    assert {name: q.weight for name, q in volcano.items()} == {"vc1": 8, "vc2": 2, "vc3": 1}
    assert all(q.reclaimable for q in volcano.values())
    assert all(
        not q.guarantee and not q.capability and q.deserved is None for q in volcano.values()
    )


def test_generator_refuses_a_bad_row_naming_its_line(tmp_path: Path) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text("timestamp,duration,num_gpus,gpu_time,cluster\nx,oops,1,0,vc1\n")
    with pytest.raises(SystemExit) as info:
        philly_queues.main([str(trace), "--gpus", "8"])
    assert info.value.code == 2


def test_table_sums_the_queues_of_each_policy() -> None:
    queue = {"guarantee_violation_gpu_hours": 1.5, "borrowed_gpu_hours": 2.0, "reclaims": 3}
    result = {
        "policies": {
            "phalanx": {
                "jct_mean_s": 90.0,
                "wait_mean_s": 120.0,
                "queues": {"a": queue, "b": {**queue, "guarantee_violation_gpu_hours": 0.0}},
            }
        }
    }
    rows = philly_queues.table(result).splitlines()
    assert rows[2] == "| phalanx | 90.0 s | 2.0 min | 1.5 | 4.0 | 6 | 1 of 2 |"


def test_the_generated_volcano_queues_drive_the_volcano_profile() -> None:
    """The generator's file read by ``volcano``: jobs go to the Queue named as their account,
    a queue borrows the idle cluster, and the other takes its weight's share back by reclaim
    (12 and 4 GPUs of 16, by weights 3 and 1)."""
    import dataclasses

    from phalanx.domain.state import JobState
    from phalanx.testing import EngineDriver, make_job, small_cluster

    queues = queues_from_yaml(philly_queues.queues_yaml({"a": 3, "b": 1}))
    d = EngineDriver(dataclasses.replace(small_cluster(nodes=2, gpus=8), queues=queues), "volcano")
    b = [d.submit(make_job(gpus=1, account="b", time_limit=HOUR))[0] for _ in range(16)]
    d.settle()
    assert sum(d.state(i) is JobState.RUNNING for i in b) == 16  # borrowing all of it
    a = [d.submit(make_job(gpus=1, account="a", time_limit=HOUR))[0] for _ in range(16)]
    d.run(d.now + HOUR // 2)
    held = [sum(d.state(i) is JobState.RUNNING for i in ids) for ids in (a, b)]
    assert held == [12, 4]
