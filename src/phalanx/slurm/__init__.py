"""Slurm-compatible commands (``sbatch``, ``scancel``, ...) over the Phalanx REST API.

Each command is a module ``phalanx.slurm.<cmd>`` with ``main(argv) -> int``; ``phalanx shims
DIR`` writes one tiny executable per command that imports only that module. Scripts run these
thousands of times, so the modules import the standard library, ``phalanx.client.wirecall``,
``phalanx.client.address`` and ``phalanx.errors`` and nothing else: no pydantic, no numpy.
Their output, messages and exit statuses are those of Slurm 22.05.
"""

import os

SERVED = (
    "sbatch",
    "scancel",
    "squeue",
    "sacct",
    "sinfo",
    "scontrol",
    "sprio",
    "sshare",
    "sacctmgr",
)
"""The commands the command server (``phalanx.commandserver``) runs for the native shim;
``srun`` and ``salloc`` stay attached to a terminal and run as Python shims."""


UNREACHABLE = "Unable to contact slurm controller (connect failure)"
"""Slurm's words for a controller that does not answer, in every command's error."""


def cluster_name() -> str:
    """This cluster's name, as ``scontrol show config`` prints it (``ClusterName``): what
    ``-M/--clusters`` is matched against. ``PHALANX_CLUSTER``, ``phalanx`` by default."""
    return os.environ.get("PHALANX_CLUSTER", "phalanx")
