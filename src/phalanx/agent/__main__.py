"""``python -m phalanx.agent``: start a node agent (a thin shell over ``Agent``)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence

from phalanx.agent.agent import Agent
from phalanx.agent.machine import describe

RESTART_BACKOFF_ENV = "PHALANX_RESTART_BACKOFF"
"""The environment variable that sets ``--restart-backoff``'s default (``phalanx up`` passes
its environment on to the agents it starts)."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m phalanx.agent",
        description="Run the tasks of Phalanx jobs on this node for a controller.",
    )
    parser.add_argument("--node", help="node name as the controller knows it (default: host)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--controller",
        metavar="URL",
        help="controller URL, http://host:6817; several (a leader and its standbys) "
        "separated by commas",
    )
    where.add_argument("--socket", metavar="PATH", help="controller Unix socket")
    parser.add_argument("--token-file", metavar="FILE", help="bearer token for the controller")
    parser.add_argument("--address", default="127.0.0.1", help="address tasks reach this node at")
    emulate = parser.add_argument_group("declared resources (override detection)")
    emulate.add_argument("--gpus", type=_count, metavar="N")
    emulate.add_argument("--gpu-model", metavar="MODEL", help="e.g. h100")
    emulate.add_argument("--cpus", type=_positive, metavar="N")
    emulate.add_argument("--memory", type=_positive, metavar="MB")
    parser.add_argument(
        "--restart-backoff",
        type=_seconds,
        default=os.environ.get(RESTART_BACKOFF_ENV, "10"),
        metavar="SECONDS",
        help="first delay before a container that restarts in place (a pod's restartPolicy "
        "Always) starts again; it doubles at each restart in a row, up to 300 s (default: "
        f"${RESTART_BACKOFF_ENV}, else the kubelet's 10 s; tests shorten it)",
    )
    parser.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )
    args = parser.parse_args(argv)
    if args.token_file is not None:
        try:
            with open(args.token_file) as f:
                args.token = f.read().strip()
        except OSError as exc:
            parser.error(f"cannot read the token file: {exc}")
        if not args.token:
            parser.error(f"the token file {args.token_file} is empty")
    else:
        args.token = None
    return args


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not positive")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # httpx logs every request at INFO: thousands a second on a busy node.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    machine = describe(
        args.node,
        gpus=args.gpus,
        gpu_model=args.gpu_model,
        cpus=args.cpus,
        memory_mb=args.memory,
    )
    agent = Agent(
        machine,
        controller=args.controller,
        socket_path=args.socket,
        token=args.token,
        address=args.address,
        backoff_s=args.restart_backoff,
    )
    return asyncio.run(agent.run())


if __name__ == "__main__":
    sys.exit(main())
