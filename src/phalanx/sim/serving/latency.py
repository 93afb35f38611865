"""How fast a set of replicas answers: an M/M/c queue behind one router.

Which model and why. A serving router (Knative's activator, KServe's, ours) sends each request
to a replica with free room, so the replicas share one queue: that is M/M/c, not c separate
M/M/1 queues, and it credits the pooling that makes ten replicas serve more than ten times one.
Poisson arrivals are what a large population of independent clients gives; exponential service
times are the rough part (token counts vary, and a real replica batches), kept because the
M/M/c sojourn time has a closed form, so a step of the simulation costs O(c), not a sample.

Parameters come in the terms a service owner knows: ``capacity_rps``, the request rate at which
one replica on its own just meets the latency target at the given percentile. For M/M/1 the
sojourn time is exponential with rate ``mu - lambda``, so
``P(T > slo) = exp(-(mu - capacity) x slo) = 1 - percentile`` gives the service rate
``mu = capacity + ln(1 / (1 - percentile)) / slo``.

Over capacity: the router admits at most ``replicas x capacity_rps`` requests a second (the
replicas' concurrency limit); the excess waits past the target or is refused, and counts as a
violation. So attainment is continuous and never rises with the load, and never rises when a
replica goes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["LatencyModel", "erlang_c", "sojourn_tail"]

_BISECT_STEPS = 30
"""Halvings of the bracket: a relative precision of 1e-9, far below a step's noise."""


def erlang_c(servers: int, offered: float) -> float:
    """Probability that an arrival waits in M/M/``servers`` with ``offered`` = lambda / mu
    Erlangs (needs ``offered < servers``): Erlang B by its stable recursion, then C."""
    if servers < 1 or not 0 <= offered < servers:
        raise ValueError(f"need 0 <= offered < servers, got {offered} and {servers}")
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    rho = offered / servers
    return b / (1.0 - rho * (1.0 - b))


def sojourn_tail(t: float, arrival: float, service: float, servers: int) -> float:
    """P(response time > ``t`` seconds) in a stable M/M/c queue (rates per second).

    The response time is the wait W plus the service S ~ Exp(mu): W is 0 with probability
    1 - C and Exp(c mu - lambda) otherwise, so the tail is a mix of an exponential and the
    hypoexponential sum of two."""
    if servers < 1:
        return 1.0
    return _Tail(arrival, service, servers)(t)


class _Tail:
    """``sojourn_tail`` with Erlang C worked out once, for many ``t`` (a bisection)."""

    __slots__ = ("mu", "theta", "waits")

    def __init__(self, arrival: float, service: float, servers: int) -> None:
        self.mu = service
        self.theta = servers * service - max(arrival, 0.0)
        self.waits = 0.0 if arrival <= 0 else erlang_c(servers, arrival / service)

    def __call__(self, t: float) -> float:
        mu, theta, waits = self.mu, self.theta, self.waits
        alone = math.exp(-mu * t)
        if waits == 0.0:
            return alone
        if abs(theta - mu) <= 1e-9 * mu:
            both = (1.0 + mu * t) * alone
        else:
            both = (mu * math.exp(-theta * t) - theta * alone) / (mu - theta)
        return (1.0 - waits) * alone + waits * both


@dataclass(frozen=True, slots=True)
class LatencyModel:
    capacity_rps: float
    """Requests/s one replica serves with its ``percentile`` latency at ``slo_s``."""
    slo_s: float
    percentile: float = 0.99

    def __post_init__(self) -> None:
        if self.capacity_rps <= 0 or self.slo_s <= 0 or not 0 < self.percentile < 1:
            raise ValueError("capacity and SLO must be positive, the percentile in (0, 1)")

    @property
    def service_rps(self) -> float:
        """mu: requests/s one busy replica completes (see the module docstring)."""
        return self.capacity_rps + math.log(1.0 / (1.0 - self.percentile)) / self.slo_s

    def admitted(self, offered_rps: float, replicas: int) -> float:
        """Requests/s the router lets in: at most ``replicas x capacity_rps``."""
        return min(offered_rps, replicas * self.capacity_rps)

    def attainment(self, offered_rps: float, replicas: int) -> float:
        """Share of the requests answered within the target (1.0 without requests)."""
        if offered_rps <= 0:
            return 1.0
        if replicas < 1:
            return 0.0
        admitted = self.admitted(offered_rps, replicas)
        on_time = 1.0 - sojourn_tail(self.slo_s, admitted, self.service_rps, replicas)
        return admitted / offered_rps * on_time

    def busy(self, offered_rps: float, replicas: int) -> float:
        """Share of the replicas' time spent serving (the M/M/c utilisation)."""
        if replicas < 1:
            return 0.0
        return self.admitted(offered_rps, replicas) / (replicas * self.service_rps)

    def latency_s(self, quantile: float, offered_rps: float, replicas: int) -> float:
        """The ``quantile`` of the response time of admitted requests, seconds (inf without a
        replica)."""
        if replicas < 1:
            return math.inf
        tail = _Tail(self.admitted(offered_rps, replicas), self.service_rps, replicas)
        target = 1.0 - quantile
        low, high = 0.0, 1.0 / tail.mu
        while tail(high) > target:
            high *= 2.0
        for _ in range(_BISECT_STEPS):
            mid = (low + high) / 2.0
            if tail(mid) > target:
                low = mid
            else:
                high = mid
        return high
