"""Slurm-compatible commands (``sbatch``, ``scancel``, ...) over the Phalanx REST API.

Each command is a module ``phalanx.slurm.<cmd>`` with ``main(argv) -> int``; ``phalanx shims
DIR`` writes one tiny executable per command that imports only that module. Scripts run these
thousands of times, so the modules import the standard library, ``phalanx.client.wirecall``,
``phalanx.client.address`` and ``phalanx.errors`` and nothing else: no pydantic, no numpy.
Their output, messages and exit statuses are those of Slurm 22.05.
"""

UNREACHABLE = "Unable to contact slurm controller (connect failure)"
"""Slurm's words for a controller that does not answer, in every command's error."""
