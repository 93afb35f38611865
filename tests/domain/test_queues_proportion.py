"""Volcano's proportion plugin: deserved shares by water-filling over queue weights."""

from __future__ import annotations

import pytest

from phalanx.domain.queues import VolcanoQueue
from phalanx.domain.queues.proportion import QueueDemand, deserved

GPU = "nvidia.com/gpu"


def _gpus(result: dict[str, dict[str, float]]) -> dict[str, float]:
    return {name: round(amounts[GPU] / 1000, 6) for name, amounts in result.items()}


def test_elastic_scheduler_doc_two_equal_queues_deserve_half_each() -> None:
    """docs/design/elastic-scheduler.md: 10 GPUs, queue1 and queue2 of weight 1 deserve 5
    GPUs each (both asking for more)."""
    demands = [
        QueueDemand(VolcanoQueue("queue1", weight=1, reclaimable=False), {GPU: 10_000}),
        QueueDemand(VolcanoQueue("queue2", weight=1, reclaimable=False), {GPU: 10_000}),
    ]
    assert _gpus(deserved({GPU: 10_000}, demands)) == {"queue1": 5, "queue2": 5}


def test_water_filling_hands_what_a_small_queue_leaves_to_the_others() -> None:
    """12 GPUs, weights 1:1:1: the first round offers 4 each; q1 asks 2 and is satisfied,
    the 2 it leaves are split between q2 and q3 in the next round (5 each)."""
    demands = [
        QueueDemand(VolcanoQueue("q1"), {GPU: 2_000}),
        QueueDemand(VolcanoQueue("q2"), {GPU: 10_000}),
        QueueDemand(VolcanoQueue("q3"), {GPU: 10_000}),
    ]
    assert _gpus(deserved({GPU: 12_000}, demands)) == {"q1": 2, "q2": 5, "q3": 5}


def test_weights_capability_and_guarantee() -> None:
    """Weights 1:3 split 8 GPUs 2:6; a capability of 4 caps q2, whose rest goes to q1; a
    guarantee of 3 lifts q1 above its weighted 2."""
    weighted = deserved(
        {GPU: 8_000},
        [
            QueueDemand(VolcanoQueue("q1", weight=1), {GPU: 8_000}),
            QueueDemand(VolcanoQueue("q2", weight=3), {GPU: 8_000}),
        ],
    )
    assert _gpus(weighted) == {"q1": 2, "q2": 6}
    capped = deserved(
        {GPU: 8_000},
        [
            QueueDemand(VolcanoQueue("q1", weight=1), {GPU: 8_000}),
            QueueDemand(VolcanoQueue("q2", weight=3, capability={GPU: 4_000}), {GPU: 8_000}),
        ],
    )
    assert _gpus(capped) == {"q1": 4, "q2": 4}
    guaranteed = deserved(
        {GPU: 8_000},
        [
            QueueDemand(VolcanoQueue("q1", weight=1, guarantee={GPU: 3_000}), {GPU: 8_000}),
            QueueDemand(VolcanoQueue("q2", weight=3), {GPU: 8_000}),
        ],
    )
    assert _gpus(guaranteed)["q1"] == pytest.approx(3, abs=1e-3)
    assert sum(_gpus(guaranteed).values()) == pytest.approx(8, abs=1e-3)
