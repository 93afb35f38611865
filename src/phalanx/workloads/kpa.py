"""Knative's Pod Autoscaler (KPA), pure: a series of observed concurrency or requests-per-second
samples -> the replica count, as Knative Serving's ``autoscaler/scaling`` decides it with its
default configuration (``config-autoscaler``):

- the target per pod is ``containerConcurrency`` (or ``target``, whichever is smaller; 100
  when neither is set) for concurrency, ``target`` (200) for rps, times the target utilisation
  (70 %);
- the stable value is the mean over the stable window (60 s), the panic value over the panic
  window (10 % of it: 6 s); desired = ceil(value / target per pod), kept within
  [floor(ready / max scale-down rate 2), ceil(ready x max scale-up rate 1000)];
- panic mode starts when the panic desired count reaches 200 % of the ready pods and lasts
  until a whole stable window has passed with the panic value below that; while panicking the
  count only grows (the highest panic count is kept);
- the bounds ``min-scale``/``max-scale`` (0: no maximum) apply last. Scale to zero (``min-scale``
  0): a recommendation of 0 is carried out once the revision has had replicas for a whole
  stable window and the recommendation has then lasted the scale-to-zero grace period (30 s)
  -- Knative marks the revision inactive, then keeps the last replica that long while it puts
  the activator in the request path; here the router holds requests.

Scale from zero: the router counts the requests it holds for want of a ready endpoint in the
observed value (as Knative's activator reports the requests it buffers), so that with no
replica the panic value asks for at least one at the next tick.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from phalanx.domain.time import SECOND, Duration, Instant

__all__ = [
    "CONCURRENCY",
    "RPS",
    "KpaConfig",
    "KpaSpec",
    "KpaState",
    "Recommendation",
    "desired_pods",
    "record",
    "target_per_pod",
]

CONCURRENCY = "concurrency"
RPS = "rps"


@dataclass(frozen=True)
class KpaConfig:
    """``config-autoscaler``'s keys, with Knative's defaults."""

    stable_window: Duration = 60 * SECOND
    panic_window_percentage: float = 10.0
    panic_threshold_percentage: float = 200.0
    target_utilization: float = 0.7
    """``container-concurrency-target-percentage`` 70 (also applied to rps)."""
    container_concurrency_target_default: float = 100.0
    rps_target_default: float = 200.0
    max_scale_up_rate: float = 1000.0
    max_scale_down_rate: float = 2.0
    scale_to_zero_grace: Duration = 30 * SECOND
    tick: Duration = 2 * SECOND
    """How often the autoscaler decides (Knative's tick interval)."""

    @property
    def panic_window(self) -> Duration:
        return int(self.stable_window * self.panic_window_percentage / 100)


@dataclass(frozen=True)
class KpaSpec:
    """One revision's scaling annotations (KServe's predictor fields map onto them)."""

    metric: str = CONCURRENCY
    target: float | None = None
    """``autoscaling.knative.dev/target`` (KServe ``scaleTarget``); None: the default."""
    container_concurrency: int = 0
    """0: unlimited."""
    min_scale: int = 1
    max_scale: int = 0
    """0: no maximum."""


@dataclass
class KpaState:
    """The autoscaler's memory of one revision between ticks."""

    samples: list[tuple[Instant, float]] = field(default_factory=list)
    panic_since: Instant | None = None
    """When panic mode was last (re)entered; None: stable mode."""
    max_panic_pods: int = 0
    zero_since: Instant | None = None
    """Since when the (bounded) recommendation has been 0 (once scale to zero may start)."""
    active_since: Instant | None = None
    """Since when the revision has had replicas (None: at zero)."""


@dataclass(frozen=True)
class Recommendation:
    desired: int
    """The replica count to write (bounded, scale-to-zero grace applied); -1: no data yet."""
    stable_value: float
    panic_value: float
    panicking: bool


def target_per_pod(spec: KpaSpec, config: KpaConfig) -> float:
    """The value one pod is sized for (``ResolveMetricTarget``)."""
    if spec.metric == RPS:
        total = spec.target if spec.target is not None else config.rps_target_default
    else:
        total = float(spec.container_concurrency or config.container_concurrency_target_default)
        if spec.target is not None:
            total = spec.target
            if spec.container_concurrency:
                total = min(total, float(spec.container_concurrency))
    return max(0.01, total * config.target_utilization)


def record(state: KpaState, at: Instant, value: float, config: KpaConfig) -> None:
    """Keep the sample ``value`` (the revision's total concurrency or rps, held requests
    included) observed at ``at``; samples older than the stable window are dropped."""
    cutoff = at - config.stable_window
    state.samples = [s for s in state.samples if s[0] > cutoff]
    state.samples.append((at, value))


def _mean(state: KpaState, now: Instant, window: Duration) -> float | None:
    values = [v for at, v in state.samples if now - window < at <= now]
    return sum(values) / len(values) if values else None


def desired_pods(
    spec: KpaSpec, config: KpaConfig, state: KpaState, ready: int, current: int, now: Instant
) -> Recommendation:
    """The tick at ``now`` with ``ready`` ready pods out of ``current`` (the scale now);
    ``state`` is updated in place."""
    stable = _mean(state, now, config.stable_window)
    panic = _mean(state, now, config.panic_window)
    if stable is None or panic is None:
        return Recommendation(-1, 0.0, 0.0, state.panic_since is not None)
    target = target_per_pod(spec, config)
    pods = float(max(1, ready))
    up = math.ceil(config.max_scale_up_rate * pods)
    down = math.floor(pods / config.max_scale_down_rate)
    dspc = math.ceil(stable / target)
    dppc = math.ceil(panic / target)
    stable_count = int(min(max(dspc, down), up))
    panic_count = int(min(max(dppc, down), up))
    over = dppc / pods >= config.panic_threshold_percentage / 100
    if over:
        state.panic_since = now
    elif state.panic_since is not None and state.panic_since + config.stable_window < now:
        # The surge has made its way into the stable window.
        state.panic_since = None
        state.max_panic_pods = 0
    desired = stable_count
    if state.panic_since is not None:
        desired = max(desired, panic_count)
        # No scale-down while panicking.
        state.max_panic_pods = max(state.max_panic_pods, desired)
        desired = state.max_panic_pods
    bounded = _bounds(desired, spec)
    if current == 0:
        state.active_since = None
    elif state.active_since is None:
        state.active_since = now
    if bounded == 0 and current > 0:
        assert state.active_since is not None
        # Knative marks a revision inactive only once it has been active a stable window,
        # then keeps the last replica through the grace period.
        if now - state.active_since < config.stable_window:
            state.zero_since = None
            bounded = 1
        else:
            if state.zero_since is None:
                state.zero_since = now
            if now - state.zero_since < config.scale_to_zero_grace:
                bounded = 1
    elif bounded > 0:
        state.zero_since = None
    return Recommendation(bounded, stable, panic, state.panic_since is not None)


def _bounds(desired: int, spec: KpaSpec) -> int:
    if spec.max_scale > 0:
        desired = min(desired, spec.max_scale)
    return max(desired, spec.min_scale)
