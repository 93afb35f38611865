"""The command line of the query commands (``squeue``, ``sinfo``, ``sacct``, ``sprio``,
``sshare``): GNU-style options read with ``getopt``, and a bad one refused with Slurm's words."""

from __future__ import annotations

import getopt

__all__ = ["Usage", "read_options"]


class Usage(Exception):
    """A command line the command cannot run, or the help or version it asked for: printed
    as is, on stderr; exit status 0 for help and version, 1 otherwise."""

    @property
    def status(self) -> int:
        return 0 if str(self).startswith(("Usage", "slurm ")) else 1


def read_options(
    prog: str, argv: list[str], short: str, long: list[str]
) -> tuple[list[tuple[str, str]], list[str]]:
    """``getopt.gnu_getopt``: the options and the other words; an unknown option or a missing
    value raises ``Usage`` as Slurm's commands word it."""
    try:
        return getopt.gnu_getopt(argv, short, long)
    except getopt.GetoptError as exc:
        opt = f"-{exc.opt}" if len(exc.opt) == 1 else f"--{exc.opt}"
        raise Usage(
            f"{prog}: unrecognized option '{opt}'\nTry \"{prog} --help\" for more information"
        ) from None
