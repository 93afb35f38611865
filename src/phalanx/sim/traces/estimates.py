"""The one model of user time-limit estimates, for traces that record no time limit.

Policies never see a job's real runtime, only its time limit; when a trace has no limits this
model supplies them. It depends only on the job (its runtime and its index in the trace) and the
seed, never on the policy, so every policy is judged against the same estimates.

Model: users ask for a round limit at or above what they expect.

1. Draw an over-estimation factor ``f = exp(N(ln 2.0, 0.8))`` (median 2, so half the users ask
   for more than twice what they need), clipped to ``[1.0, 20.0]``.
2. Round ``runtime x f`` up to the next value of the ladder Slurm users pick:
   5, 10, 15, 30 min; 1, 2, 4, 6, 8, 12, 24, 48, 72 h; 7, 14, 30, 60 days; beyond 60 days,
   whole days.

Since ``f >= 1`` and rounding only goes up, the limit is never below the runtime: no trace job
is killed by its estimate.

Randomness: each job's normal deviate comes from its own stream, a pure function of ``(seed,
index)``, so an estimate does not change when other jobs are filtered out of the trace and any
one job's estimate costs O(1). The stream is SplitMix64 (Steele, Lea and Flood, OOPSLA 2014; the
generator behind Java's ``SplittableRandom``): ``h1 = mix(mix(seed) + index)``,
``h2 = mix(h1)``, two uniforms from their top 53 bits, and a Box-Muller normal. It is used
instead of a fresh ``random.Random`` per job because seeding a Mersenne Twister costs about 5 us,
a third of the time of reading the whole Philly trace. No salted ``hash()`` is involved.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from phalanx.domain.time import DAY, HOUR, MINUTE, Duration

__all__ = [
    "LADDER",
    "MAX_FACTOR",
    "MEDIAN_FACTOR",
    "MIN_FACTOR",
    "SIGMA",
    "STARTUP_MARGIN_MS",
    "estimate_limit",
    "estimate_limits",
    "overestimate_factor",
    "round_up_to_ladder",
]

MEDIAN_FACTOR = 2.0
SIGMA = 0.8
MIN_FACTOR = 1.0
MAX_FACTOR = 20.0

_MASK = (1 << 64) - 1
_UNIT = 2.0**-53
_TWO_PI = 2.0 * math.pi
_LOG_MEDIAN = math.log(MEDIAN_FACTOR)

LADDER: tuple[Duration, ...] = (
    5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE,
    1 * HOUR, 2 * HOUR, 4 * HOUR, 6 * HOUR, 8 * HOUR, 12 * HOUR, 24 * HOUR, 48 * HOUR, 72 * HOUR,
    7 * DAY, 14 * DAY, 30 * DAY, 60 * DAY,
)  # fmt: skip


def overestimate_factor(seed: int, index: int) -> float:
    """The factor by which the user of job ``index`` over-asks, under ``seed``."""
    first = _mix((_mix(seed & _MASK) + index) & _MASK)
    second = _mix(first)
    u1 = ((first >> 11) + 1) * _UNIT  # in (0, 1]: log(u1) is finite
    u2 = (second >> 11) * _UNIT
    normal = math.sqrt(-2.0 * math.log(u1)) * math.cos(_TWO_PI * u2)
    factor = math.exp(_LOG_MEDIAN + SIGMA * normal)
    return min(MAX_FACTOR, max(MIN_FACTOR, factor))


def _mix(state: int) -> int:
    """One SplitMix64 step: advance by the golden gamma and scramble to 64 bits."""
    z = (state + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def round_up_to_ladder(ms: Duration) -> Duration:
    """The smallest ladder value >= ``ms``; whole days beyond the ladder's top."""
    position = bisect.bisect_left(LADDER, ms)
    if position < len(LADDER):
        return LADDER[position]
    return -(-ms // DAY) * DAY


STARTUP_MARGIN_MS: Duration = 60_000
"""Time a limit leaves beyond the runtime at the least, for launch and start-up."""


def estimate_limit(runtime_ms: Duration, seed: int, index: int) -> Duration:
    """The time limit the user of job ``index`` (runtime ``runtime_ms``) asked for."""
    if runtime_ms < 0:
        raise ValueError(f"runtime cannot be negative: {runtime_ms}")
    wanted = math.ceil(runtime_ms * overestimate_factor(seed, index))
    # The limit also covers the job's start-up (a launch takes seconds): a user who asks for
    # exactly the runtime would be killed just before the end, which the model does not intend.
    return round_up_to_ladder(max(wanted, runtime_ms + STARTUP_MARGIN_MS))


def estimate_limits(runtimes_ms: Sequence[Duration], seed: int) -> list[Duration]:
    """``estimate_limit`` for each job, the index being its position in ``runtimes_ms``."""
    return [estimate_limit(runtime, seed, index) for index, runtime in enumerate(runtimes_ms)]
