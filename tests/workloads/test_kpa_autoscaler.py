"""Knative's KPA: targets, stable and panic windows, rate limits, scale to zero and back."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.domain.time import SECOND
from phalanx.workloads.kpa import (
    RPS,
    KpaConfig,
    KpaSpec,
    KpaState,
    desired_pods,
    record,
    target_per_pod,
)

CFG = KpaConfig()
T0 = 1_000_000_000


def feed(state: KpaState, value: float, start: int, end: int, step: int = 2 * SECOND) -> None:
    for at in range(start, end + 1, step):
        record(state, at, value, CFG)


def test_targets_follow_knative_defaults() -> None:
    assert target_per_pod(KpaSpec(), CFG) == 70.0  # 100 x 70 %
    assert target_per_pod(KpaSpec(container_concurrency=10), CFG) == 7.0
    assert target_per_pod(KpaSpec(target=50, container_concurrency=10), CFG) == 7.0
    assert target_per_pod(KpaSpec(target=5, container_concurrency=10), CFG) == 3.5
    assert target_per_pod(KpaSpec(metric=RPS), CFG) == 140.0
    assert CFG.panic_window == 6 * SECOND


def test_stable_mode_sizes_on_the_60s_mean() -> None:
    spec = KpaSpec(target=10, min_scale=1)  # 7 per pod
    state = KpaState()
    feed(state, 14.0, T0, T0 + 60 * SECOND)
    r = desired_pods(spec, CFG, state, ready=2, current=2, now=T0 + 60 * SECOND)
    assert (r.desired, r.panicking) == (2, False)


def test_panic_at_twice_the_ready_pods_and_no_scale_down_while_panicking() -> None:
    spec = KpaSpec(target=10)
    state = KpaState()
    feed(state, 7.0, T0, T0 + 60 * SECOND)  # one pod's worth
    now = T0 + 60 * SECOND
    assert desired_pods(spec, CFG, state, 1, 1, now).desired == 1
    # A burst: 70 in flight for 6 s -> panic wants 10 pods (>= 200 % of 1 ready).
    feed(state, 70.0, now + 2 * SECOND, now + 6 * SECOND)
    now += 6 * SECOND
    r = desired_pods(spec, CFG, state, 1, 1, now)
    assert r.panicking and r.desired == 10
    # The burst ends; while panicking the count does not drop.
    feed(state, 7.0, now + 2 * SECOND, now + 20 * SECOND)
    now += 20 * SECOND
    r = desired_pods(spec, CFG, state, 10, 10, now)
    assert r.panicking and r.desired == 10
    # A stable window after the last time over the threshold: panic ends, the stable mean
    # takes over (bounded by the 2x scale-down rate).
    feed(state, 7.0, now + 2 * SECOND, now + 60 * SECOND)
    now += 60 * SECOND
    r = desired_pods(spec, CFG, state, 10, 10, now)
    assert not r.panicking and r.desired == 5  # floor(10 / 2)


def test_scale_up_rate_is_1000x() -> None:
    spec = KpaSpec(target=1, max_scale=0)  # 0.7 per pod
    state = KpaState()
    feed(state, 10_000.0, T0, T0 + 6 * SECOND)
    r = desired_pods(spec, CFG, state, 1, 1, T0 + 6 * SECOND)
    assert r.desired == 1000


def test_scale_to_zero_after_the_grace_and_back_on_held_demand() -> None:
    spec = KpaSpec(target=10, min_scale=0)
    state = KpaState(active_since=T0)  # a replica since T0
    feed(state, 0.0, T0, T0 + 60 * SECOND)
    now = T0 + 60 * SECOND
    r = desired_pods(spec, CFG, state, 1, 1, now)
    assert r.desired == 1  # the recommendation is 0: the grace period starts
    later = now + CFG.scale_to_zero_grace - 2 * SECOND
    feed(state, 0.0, now + 2 * SECOND, later)
    assert desired_pods(spec, CFG, state, 1, 1, later).desired == 1
    end = now + CFG.scale_to_zero_grace
    record(state, end, 0.0, CFG)
    assert desired_pods(spec, CFG, state, 1, 1, end).desired == 0
    # Idle at zero; then one request is held by the router.
    record(state, end + 30 * SECOND, 1.0, CFG)
    r = desired_pods(spec, CFG, state, 0, 0, end + 30 * SECOND)
    assert r.desired == 1


def test_a_new_revision_without_traffic_is_active_a_stable_window_then_the_grace() -> None:
    spec = KpaSpec(target=10, min_scale=0)
    state = KpaState()
    zero = None
    for i in range(0, 120):
        now = T0 + i * 2 * SECOND
        record(state, now, 0.0, CFG)
        if desired_pods(spec, CFG, state, 1, 1, now).desired == 0:
            zero = (now - T0) // SECOND
            break
    assert zero == 60 + 30


def test_min_scale_keeps_a_replica_and_max_scale_caps() -> None:
    state = KpaState()
    feed(state, 0.0, T0, T0 + 120 * SECOND)
    assert desired_pods(KpaSpec(min_scale=1), CFG, state, 1, 1, T0 + 120 * SECOND).desired == 1
    state = KpaState()
    feed(state, 700.0, T0, T0 + 60 * SECOND)
    assert (
        desired_pods(KpaSpec(target=10, max_scale=3), CFG, state, 3, 3, T0 + 60 * SECOND).desired
        == 3
    )


def test_no_data_no_decision() -> None:
    assert desired_pods(KpaSpec(), CFG, KpaState(), 1, 1, T0).desired == -1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=500), min_size=1, max_size=60))
def test_never_below_half_the_ready_pods_in_one_tick(loads: list[float]) -> None:
    spec = KpaSpec(target=10, min_scale=1)
    state = KpaState()
    current = 1
    for i, load in enumerate(loads):
        now = T0 + i * 2 * SECOND
        record(state, now, load, CFG)
        r = desired_pods(spec, CFG, state, current, current, now)
        assert r.desired >= max(1, current // 2)
        assert r.desired <= max(1, current) * 1000
        current = r.desired
