"""The ``phalanx`` command: one argparse parser, one module per subcommand.

A subcommand module is imported only when that subcommand runs (or its ``--help`` is asked
for), so ``phalanx --help`` starts without numpy, matplotlib or rich. Each module provides the
``Subcommand`` protocol. Errors a user can cause (``PhalanxError``, a missing or unreadable
file, bad arguments) end as one line ``phalanx: error: ...`` on stderr and exit status 2, never
a traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, cast

from phalanx import __version__
from phalanx.errors import PhalanxError

__all__ = ["COMMANDS", "EXIT_INTERRUPTED", "EXIT_USAGE", "Subcommand", "main"]

PROG = "phalanx"
EXIT_USAGE = 2
"""Bad input of any kind: argparse's own status for bad arguments."""
EXIT_INTERRUPTED = 130


class Subcommand(Protocol):
    """What a subcommand module provides."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the subcommand's options to its (sub)parser."""

    def run(self, args: argparse.Namespace) -> int:
        """Carry out the subcommand; return the exit status. Raise ``PhalanxError`` or
        ``OSError`` for bad input: ``main`` turns them into one-line messages."""


@dataclass(frozen=True, slots=True)
class _Entry:
    module: str
    help: str

    def load(self) -> Subcommand:
        return cast(Subcommand, importlib.import_module(self.module))


COMMANDS: dict[str, _Entry] = {
    "simulate": _Entry(
        "phalanx.cli.simulate",
        "replay a trace (or a generated workload) under several policies and compare them",
    ),
    "simulate-serving": _Entry(
        "phalanx.cli.simulate_serving",
        "serving (request-rate load, autoscaled replicas) next to training: three set-ups",
    ),
    "advise": _Entry(
        "phalanx.cli.advise",
        "which scheduler for my workload: every set-up simulated over seeds and loads",
    ),
    "up": _Entry("phalanx.cli.up", "start the controller and this machine's node agents"),
    "down": _Entry("phalanx.cli.down", "stop what phalanx up --detach started"),
    "demo": _Entry("phalanx.cli.demo", "start an emulated 4-node cluster here and submit a demo"),
    "controller": _Entry("phalanx.cli.controller", "run the controller in the foreground"),
    "kubeconfig": _Entry(
        "phalanx.cli.kubeconfig", "print a kubeconfig for kubectl and Kubernetes clients"
    ),
    "submit": _Entry("phalanx.cli.submit", "submit a job: phalanx submit [options] -- CMD ARGS..."),
    "jobs": _Entry("phalanx.cli.jobs", "list pending and running jobs (--all: finished too)"),
    "job": _Entry("phalanx.cli.job", "show everything about one job"),
    "cancel": _Entry("phalanx.cli.cancel", "cancel jobs"),
    "nodes": _Entry("phalanx.cli.nodes", "list the nodes and what is allocated on them"),
    "acct": _Entry("phalanx.cli.acct", "list finished jobs from accounting"),
    "shims": _Entry("phalanx.cli.shims", "write sbatch, squeue, scancel... commands into DIR"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``phalanx`` command with ``argv`` (default: ``sys.argv[1:]``); return its status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    chosen = _chosen_command(args_list)
    parser = _parser(chosen)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:
        # argparse has printed its usage error (status 2) or the help (status 0); returning the
        # status rather than exiting keeps ``main`` callable in-process.
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    command: Subcommand = args.subcommand
    try:
        return command.run(args)
    except PhalanxError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(_describe_os_error(exc))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv``: its first word that is not an option."""
    for word in argv:
        if not word.startswith("-"):
            return word
    return None


def _parser(chosen: str | None) -> argparse.ArgumentParser:
    """The full parser; only the chosen subcommand's module is imported to add its options."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Phalanx: a workload manager for GPU clusters.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for name, entry in COMMANDS.items():
        sub = subparsers.add_parser(name, help=entry.help, description=entry.help)
        if name == chosen:
            module = entry.load()
            module.add_arguments(sub)
            sub.set_defaults(subcommand=module)
    return parser


def _describe_os_error(exc: OSError) -> str:
    if exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


def _fail(message: str) -> int:
    # One line, whatever the message: a multi-line message would read like a traceback.
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    return EXIT_USAGE
