"""Batch scripts as Slurm reads them: the shebang, ``#SBATCH`` lines, and how Phalanx runs
the script.

``#SBATCH`` lines are read as Slurm 22.05 reads them: only at the very start of a line,
followed by white space; several options on one line; values padded with any amount of
spaces or tabs; ``"..."`` and ``'...'`` quote (the quotes are dropped); an unquoted ``#``
starts a comment. Reading stops at the first line that is neither blank nor a comment: the
first command.

A script whose shebang names a shell (sh, bash, zsh, dash, ksh) runs as
``[shell..., "-c", text, path, *args]``: the text travels in the job's command, so nothing
needs to be spooled, ``$0`` is the script's path and ``$1...`` its arguments. Any other
interpreter (python, perl, ...) gets the text written to a private spool file
(``~/.cache/phalanx/spool/<random>``, mode 0700) which the job runs with its arguments.
"""

from __future__ import annotations

import os

from phalanx.slurm.options import CommandLineError

# typing and collections.abc cost milliseconds at every start of a shim: annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "MAGIC",
    "SHELLS",
    "command_for",
    "directive_args",
    "parse_begin",
    "require_shebang",
    "wrap_script",
]

MAGIC = "#SBATCH"
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})
# Linux limits one argv string to 128 KiB; a longer shell script is spooled instead.
_MAX_ARG = 128 * 1024 - 1


def wrap_script(command: str) -> str:
    """The script Slurm writes for ``--wrap=command``."""
    return f"#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{command}\n"


def require_shebang(text: str, prog: str) -> None:
    """Refuse, with Slurm's words and status 1, a script that does not start with ``#!``."""
    if not text.startswith("#!"):
        raise CommandLineError(
            [
                f"{prog}: error: This does not look like a batch script.  The first",
                f"{prog}: error: line must start with #! followed by the path to an interpreter.",
                f"{prog}: error: For instance: #!/bin/sh",
            ],
            1,
        )
    if "\r\n" in text:
        raise CommandLineError(
            [
                f"{prog}: error: Batch script contains DOS line breaks (\\r\\n)",
                f"{prog}: error: instead of expected UNIX line breaks (\\n).",
            ],
            1,
        )


def directive_args(text: str, magic: str = MAGIC) -> list[list[str]]:
    """The words of each ``#SBATCH`` line before the first command, one list per line."""
    found = []
    for line in text.splitlines():
        if line.startswith(magic) and line[len(magic) : len(magic) + 1] in (" ", "\t"):
            found.append(_words(line[len(magic) :]))
            continue
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
    return found


def _words(text: str) -> list[str]:
    """Split as Slurm's ``get_argument``: white space separates, quotes group, ``#`` ends."""
    words: list[str] = []
    current: list[str] = []
    quote = ""
    started = False
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
            else:
                current.append(ch)
        elif ch in "\"'":
            quote, started = ch, True
        elif ch in " \t\r\n":
            if started:
                words.append("".join(current))
                current, started = [], False
        elif ch == "#":
            break
        else:
            current.append(ch)
            started = True
    if started:
        words.append("".join(current))
    return words


def interpreter(text: str) -> list[str]:
    """The shebang's interpreter and its one optional argument, as the kernel reads them."""
    first = text.split("\n", 1)[0][2:].strip()
    path, _, arg = first.partition(" ")
    arg = arg.strip()
    return [path, arg] if arg else [path]


def command_for(
    text: str, name: str, args: Sequence[str], environ: Mapping[str, str]
) -> tuple[list[str], str | None]:
    """The job's argv for script ``text`` (``name`` is its ``$0``) and the spool file
    written for it, if one was."""
    interp = interpreter(text)
    shell = interp[-1] if os.path.basename(interp[0]) == "env" else interp[0]
    if os.path.basename(shell) in SHELLS and len(text.encode()) <= _MAX_ARG:
        return [*interp, "-c", text, name, *args], None
    path = _spool(text, environ)
    return [path, *args], path


def _spool(text: str, environ: Mapping[str, str]) -> str:
    home = environ.get("HOME") or os.path.expanduser("~")
    directory = os.path.join(home, ".cache", "phalanx", "spool")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    path = os.path.join(directory, os.urandom(8).hex())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    return path


# ---------------------------------------------------------------------------- --begin
_UNITS = {"": 1, "second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}
_NAMED = {"midnight": (0, 0), "noon": (12, 0), "fika": (15, 0), "teatime": (16, 0)}


def parse_begin(text: str, prog: str, now: float | None = None) -> int:
    """``--begin`` as milliseconds since the epoch: ``now[+N[units]]``, ``HH:MM[:SS]``,
    ``YYYY-MM-DD[THH:MM[:SS]]``, ``midnight``, ``noon``, ``fika``, ``teatime``, ``today``,
    ``tomorrow`` (local time; a time of day already past means tomorrow, as Slurm)."""
    import re
    import time
    from datetime import datetime, timedelta

    moment = datetime.fromtimestamp(time.time() if now is None else now)
    value = text.strip().lower()
    bad = CommandLineError([f"{prog}: error: Invalid --begin specification"])
    m = re.fullmatch(r"now(?:\+(\d+)([a-z]*))?", value)
    if m is not None:
        unit = (m.group(2) or "").removesuffix("s")
        seconds = [s for u, s in _UNITS.items() if u.startswith(unit) and (unit or not u)]
        if m.group(1) is None:
            return round(moment.timestamp() * 1000)
        if not seconds:
            raise bad
        return round((moment.timestamp() + int(m.group(1)) * seconds[0]) * 1000)
    if value in ("today", "tomorrow"):
        day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
        day += timedelta(days=1 if value == "tomorrow" else 0)
        return round(day.timestamp() * 1000)
    hm = _NAMED.get(value)
    clock = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2}))?", value)
    if hm is not None or clock is not None:
        if clock is not None:
            hm = (int(clock.group(1)), int(clock.group(2)))
        assert hm is not None
        sec = int(clock.group(3) or 0) if clock is not None else 0
        try:
            at = moment.replace(hour=hm[0], minute=hm[1], second=sec, microsecond=0)
        except ValueError:
            raise bad from None
        if at <= moment:
            at += timedelta(days=1)
        return round(at.timestamp() * 1000)
    try:
        return round(datetime.fromisoformat(text.strip()).timestamp() * 1000)
    except ValueError:
        raise bad from None
