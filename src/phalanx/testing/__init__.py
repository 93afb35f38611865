"""Public test helpers, in the spirit of ``trio.testing``: builders and deterministic drivers.

- ``make_job(gpus=8, nodes=4, time_limit=HOUR, account="a")``: a ``JobSpec`` with a few
  readable defaults (GPUs are per node, like ``--gpus-per-node``; one task per node).
- ``small_cluster(nodes=4, gpus=8, per_leaf=2, accounts={"a": 1, "b": 1})``: a uniform
  ``Cluster`` (``regular_cluster``) with optional accounts, quotas and partition settings.
- ``EngineDriver``: the driver loop (``phalanx.runtime.Driver``, the simulator's and the live
  controller's) with a fake clock and a fake executor: ``WakeAt`` becomes a ``TimerFired`` at
  that instant, ``Launch`` ends with ``TasksExited`` after the job's runtime (if one was
  given; else it runs until killed), ``Kill`` ends the run at once, ``Cleanup`` gives
  ``CleanupDone`` after ``cleanup_ms``. Events of one instant are handled in the driver's
  order: ends, arrivals, timers, and the scheduling pass last. No clock is read.
- ``run_engine(cluster, profile, jobs)``: a driver that replays ``(submit, spec, runtime)``
  entries (or ``TraceJob``s) to the end and is returned for inspection.
- ``live_stack()``: the live controller with its agents in this process, running real
  processes on this machine through production's launch path.
- ``large_run(n)``: a finished simulated run the size of the Philly trace, for reports.
"""

from phalanx.testing.builders import large_run, make_job, small_cluster
from phalanx.testing.engine import EngineDriver, run_engine
from phalanx.testing.live import LiveStack, LocalAgents, live_stack

__all__ = [
    "EngineDriver",
    "LiveStack",
    "LocalAgents",
    "large_run",
    "live_stack",
    "make_job",
    "run_engine",
    "small_cluster",
]
