"""``docs/slurm-options.md`` written from the commands' option tables, so it cannot drift
from them: ``python -m phalanx.slurm.optiondoc > docs/slurm-options.md`` (a test holds the
file equal to ``render()``)."""

from __future__ import annotations

import sys

from phalanx.slurm.commandline import FLAG, OPTIONAL, Option, OptionTable
from phalanx.slurm.jobtable import SALLOC, SBATCH, SRUN
from phalanx.slurm.querytables import SACCT, SCANCEL, SCONTROL, SINFO, SPRIO, SQUEUE, SSHARE

__all__ = ["TABLES", "render"]

TABLES: tuple[OptionTable, ...] = (
    SBATCH,
    SRUN,
    SALLOC,
    SQUEUE,
    SCANCEL,
    SACCT,
    SINFO,
    SCONTROL,
    SPRIO,
    SSHARE,
)
"""Every Slurm command's table, in the order the doc lists them."""

_HEAD = """# Slurm command options

Every option Slurm 22.05 gives each command (its `getopt_long` table and man page) is parsed
by Phalanx's command of that name; none is an "unrecognized option". Each is

- **implemented**: the command does what Slurm's does;
- **ignored**: accepted, and means nothing here, for the reason given (a script written for
  Slurm still runs);
- **refused**: parsed, then refused with a Slurm-shaped error that gives the reason.

Written from the tables in `src/phalanx/slurm/jobtable.py` and `querytables.py` by
`python -m phalanx.slurm.optiondoc > docs/slurm-options.md`; a test keeps this file current.
"""


def _spelling(option: Option) -> str:
    value = {FLAG: "", OPTIONAL: "[=value]"}.get(option.kind, "=value")
    names = [f"`--{name}{value}`" for name in (option.name, *option.aliases)]
    letters = [f"`-{letter}`" for letter in option.short]
    return ", ".join(letters + names)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _section(table: OptionTable) -> list[str]:
    options = sorted(table.options.values(), key=lambda o: o.name.lower())
    counts = {s: sum(o.status == s for o in options) for s in ("implemented", "ignored", "refused")}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    lines = [f"## {table.prog}", "", f"{len(options)} options: {summary}.", ""]
    lines += ["| option | status | note |", "|---|---|---|"]
    lines += [f"| {_spelling(o)} | {o.status} | {_cell(o.note)} |" for o in options]
    return [*lines, ""]


def render() -> str:
    """The whole document."""
    lines = [_HEAD]
    for table in TABLES:
        lines += _section(table)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render())
