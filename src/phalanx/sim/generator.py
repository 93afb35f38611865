"""A seeded synthetic workload of an AI cluster, for what no real trace shows at once.

Four kinds of work, each a Poisson process of arrivals (rates per day at ``scale=1``, multiplied
by ``scale``), each kind under its own account (``accounts[k % len(accounts)]`` for kind k in
the order below) with a few users per account:

=========  =======  ====================================================================
kind       per day  shape
=========  =======  ====================================================================
pretrain   0.5      8-128 nodes x 8 GPUs (64-1,024 GPUs; smaller gangs likelier), 1-5 days,
                    checkpoint every 30-60 min
finetune   40       1, 2, 4 or 8 GPUs on one node, log-normal runtime (median 3 h, 10 min to
                    24 h); half checkpoint hourly, half never
sweep      3        bursts of 50-500 one-GPU trials within one minute, 10 min-2 h each
                    (log-uniform), named ``sweep<k>_<i>``
rlhf       2        bursts of 1,000-4,000 micro-tasks within five minutes, seconds to
                    minutes (5 s-10 min log-uniform), half on a whole GPU, half on 250-500
                    thousandths of one; named ``rlhf<k>_<i>``
=========  =======  ====================================================================

Arrivals fall in ``[0, days)``; members of a burst may spill a few minutes past the end. Times
are not rebased: 0 is the start of the generated period. CPUs are one per GPU (at least one)
and memory 0, so GPUs are the contended resource. Time limits come from
``traces.estimates`` with the same ``seed``, indexed by generation order.

Deterministic: one ``random.Random(seed)`` draws everything, in a fixed order, so the same
arguments give an identical list.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from phalanx.domain.jobspec import JobSpec
from phalanx.domain.time import DAY, HOUR, MINUTE, SECOND, Duration, Instant
from phalanx.errors import ConfigError
from phalanx.sim.traces.estimates import estimate_limit
from phalanx.sim.workload import TraceJob

__all__ = ["DEFAULT_ACCOUNTS", "generate"]

DEFAULT_ACCOUNTS = ("pretrain", "finetune", "research", "rlhf")
_USERS_PER_ACCOUNT = 4


class _Draft(NamedTuple):
    """A job before its time limit: the limit needs its index in generation order."""

    submit: Instant
    runtime: Duration
    name: str
    account: str
    user: str
    nodes: int
    gpus_per_node: int
    gpu_milli: int
    checkpoint: Duration | None


def generate(
    seed: int,
    *,
    days: float = 7.0,
    scale: float = 1.0,
    accounts: Sequence[str] = DEFAULT_ACCOUNTS,
) -> list[TraceJob]:
    """The workload of ``days`` days for ``seed``, sorted by (submit, generation order)."""
    if not (math.isfinite(days) and days > 0):
        raise ConfigError(f"days must be positive: {days}", field="days")
    if not (math.isfinite(scale) and scale > 0):
        raise ConfigError(f"scale must be positive: {scale}", field="scale")
    if not accounts:
        raise ConfigError("at least one account is needed", field="accounts")
    rng = random.Random(seed)
    horizon = round(days * DAY)
    account = [accounts[k % len(accounts)] for k in range(4)]
    drafts = [
        *_pretrain(rng, _arrivals(rng, 0.5 * scale, horizon), account[0]),
        *_finetune(rng, _arrivals(rng, 40 * scale, horizon), account[1]),
        *_sweeps(rng, _arrivals(rng, 3 * scale, horizon), account[2]),
        *_rlhf(rng, _arrivals(rng, 2 * scale, horizon), account[3]),
    ]
    order = sorted(range(len(drafts)), key=lambda i: drafts[i].submit)
    return [_job(drafts[i], estimate_limit(drafts[i].runtime, seed, i)) for i in order]


def _arrivals(rng: random.Random, per_day: float, horizon: Instant) -> list[Instant]:
    """Poisson arrival times in ``[0, horizon)``; drawn eagerly to fix the draw order."""
    times: list[Instant] = []
    at = rng.expovariate(per_day / DAY)
    while at < horizon:
        times.append(int(at))
        at += rng.expovariate(per_day / DAY)
    return times


def _log_uniform(rng: random.Random, low: Duration, high: Duration) -> Duration:
    return round(math.exp(rng.uniform(math.log(low), math.log(high))))


def _user(rng: random.Random, account: str) -> str:
    return f"{account}-u{rng.randrange(_USERS_PER_ACCOUNT)}"


def _pretrain(rng: random.Random, times: list[Instant], account: str) -> Iterator[_Draft]:
    for k, at in enumerate(times):
        nodes = rng.choices((8, 16, 32, 64, 128), weights=(8, 6, 4, 2, 1))[0]
        runtime = round(rng.uniform(1 * DAY, 5 * DAY))
        checkpoint = rng.randint(30, 60) * MINUTE
        yield _Draft(
            at, runtime, f"pretrain{k}", account, _user(rng, account), nodes, 8, 0, checkpoint
        )


def _finetune(rng: random.Random, times: list[Instant], account: str) -> Iterator[_Draft]:
    for k, at in enumerate(times):
        gpus = rng.choices((1, 2, 4, 8), weights=(4, 3, 2, 1))[0]
        hours = rng.lognormvariate(math.log(3.0), 0.8)
        runtime = min(24 * HOUR, max(10 * MINUTE, round(hours * HOUR)))
        checkpoint = HOUR if rng.random() < 0.5 else None
        yield _Draft(
            at, runtime, f"finetune{k}", account, _user(rng, account), 1, gpus, 0, checkpoint
        )


def _sweeps(rng: random.Random, times: list[Instant], account: str) -> Iterator[_Draft]:
    for k, at in enumerate(times):
        user = _user(rng, account)
        for i in range(rng.randint(50, 500)):
            submit = at + rng.randrange(MINUTE)
            runtime = _log_uniform(rng, 10 * MINUTE, 2 * HOUR)
            yield _Draft(submit, runtime, f"sweep{k}_{i}", account, user, 1, 1, 0, None)


def _rlhf(rng: random.Random, times: list[Instant], account: str) -> Iterator[_Draft]:
    for k, at in enumerate(times):
        user = _user(rng, account)
        for i in range(rng.randint(1_000, 4_000)):
            submit = at + rng.randrange(5 * MINUTE)
            runtime = _log_uniform(rng, 5 * SECOND, 10 * MINUTE)
            # Half the rollouts share a GPU: 250-500 thousandths, in steps of 50.
            milli = rng.randrange(250, 501, 50) if rng.random() < 0.5 else 0
            yield _Draft(
                submit, runtime, f"rlhf{k}_{i}", account, user, 1, 0 if milli else 1, milli, None
            )


def _job(draft: _Draft, limit: Duration) -> TraceJob:
    spec = JobSpec(
        name=draft.name,
        user=draft.user,
        account=draft.account,
        nodes_min=draft.nodes,
        nodes_max=draft.nodes,
        gpus_per_task=draft.gpus_per_node,
        gpu_milli=draft.gpu_milli,
        cpus_per_task=max(1, draft.gpus_per_node),
        time_limit=limit,
        checkpoint_interval=draft.checkpoint,
    )
    return TraceJob(draft.submit, spec, draft.runtime, trace_id=draft.name)
