"""``phalanx down``: stop what ``phalanx up --detach`` started: the service router, every
agent of the state directory (however many ``phalanx up`` runs started them), then the
controller."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from pathlib import Path

__all__ = ["add_arguments", "run", "stop_pids"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir", type=Path, help="default $PHALANX_STATE_DIR or ~/.local/state/phalanx"
    )


def stop_pids(pids: list[int], timeout: float = 15.0) -> list[int]:
    """SIGTERM, then SIGKILL what still runs after ``timeout``; return those killed."""
    from phalanx.server.statedir import alive

    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return left


def run(args: argparse.Namespace) -> int:
    from phalanx.server.statedir import StateDir, alive, default_state_dir, read_pids

    state = StateDir((args.state_dir or default_state_dir()).expanduser())
    agents = sorted(p for pids in state.live_agents().values() for p in pids)
    controller = [p for p in read_pids(state.pid) if alive(p)]
    router = [p for p in read_pids(state.root / "router.pid") if alive(p)]
    if not agents and not controller and not router:
        print(f"phalanx down: nothing runs from {state.root}", file=sys.stderr)
        return 0
    stop_pids(router)
    stop_pids(agents)
    stop_pids(controller)
    with contextlib.suppress(OSError):
        router_files = [state.root / "router.pid", state.root / "router.port"]
        for path in [state.agents_pid, state.pid, *router_files, *state.agents_dir.glob("*.pid")]:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    print(f"Phalanx stopped ({len(agents)} agent(s) and the controller).")
    return 0
