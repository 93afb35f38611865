"""``phalanx demo``: start a four-node emulated cluster here and give it some work to show.

It runs ``phalanx up --detach`` on the packaged demo cluster (unless a controller already
runs), then submits: a 2-node x 4-task gang, an array with a ``%2`` throttle, a job that
runs out of time, and a long ``normal`` job that a ``high``-QOS job then preempts. It
prints the ids and how to watch (the commands, and the dashboard's sign-in link);
``phalanx down`` stops everything.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["add_arguments", "run"]

GANG = (
    "import os, time; v = os.environ; "
    "print('rank', v['SLURM_PROCID'], 'of', v['SLURM_NTASKS'], 'on', v['SLURMD_NODENAME'], "
    "'GPUs', v.get('CUDA_VISIBLE_DEVICES'), 'master', v['MASTER_ADDR'] + ':' + v['MASTER_PORT'], "
    "flush=True); time.sleep(45)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir", type=Path, help="default $PHALANX_STATE_DIR or ~/.local/state/phalanx"
    )
    parser.add_argument("--port", type=int, default=6817)


def run(args: argparse.Namespace) -> int:
    from phalanx.cli import up
    from phalanx.client.address import ControllerAddress
    from phalanx.client.wirecall import WireCaller
    from phalanx.server.statedir import StateDir, default_state_dir

    state = StateDir((args.state_dir or default_state_dir()).expanduser())
    config = resources.files("phalanx") / "data" / "demo-cluster.yaml"
    if state.running_controller() is None:
        with resources.as_file(config) as path:
            parser = argparse.ArgumentParser()
            up.add_arguments(parser)
            up_args = parser.parse_args(
                [
                    "--config",
                    str(path),
                    "--detach",
                    "--agents",
                    "all",
                    "--port",
                    str(args.port),
                    "--state-dir",
                    str(state.root),
                ]
            )
            status = up.run(up_args)
        if status != 0:
            return status
    else:
        print(f"A controller already runs in {state.root}: submitting the demo to it.")
    caller = WireCaller(ControllerAddress(socket_path=str(state.socket)))
    out = state.root / "demo"
    out.mkdir(parents=True, exist_ok=True)
    base: dict[str, Any] = {
        "workdir": str(out),
        "environment": {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    }

    def submit(**request: Any) -> int:
        answer = caller.call_ok("POST", "/v1/jobs", body={**base, **request})
        return int(answer["job_ids"][0][0])

    gang = submit(
        name="gang",
        command=[sys.executable, "-c", GANG],
        nodes="2",
        ntasks_per_node=4,
        gpus_per_task=2,
        time="5:00",
        output="gang-%j.out",
    )
    # CPU-only, so that they leave the GPUs to the jobs below.
    array = submit(
        name="array",
        command=["sh", "-c", "echo task $SLURM_ARRAY_TASK_ID; sleep 8"],
        array="0-7%2",
        time="2:00",
    )
    timeout = submit(name="too-long", command=["sleep", "600"], time="0:20")
    normal = [
        submit(name=f"normal-{i}", command=["sleep", "600"], gpus_per_task=8, time="30:00")
        for i in (1, 2)
    ]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # every GPU busy before the urgent job comes
        if all(caller.call_ok("GET", f"/v1/jobs/{j}")["state"] == "RUNNING" for j in normal):
            break
        time.sleep(0.1)
    urgent = submit(
        name="urgent", command=["sleep", "20"], gpus_per_task=8, qos="high", time="5:00"
    )
    victim = normal[1]
    print()
    print(
        f"Submitted: gang {gang} (2 nodes x 4 tasks), array {array}_[0-7%2], "
        f"job {timeout} (20 s limit: ends TIMEOUT), jobs {normal[0]} and {normal[1]} "
        f"(normal QOS, 8 GPUs each: the cluster is full), then {urgent} (high QOS: it "
        f"preempts a normal job, which is requeued and starts again after it)."
    )
    print("Watch it:")
    env = "" if args.state_dir is None else f"PHALANX_STATE_DIR={state.root} "
    # The command as this shell can run it: .venv/bin/phalanx is often not on PATH.
    here = os.path.abspath(sys.argv[0]) if os.path.basename(sys.argv[0]) == "phalanx" else ""
    if here and shutil.which("phalanx") != here:
        env += here.removesuffix("phalanx")
    print(f"  {env}phalanx jobs --all        # states, reasons, nodes")
    print(f"  {env}phalanx nodes             # GPUs allocated per node")
    print(
        f"  {env}phalanx job {victim}           # the one preempted (the most recent): Restarts=1"
    )
    print(f"  curl -s --unix-socket {state.socket} http://x/metrics | grep ^phalanx_")
    with contextlib.suppress(OSError, ValueError):
        # The owner's token signs the browser in as an administrator (it then leaves the
        # address bar); the page is on this machine's loopback only.
        port = int(state.port.read_text())
        token = state.token.read_text().strip()
        print(f"  dashboard: http://127.0.0.1:{port}/ui?token={token}")
    print(f"  outputs in {out}")
    print(f"  {env}phalanx down              # stop everything")
    return 0
