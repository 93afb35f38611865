"""``phalanx shims DIR``: write Slurm's commands (``sbatch``, ``scancel``, ``squeue``, ...)
into DIR as small executables that talk to this Phalanx; put DIR first on PATH to use them."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from phalanx.errors import InputError
from phalanx.slurm.shims import write_shims

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", metavar="DIR", type=Path, help="where to write the commands")
    parser.add_argument(
        "--python",
        action="store_true",
        help="Python shims only, no native program (slower to start; no C compiler needed)",
    )


def run(args: argparse.Namespace) -> int:
    directory: Path = args.directory.expanduser().absolute()
    try:
        shims = write_shims(directory, native=not args.python)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    print(f"wrote {', '.join(p.name for p in shims.paths)} to {directory}")
    if not shims.native and not args.python:
        print(f"note: Python shims only ({shims.why_not}); each call starts an interpreter")
    print("to use them in this shell:")
    print(f"  export PATH={shlex.quote(str(directory))}:$PATH")
    return 0
