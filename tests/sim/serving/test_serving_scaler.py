"""The default autoscaler: the Kubernetes HPA's rule, step by step."""

from __future__ import annotations

from phalanx.domain.time import SECOND
from phalanx.sim.serving.scaler import HpaScaler, Observation


def scaler(low: int = 1, high: int = 100) -> HpaScaler:
    return HpaScaler(target_utilization=0.5, min_replicas=low, max_replicas=high)


def seen(at_s: int, replicas: int, ready: int, rps: float) -> Observation:
    return Observation(at_s * SECOND, replicas, ready, rps, capacity_rps=10)


def test_scale_up_is_ceil_of_ready_times_the_ratio() -> None:
    # 4 ready at 7.5 rps each of 10: utilisation 0.75 against 0.5 -> ceil(4 x 1.5) = 6.
    assert scaler().desired(seen(0, 4, 4, 30)) == 6


def test_within_tolerance_the_count_holds() -> None:
    # Utilisation 0.54 is within 10 % of 0.5.
    assert scaler().desired(seen(0, 4, 4, 21.6)) == 4


def test_unready_replicas_count_as_idle_on_a_scale_up() -> None:
    # 2 of 6 ready, 30 rps: over ready replicas the ratio is 3, over all 6 it is 1: hold.
    assert scaler().desired(seen(0, 6, 2, 30)) == 6
    # No replica ready: nothing to measure, hold.
    assert scaler().desired(seen(0, 3, 0, 500)) == 3


def test_scale_up_is_limited_to_doubling_or_four_more() -> None:
    assert scaler().desired(seen(0, 2, 2, 200)) == 6  # 2 + 4 > 2 x 2
    assert scaler().desired(seen(0, 10, 10, 1000)) == 20  # 2 x 10 > 10 + 4


def test_scale_down_waits_out_the_stabilisation_window() -> None:
    s = scaler()
    assert s.desired(seen(0, 10, 10, 50)) == 10  # exactly the target
    # The load drops: the recommendation (2) is held back by the one at 0 s for 300 s.
    assert s.desired(seen(15, 10, 10, 10)) == 10
    assert s.desired(seen(285, 10, 10, 10)) == 10
    assert s.desired(seen(300, 10, 10, 10)) == 2


def test_clamped_to_min_and_max() -> None:
    assert scaler(low=3).desired(seen(0, 3, 3, 0)) == 3
    assert scaler(high=5).desired(seen(0, 4, 4, 40)) == 5
