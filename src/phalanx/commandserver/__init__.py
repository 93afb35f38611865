"""The command server: a daemon beside the controller (root on a real cluster) that runs the
Slurm commands for the native shims, each as its caller, in warm forked workers.

It is its own package, not part of the commands (``phalanx.slurm``): it is privileged,
long-lived and runs those commands; they are short-lived, unprivileged and never import it.
Lean as they are (import-linter holds it): the standard library and ``phalanx.slurm``, no
engine, no numpy, no pydantic. ``python -m phalanx.commandserver SOCKET [--parent-fd FD]``
runs it; the protocol and the workers are described in ``phalanx.commandserver.server``.
"""

from phalanx.commandserver.server import COMMANDS, MAGIC, SOCKET_NAME, main, serve

__all__ = ["COMMANDS", "MAGIC", "SOCKET_NAME", "main", "serve"]
