"""``bench/sched_pass.py``'s engine copies: each timed pass runs on its own copy.

The README's one-pass figures come from this bench (and ``bench/sim_speed.py``'s pass-cost
section, which uses the same copy). With the compiled core, ``copy.deepcopy`` shared the bound
methods the recipe keeps of its engine, so every timed pass started its jobs in the engine it
was copied from and returned nothing: the bench timed a pass that did nothing."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from phalanx.domain.time import HOUR
from phalanx.engine import Launch, TimerFired
from phalanx.engine.timers import PASS

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("sched_pass_bench", BENCH / "sched_pass.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_a_timed_pass_runs_on_its_copy_and_leaves_the_original_as_built() -> None:
    bench = _bench()
    args = argparse.Namespace(
        seed=1,
        nodes=16,
        gpus_per_node=8,
        nodes_per_switch=4,
        leaves_per_spine=None,
        load=0.9,
        round_limits=False,
        history=12 * HOUR,
        pending=200,
    )
    base, now, _running = bench.build(args, "phalanx")
    free = base.state.free_gpus
    assert free > 0
    for _ in range(2):
        engine = bench.fresh_copy(base)
        out = engine.handle(TimerFired(now, PASS))
        assert sum(isinstance(c, Launch) for c in out) > 0
        assert engine.state.free_gpus < free
        assert base.state.free_gpus == free  # the original is as it was built
