"""A small end-to-end run: a burst scales the replicas up, they preempt training, the burst
ends, the replicas go and training takes the GPUs back; and the three set-ups side by side."""

from __future__ import annotations

import bisect

import pytest

from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import HOUR, MINUTE, SECOND, Instant
from phalanx.engine.decisions import Cancelled
from phalanx.errors import ConfigError
from phalanx.policies.catalog import profile
from phalanx.sim.serving.compare import ServingResult, run_serving_setup, serving_first
from phalanx.sim.serving.latency import LatencyModel
from phalanx.sim.serving.load import RateSeries
from phalanx.sim.serving.run import ServiceTimeline, ServingSimulator
from phalanx.sim.serving.scaler import Observation
from phalanx.sim.serving.spec import ServiceSpec, ServingSpec
from phalanx.sim.workload import TraceJob

BURST = (2 * HOUR, 3 * HOUR)


def serving(gpus: int = 8) -> ServingSpec:
    """4 rps (one replica at 10 rps x 0.5), a burst of 18 rps (four) from 2 h to 3 h, 6 h."""
    load = RateSeries((0, BURST[0], BURST[1]), (4.0, 18.0, 4.0), 6 * HOUR)
    chat = ServiceSpec(
        name="chat",
        gpus=gpus,
        latency=LatencyModel(capacity_rps=10, slo_s=0.5),
        min_replicas=1,
        max_replicas=4,
        target_utilization=0.5,
        priority_class="high",
        startup=60 * SECOND,
        load=load,
    )
    return ServingSpec((chat,), sync=15 * SECOND)


def training(jobs: int = 3) -> list[TraceJob]:
    """``jobs`` 8-GPU jobs of 5 h from the start, checkpointing every 30 minutes."""
    spec = JobSpec(gpus_per_task=8, time_limit=12 * HOUR, checkpoint_interval=30 * MINUTE)
    return [TraceJob(i * SECOND, spec, 5 * HOUR, trace_id=str(i)) for i in range(jobs)]


def run(setup: str, nodes: int = 4, jobs: int = 3) -> ServingResult:
    return run_serving_setup(setup, regular_cluster(nodes, 8, 4), training(jobs), serving())


def value_at(points: list[tuple[Instant, float]], at: Instant) -> float:
    return points[bisect.bisect_right([t for t, _ in points], at) - 1][1]


def ready_at(line: ServiceTimeline, at: Instant) -> int:
    return line.ready[bisect.bisect_right(line.at, at) - 1]


@pytest.mark.parametrize("setup", ["preempt", "phalanx"])
def test_a_burst_takes_gpus_from_training_and_gives_them_back(setup: str) -> None:
    result = run(setup)
    line = result.services["chat"]
    # Before the burst one replica serves beside all of training (3 x 8 GPUs).
    assert ready_at(line, BURST[0] - MINUTE) == 1
    assert value_at(result.training_gpus, BURST[0] - MINUTE) == 24
    # Within the burst four replicas serve: training was preempted off three nodes.
    assert ready_at(line, BURST[0] + 10 * MINUTE) == 4
    assert value_at(result.training_gpus, BURST[0] + 10 * MINUTE) == 0
    assert result.figures.training_preemptions == 3
    # After the burst (and the 5-minute scale-down window) training has its GPUs back.
    assert ready_at(line, BURST[1] + 10 * MINUTE) == 1
    assert value_at(result.training_gpus, BURST[1] + 10 * MINUTE) == 24
    f = result.figures
    assert f.training_unfinished == 0 and f.training_jobs == 3
    # The burst's first minutes (scale-up and model load) miss the SLO, the rest meets it.
    assert 0.9 < f.slo_attainment < 1.0
    burst = [a for at, a in zip(line.at, line.attainment, strict=True) if at < BURST[0] + MINUTE]
    assert min(burst) < 0.5
    assert f.serving_busy_gpu_hours < f.serving_gpu_hours


def test_checkpoint_aware_preemption_loses_no_work_and_plain_preemption_does() -> None:
    plain, aware = run("preempt").figures, run("phalanx").figures
    # Preempted 30 minutes after a checkpoint, each of the 3 victims loses its 8 GPUs x the
    # time since (the burst starts at 2 h, on a checkpoint boundary, plus the scale-up delay).
    assert plain.training_lost_gpu_hours > 0
    assert aware.training_lost_gpu_hours == 0
    assert aware.training_jct_mean_s < plain.training_jct_mean_s


def test_the_static_split_keeps_serving_nodes_that_training_never_gets() -> None:
    # Six training jobs on 8 nodes: beside one replica all run at once on the shared
    # cluster; the split keeps 4 nodes for the burst's 4 replicas, so two jobs wait 5 h.
    split = run("split", nodes=8, jobs=6).figures
    shared = run("phalanx", nodes=8, jobs=6).figures
    assert split.serving_nodes == 4
    assert split.training_preemptions == 0 and shared.training_preemptions > 0
    assert split.training_jct_mean_s > 1.2 * shared.training_jct_mean_s
    assert shared.utilization > split.utilization
    # Serving fares the same: its replicas get their GPUs either way.
    assert split.slo_attainment == pytest.approx(shared.slo_attainment, abs=0.005)


def test_a_replica_that_fits_no_node_is_refused() -> None:
    with pytest.raises(ConfigError, match="fits no node") as caught:
        run_serving_setup("phalanx", regular_cluster(2, 4, 2), training(), serving(gpus=8))
    assert caught.value.field == "services[0].gpus"


def test_the_same_inputs_give_the_same_figures() -> None:
    assert run("phalanx").figures == run("phalanx").figures


class Fixed:
    """A scaler that always wants ``n`` replicas (the ``Scaler`` seam)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def desired(self, seen: Observation) -> int:
        return self.n


def test_a_scaler_of_ones_own_replaces_the_default() -> None:
    simulator = ServingSimulator(
        regular_cluster(4, 8, 4),
        profile("phalanx"),
        training(),
        serving(),
        scalers={"chat": Fixed(2)},
    )
    ran = simulator.run()
    line = ran.services["chat"]
    # Deployed with one replica for the initial load, then held at two, burst or not.
    assert line.replicas[0] == 1 and set(line.replicas[1:]) == {2}
    assert max(line.ready) == 2
    # In the burst the two ready replicas meet 18 rps as the model says for two.
    during = line.attainment[bisect.bisect_left(line.at, BURST[0] + 10 * MINUTE)]
    assert during == LatencyModel(10, 0.5).attainment(18, 2)
    assert during < LatencyModel(10, 0.5).attainment(18, 4)
    assert len(ran.replicas) == 2


def test_serving_first_puts_the_qos_factor_above_all_others() -> None:
    base = profile("phalanx")
    first = serving_first(base)
    weights = first.params["priority/multifactor"]
    others = sum(
        float(str(v))
        for k, v in base.params["priority/multifactor"].items()
        if k.startswith("weight_") and k != "weight_qos"
    )
    assert float(str(weights["weight_qos"])) > others
    # Every other parameter is kept; a profile without multifactor is left as it is.
    assert {k: v for k, v in weights.items() if k != "weight_qos"} == {
        k: v for k, v in base.params["priority/multifactor"].items() if k != "weight_qos"
    }
    assert serving_first(profile("k8s-default")) == profile("k8s-default")


def test_replicas_come_and_go_through_the_engines_submit_and_cancel() -> None:
    simulator = ServingSimulator(
        regular_cluster(4, 8, 4), profile("phalanx"), training(), serving()
    )
    ran = simulator.run()
    cancels = [d for d in simulator.sim.engine.decisions.entries if isinstance(d, Cancelled)]
    # Every replica ends by the autoscaler's cancel (scale-in, or the end of the load) ...
    assert {d.job_id for d in cancels} == set(ran.replicas)
    assert {d.by for d in cancels} == {"autoscaler"}
    # ... and as a job of its own: the service's account and QOS, cancelled, never training.
    replicas = [j for j in ran.run.jobs if j.job_id in ran.replicas]
    assert {(j.account, j.state) for j in replicas} == {("chat", "CANCELLED")}
    assert len(replicas) >= 4  # one, then three more for the burst
