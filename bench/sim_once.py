"""One simulator run of the Philly trace: ``Simulator.run()``'s CPU seconds and the decision
digest of ``sim_speed.py --hash``. For before/after pairs of two checkouts run one after the
other (``cd OTHER && PYTHONPATH=$PWD/src .venv/bin/python bench/sim_once.py ...``), where
``sim_speed.py``'s sections and repeats would take longer than the pair.

    .venv/bin/python bench/sim_once.py POLICY LIMIT LOAD     # LIMIT 0: the whole trace
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from phalanx.config.clusterspec import regular_cluster
from phalanx.errors import InputError
from phalanx.policies.catalog import profile
from phalanx.sim.simulator import Simulator
from phalanx.sim.traces import read_trace
from phalanx.sim.traces.options import TraceOptions

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sim_speed import DEFAULT_TRACE, digest  # a sibling script, not a package


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        policy, limit, load = argv[0], int(argv[1]) or None, float(argv[2])
        workload = read_trace(str(DEFAULT_TRACE), "philly", TraceOptions(limit=limit, load=load))
        chosen = profile(policy)
    except (InputError, ValueError) as exc:
        print(f"sim_once: {exc}", file=sys.stderr)
        return 2
    sim = Simulator(regular_cluster(64, 8, 8), chosen, workload, keep_segments=False)
    start = time.process_time()
    record = sim.run()
    cpu = time.process_time() - start
    jobs = len(record.jobs)
    print(
        f"{policy} limit={limit} load={load} jobs={jobs} cpu={cpu:.2f} "
        f"jobs/cpu-s={jobs / cpu:,.0f} digest={digest(sim, record)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
