"""The HPA's decision against Kubernetes' documented worked examples and rules."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.domain.time import MINUTE, SECOND
from phalanx.errors import InputError
from phalanx.workloads.conditions import condition
from phalanx.workloads.hpa import Memory, decide, scale_down_limit, scale_up_limit
from phalanx.workloads.hpa_metrics import Observation, PodSample, Sample
from phalanx.workloads.hpa_spec import Rules, parse_hpa

T0 = 1_764_613_704_000


def hpa(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1,
        "maxReplicas": 10,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50},
                },
            }
        ],
    }
    body.update(spec)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "generation": 1},
        "spec": body,
    }


def cpu(usages: list[int], request: int = 200, **pod: Any) -> Observation:
    """Pods ``p0..`` long past their initialization, each using ``usages[i]`` millicores."""
    pods = tuple(
        PodSample(f"p{i}", started=T0 - 10 * MINUTE, cpu_request=request, **pod)
        for i in range(len(usages))
    )
    samples = {f"p{i}": Sample(u, T0) for i, u in enumerate(usages)}
    return Observation(pods, {"cpu": samples}, {})


def run(
    obj: dict[str, Any],
    current: int,
    seen: Observation,
    memory: Memory | None = None,
    now: int = T0,
) -> Any:
    return decide(obj, parse_hpa(obj), current, seen, memory or Memory(), now)


def test_docs_example_two_pods_at_double_the_target_make_four() -> None:
    # "if the current metric value is 200m, and the desired value is 100m, the number of
    # replicas will be doubled": 2 pods at 200m against an AverageValue of 100m -> 4.
    obj = hpa(
        metrics=[
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "AverageValue", "averageValue": "100m"},
                },
            }
        ]
    )
    d = run(obj, 2, cpu([200, 200]))
    assert (d.desired, d.rescale) == (4, True)
    assert d.status["currentMetrics"][0]["resource"]["current"]["averageValue"] == "200m"
    assert d.events[0]["reason"] == "SuccessfulRescale"
    assert d.events[0]["message"] == (
        "New size: 4; reason: cpu resource utilization (percentage of request) above target"
    )


def test_utilization_doubles_and_status_reports_percent() -> None:
    d = run(hpa(), 2, cpu([200, 200]))  # 100 % of a 200m request against 50 %
    assert d.desired == 4
    assert d.status["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 100
    assert d.status["desiredReplicas"] == 4 and d.status["currentReplicas"] == 2
    assert d.status["lastScaleTime"]


def test_within_tolerance_nothing_changes() -> None:
    # 54 % against 50 %: ratio 1.08, within 0.1.
    d = run(hpa(), 3, cpu([108, 108, 108]))
    assert (d.desired, d.rescale, d.events) == (3, False, [])
    able = condition(d.status["conditions"], "AbleToScale")
    assert able is not None and able["reason"] == "ReadyForNewScale"
    # 56 % is outside: ceil(1.12 * 3) = 4.
    assert run(hpa(), 3, cpu([112, 112, 112])).desired == 4


def test_scale_down_waits_for_the_stabilization_window() -> None:
    memory = Memory()
    obj = hpa()
    assert run(obj, 4, cpu([100] * 4), memory, T0).desired == 4  # at target
    # Load drops: the recommendation is 1, but 4 was recommended within 300 s.
    d = run(obj, 4, cpu([10] * 4), memory, T0 + 60 * SECOND)
    assert d.desired == 4 and not d.rescale
    able = condition(d.status["conditions"], "AbleToScale")
    assert able is not None and able["reason"] == "ScaleDownStabilized"
    d = run(obj, 4, cpu([10] * 4), memory, T0 + 301 * SECOND)
    assert d.desired == 1
    assert d.events[0]["message"] == "New size: 1; reason: All metrics below target"


def test_default_scale_up_rate_is_max_of_4_pods_or_double_per_15s() -> None:
    memory = Memory()
    obj = hpa(maxReplicas=100, behavior={})  # given: its rules are the documented defaults
    d = run(obj, 1, cpu([2000]), memory)  # ratio 20 -> 20 wanted; max(1+4, 2) = 5
    assert d.desired == 5
    limited = condition(d.status["conditions"], "ScalingLimited")
    assert limited is not None and limited["status"] == "True"
    assert limited["reason"] == "ScaleUpLimit"
    # Within the same 15 s the period started at 1 replica: no more growth.
    assert run(obj, 5, cpu([400] * 5), memory, T0 + 5 * SECOND).desired == 5
    # After the period: max(5 + 4, 10) = 10.
    assert run(obj, 5, cpu([400] * 5), memory, T0 + 16 * SECOND).desired == 10


def test_without_behavior_the_older_path_allows_max_of_double_or_4_per_sync() -> None:
    memory = Memory()
    obj = hpa(maxReplicas=100)
    d = run(obj, 1, cpu([2000]), memory)
    assert d.desired == 4
    limited = condition(d.status["conditions"], "ScalingLimited")
    assert limited is not None and limited["reason"] == "ScaleUpLimit"
    assert run(obj, 4, cpu([400] * 4), memory, T0 + 1 * SECOND).desired == 8


def test_a_behavior_scale_down_policy_limits_the_drop_per_period() -> None:
    behavior = {
        "scaleDown": {
            "stabilizationWindowSeconds": 0,
            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
        }
    }
    memory = Memory()
    obj = hpa(behavior=behavior)
    d = run(obj, 5, cpu([10] * 5), memory)
    assert d.desired == 4
    limited = condition(d.status["conditions"], "ScalingLimited")
    assert limited is not None and limited["reason"] == "ScaleDownLimit"
    assert run(obj, 4, cpu([10] * 4), memory, T0 + 30 * SECOND).desired == 4
    assert run(obj, 4, cpu([10] * 4), memory, T0 + 61 * SECOND).desired == 3


def test_bounds_and_their_reasons() -> None:
    d = run(hpa(maxReplicas=3), 2, cpu([400, 400]))
    assert d.desired == 3
    limited = condition(d.status["conditions"], "ScalingLimited")
    assert limited is not None and limited["reason"] == "TooManyReplicas"
    d = run(hpa(minReplicas=2), 1, cpu([10]))
    assert d.desired == 2
    assert d.events[0]["message"] == (
        "New size: 2; reason: Current number of replicas below Spec.MinReplicas"
    )
    d = run(hpa(maxReplicas=3), 5, cpu([100] * 5))
    assert d.desired == 3


def test_target_at_zero_disables_scaling() -> None:
    d = run(hpa(), 0, cpu([]))
    assert (d.desired, d.rescale) == (0, False)
    active = condition(d.status["conditions"], "ScalingActive")
    assert active is not None and active["reason"] == "ScalingDisabled"


def test_missing_pods_count_as_100_percent_on_scale_down() -> None:
    # Two pods at 10 %, one without a sample: counted at 100 % the ratio is (20+20+200)/600 =
    # 40 % / 50 % = 0.8 -> ceil(0.8 * 3) = 3, no change.
    seen = cpu([20, 20, 0])
    seen = Observation(
        seen.pods, {"cpu": {k: v for k, v in seen.pod_metrics["cpu"].items() if k != "p2"}}, {}
    )
    assert run(hpa(), 3, seen).desired == 3


def test_unready_pods_count_as_zero_on_scale_up() -> None:
    pods = (
        PodSample("a", started=T0 - 10 * MINUTE, cpu_request=100),
        PodSample("b", phase="Pending", started=None, ready=False, cpu_request=100),
    )
    seen = Observation(pods, {"cpu": {"a": Sample(100, T0)}}, {})
    # a alone: 100 % / 50 % = 2 -> with b at 0: 50 % -> within tolerance: stays 2.
    assert run(hpa(), 2, seen).desired == 2


def test_cpu_of_a_pod_still_initializing_is_set_aside() -> None:
    young = PodSample(
        "y", started=T0 - 60 * SECOND, ready=True, ready_changed=T0 - 5 * SECOND, cpu_request=100
    )
    old = PodSample("o", started=T0 - 10 * MINUTE, cpu_request=100)
    # y's sample covers a window from before it became ready: set aside (its startup burst).
    seen = Observation(
        (young, old), {"cpu": {"y": Sample(1000, T0, 30 * SECOND), "o": Sample(50, T0)}}, {}
    )
    assert run(hpa(), 2, seen).desired == 2


def test_the_largest_metric_wins_and_a_failed_one_blocks_scale_down() -> None:
    metrics = [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50},
            },
        },
        {
            "type": "Object",
            "object": {
                "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"},
                "metric": {"name": "requests_in_flight"},
                "target": {"type": "Value", "value": "10"},
            },
        },
    ]
    obj = hpa(metrics=metrics)
    seen = cpu([100, 100])
    seen = Observation(
        seen.pods, seen.pod_metrics, {("Service", "web", "requests_in_flight"): 60_000}
    )
    d = run(obj, 2, seen)  # cpu: 2 ; in flight 60/10 * 2 ready = 12 -> max 10
    assert d.desired == 4  # no behavior: at most max(2 x 2, 4) per sync
    assert "Object metric requests_in_flight above target" in d.events[0]["message"]
    # The object metric missing, cpu asks for fewer: no scale-down.
    low = cpu([10, 10])
    d = run(obj, 2, low)
    assert not d.rescale
    active = condition(d.status["conditions"], "ScalingActive")
    assert active is not None and active["reason"] == "FailedGetObjectMetric"
    assert [e["reason"] for e in d.events] == [
        "FailedGetObjectMetric",
        "FailedComputeMetricsReplicas",
    ]
    assert d.events[1]["message"] == (
        "invalid metrics (1 invalid out of 2), first error is: failed to get object metric "
        "value: unable to get metric requests_in_flight: Service on web: no metrics returned"
    )


def test_pods_metric_average_value() -> None:
    obj = hpa(
        metrics=[
            {
                "type": "Pods",
                "pods": {
                    "metric": {"name": "requests_per_second"},
                    "target": {"type": "AverageValue", "averageValue": "5"},
                },
            }
        ],
        behavior={},
    )
    pods = tuple(PodSample(f"p{i}", cpu_request=0) for i in range(2))
    seen = Observation(
        pods, {"requests_per_second": {"p0": Sample(15_000), "p1": Sample(15_000)}}, {}
    )
    d = run(obj, 2, seen)
    assert d.desired == 6
    assert d.status["currentMetrics"][0] == {
        "type": "Pods",
        "pods": {"metric": {"name": "requests_per_second"}, "current": {"averageValue": "15"}},
    }


def test_select_policy_min_and_disabled() -> None:
    rules = Rules(0, "Min", ())
    memory = Memory()
    from phalanx.workloads.hpa_spec import Policy

    rules = Rules(0, "Min", (Policy("Pods", 4, 15), Policy("Percent", 100, 15)))
    assert scale_up_limit(10, memory, rules, T0) == 14
    assert scale_up_limit(10, memory, Rules(0, "Max", rules.policies), T0) == 20
    assert scale_up_limit(10, memory, Rules(0, "Disabled", rules.policies), T0) == 10
    down = Rules(300, "Max", (Policy("Percent", 50, 60), Policy("Pods", 1, 60)))
    assert scale_down_limit(10, memory, down, T0) == 5
    assert scale_down_limit(10, memory, Rules(300, "Min", down.policies), T0) == 9


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ({"maxReplicas": 0}, "spec.maxReplicas"),
        ({"minReplicas": 0}, "spec.minReplicas"),
        ({"metrics": [{"type": "External"}]}, "spec.metrics[0].type"),
        (
            {
                "metrics": [
                    {
                        "type": "Pods",
                        "pods": {
                            "metric": {"name": "qps"},
                            "target": {"type": "AverageValue", "averageValue": "1"},
                        },
                    }
                ]
            },
            "spec.metrics[0].pods.metric.name",
        ),
        ({"behavior": {"scaleUp": {"selectPolicy": "Fast"}}}, "spec.behavior.scaleUp.selectPolicy"),
        (
            {
                "behavior": {
                    "scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 0}]}
                }
            },
            "spec.behavior.scaleDown.policies[0].periodSeconds",
        ),
    ],
)
def test_bad_specs_name_the_field(spec: dict[str, Any], where: str) -> None:
    with pytest.raises(InputError) as e:
        parse_hpa(hpa(**spec))
    assert e.value.field == where


def test_defaults() -> None:
    obj = hpa()
    del obj["spec"]["metrics"], obj["spec"]["minReplicas"]
    spec = parse_hpa(obj)
    assert spec.min_replicas == 1
    assert spec.metrics[0].target.utilization == 80
    assert spec.scale_down.stabilization_s == 300 and spec.scale_up.stabilization_s == 0
    assert {(p.type, p.value, p.period_s) for p in spec.scale_up.policies} == {
        ("Pods", 4, 15),
        ("Percent", 100, 15),
    }


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=2000), min_size=1, max_size=40),
    st.sampled_from([{}, {"behavior": {}}]),
)
def test_default_behavior_rates_and_window(loads: list[int], behavior: dict[str, Any]) -> None:
    """With the default behavior, each 15 s sync: a scale-down happens only when no higher
    recommendation was made in the 300 s before, never below half... (100 %/15 s allows any
    drop, so the window is the guard); a scale-up never exceeds max(+4, x2) in 15 s."""
    obj = hpa(maxReplicas=50, **behavior)
    spec = parse_hpa(obj)
    memory = Memory()
    current = 1
    history: list[tuple[int, int]] = []  # (at, raw recommendation)
    for i, per_pod in enumerate(loads):
        now = T0 + i * 15 * SECOND
        d = decide(obj, spec, current, cpu([per_pod] * current), memory, now)
        raw = memory.recommendations[-1][1]
        history.append((now, raw))
        if d.desired > current:
            assert d.desired <= max(current + 4, 2 * current)
        if d.desired < current:
            recent = [r for at, r in history if at > now - 300 * SECOND]
            assert d.desired >= max(recent)
            assert max(recent) < current
        current = d.desired
        assert 1 <= current <= 50


def test_conditions_carry_no_probe_time() -> None:
    d = run(hpa(), 2, cpu([200, 200]))
    kinds = [c["type"] for c in d.status["conditions"]]
    assert kinds == ["AbleToScale", "ScalingActive", "ScalingLimited"]
    assert all("lastProbeTime" not in c for c in d.status["conditions"])
