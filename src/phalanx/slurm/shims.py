"""Executable ``sbatch``, ``scancel``, ``squeue``... files that run ``phalanx.slurm.<cmd>``.

Scripts run these commands thousands of times, so where a C compiler is found the commands
are links to one native program (``shim.c``, compiled into ``DIR/.phalanx-shim``) that hands
each command to the controller's command server (``phalanx.commandserver``): a warm process
that forks and runs the command's ``main()`` as the caller, with the caller's descriptors,
directory and environment. ``srun`` and ``salloc`` (long-lived, relaying a terminal) and every
command the server cannot take run the Python shims written to ``DIR/.python``.

A Python shim starts the interpreter that wrote it with ``-I -S``: no ``site`` (whose ``.pth``
processing costs more than the command), no user site, no environment variables, no current
directory on ``sys.path``. It puts the one directory that holds the ``phalanx`` package on
``sys.path`` itself and imports only its command's module.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import phalanx
from phalanx.slurm import SERVED

__all__ = [
    "COMMANDS",
    "NATIVE",
    "PYTHON_DIR",
    "Shims",
    "compile_native",
    "shim_text",
    "write_shims",
]

NATIVE = ".phalanx-shim"
"""The native program's name in the shims' directory."""
PYTHON_DIR = ".python"
"""The Python shims' directory, inside the shims' directory: the native program's fallback."""

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
    "sacctmgr",
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


@dataclass(frozen=True)
class Shims:
    """What ``write_shims`` wrote: the commands' paths, and why they are not native if not."""

    paths: list[Path]
    native: bool
    why_not: str = ""


def compile_native(output: Path, compiler: str | None = None) -> str:
    """Compile ``shim.c`` into ``output``; return "" or, when it cannot be, why."""
    cc = compiler or os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return "no C compiler (cc) found"
    source = Path(__file__).with_name("shim.c")
    staging = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        done = subprocess.run(
            [cc, "-O2", "-o", str(staging), str(source)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{cc} failed: {exc}"
    if done.returncode != 0:
        staging.unlink(missing_ok=True)
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        return f"{cc} failed: {first}"
    staging.chmod(0o755)
    os.replace(staging, output)
    return ""


def write_shims(
    directory: str | os.PathLike[str], python: str | None = None, *, native: bool = True
) -> Shims:
    """Write the Slurm commands into ``directory`` (created if need be; existing shims are
    replaced atomically): native links where ``native`` and a compiler allow, Python shims
    for the rest. Return what was written."""
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    interpreter = python or sys.executable
    if " " in interpreter or not os.path.isabs(interpreter):
        # A shebang line cannot quote: the kernel splits at the first space.
        raise ValueError(f"the interpreter must be an absolute path without spaces: {interpreter}")
    root = package_root()
    fallbacks = target / PYTHON_DIR
    fallbacks.mkdir(exist_ok=True)
    for command in COMMANDS:
        _replace(fallbacks / command, shim_text(command, interpreter, root))
    why_not = compile_native(target / NATIVE) if native else "not asked for"
    written = []
    for command in COMMANDS:
        path = target / command
        if not why_not and command in SERVED:
            staging = target / f".{command}.{os.getpid()}.tmp"
            staging.unlink(missing_ok=True)
            staging.symlink_to(NATIVE)
            os.replace(staging, path)
        else:
            _replace(path, shim_text(command, interpreter, root))
        written.append(path)
    return Shims(written, not why_not, why_not)


def _replace(path: Path, text: str) -> None:
    staging = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    staging.write_text(text, encoding="utf-8")
    staging.chmod(0o755)
    os.replace(staging, path)
