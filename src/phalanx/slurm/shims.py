"""Executable ``sbatch``, ``scancel``, ``squeue``... files that run ``phalanx.slurm.<cmd>``.

Scripts run these commands thousands of times, so a shim starts the interpreter that wrote
it with ``-I -S``: no ``site`` (whose ``.pth`` processing costs more than the command), no
user site, no environment variables, no current directory on ``sys.path``. The shim puts
the one directory that holds the ``phalanx`` package on ``sys.path`` itself and imports
only its command's module. A command whose module does not exist (yet) says so and exits 1.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import phalanx

__all__ = ["COMMANDS", "shim_text", "write_shims"]

COMMANDS = (
    "sbatch",
    "scancel",
    "srun",
    "salloc",
    "squeue",
    "sacct",
    "sinfo",
    "scontrol",
    "sprio",
    "sshare",
)

_TEMPLATE = """#!{python} -IS
# Written by `phalanx shims`: Slurm's {command} on Phalanx. Regenerate rather than edit.
import sys
sys.path.insert(0, {package_root!r})
try:
    from phalanx.slurm.{command} import main
except ModuleNotFoundError as exc:
    if exc.name != "phalanx.slurm.{command}":
        raise
    sys.stderr.write("{command}: not provided by Phalanx yet\\n")
    sys.exit(1)
sys.exit(main())
"""


def package_root() -> str:
    """The directory that holds the ``phalanx`` package (what goes on ``sys.path``)."""
    return str(Path(phalanx.__file__).resolve().parent.parent)


def shim_text(command: str, python: str | None = None, root: str | None = None) -> str:
    """The shim for ``command`` run by ``python`` (default: this interpreter)."""
    return _TEMPLATE.format(
        python=python or sys.executable,
        command=command,
        package_root=root or package_root(),
    )


def write_shims(directory: str | os.PathLike[str], python: str | None = None) -> list[Path]:
    """Write one executable shim per Slurm command into ``directory`` (created if need be;
    existing shims are replaced atomically); return their paths."""
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    interpreter = python or sys.executable
    if " " in interpreter or not os.path.isabs(interpreter):
        # A shebang line cannot quote: the kernel splits at the first space.
        raise ValueError(f"the interpreter must be an absolute path without spaces: {interpreter}")
    root = package_root()
    written = []
    for command in COMMANDS:
        path = target / command
        staging = target / f".{command}.{os.getpid()}.tmp"
        staging.write_text(shim_text(command, interpreter, root), encoding="utf-8")
        staging.chmod(0o755)
        os.replace(staging, path)
        written.append(path)
    return written
