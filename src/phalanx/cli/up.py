"""``phalanx up``: the controller and the node agents of this machine, in one command.

The controller and each agent are separate processes that talk HTTP, as on a real cluster.
In the foreground, Ctrl-C stops them all; ``--detach`` leaves them running in the
background until ``phalanx down``. With a cluster definition whose node names are not this
machine's, every node is emulated here by its own agent (a multi-node cluster on one box).

A node never gets a second agent: agents of this state directory still running (after a
controller was killed, say) are found (``StateDir.live_agents``) and kept; they register
with the new controller and keep their tasks. Should two run for a node anyway, the
controller keeps the live one and refuses the other (``phalanx.live.fencing``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from phalanx.cli import controller as controller_cli
from phalanx.errors import PhalanxError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from phalanx.server.statedir import StateDir

__all__ = ["add_arguments", "run"]

READY_TIMEOUT_S = 60.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    controller_cli.add_arguments(parser)
    parser.add_argument("--detach", action="store_true", help="run in the background")
    parser.add_argument(
        "--peers",
        metavar="URL[,URL...]",
        help="the other controllers on the same PostgreSQL store (--db): this one leads or "
        "stands by, and this machine's agents follow whichever leads",
    )
    parser.add_argument(
        "--agents",
        default=None,
        metavar="all|none|NAMES",
        help="which nodes get an agent on this machine (default: this host's node if the "
        "cluster has it, else all of them, emulated)",
    )


def _controller_argv(args: argparse.Namespace, state: Path) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "phalanx",
        "controller",
        "--state-dir",
        str(state),
        "--policy",
        args.policy,
        "--port",
        str(args.port),
        "--host",
        args.host,
        "--epilog",
        str(args.epilog),
        "--dead-after",
        str(args.dead_after),
        "--log-level",
        args.log_level,
        # phalanx up is for a machine that may run other controllers: any free port unless told.
        "--kube-port",
        str(args.kube_port if args.kube_port is not None else 0),
    ]
    if args.config is not None:
        argv += ["--config", str(args.config.resolve())]
    if args.slurm_conf is not None:
        argv += ["--slurm-conf", str(args.slurm_conf.resolve())]
    if args.queues is not None:
        argv += ["--queues", str(args.queues.resolve())]
    for flag in ("gpus", "gpu_model", "cpus", "memory"):
        value = getattr(args, flag)
        if value is not None:
            argv += [f"--{flag.replace('_', '-')}", str(value)]
    if args.tokens is not None:
        argv += ["--tokens", str(args.tokens.resolve())]
    if args.advertise is not None:
        argv += ["--advertise", args.advertise]
    if args.agent_tokens is not None:
        argv += ["--agent-tokens", str(args.agent_tokens.resolve())]
    db = controller_cli.db_url(args)
    if db is not None:
        argv += ["--db", db]
    for admin in args.admin:
        argv += ["--admin", admin]
    return argv


def _agent_nodes(args: argparse.Namespace, names: list[str]) -> list[str]:
    if args.agents == "none":
        return []
    if args.agents in (None, "all"):
        host = socket.gethostname().split(".")[0]
        if args.agents is None and host in names:
            return [host]
        return names
    wanted = [n.strip() for n in args.agents.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in names]
    if unknown:
        raise PhalanxError(f"--agents: no node {', '.join(unknown)} in the cluster")
    return wanted


def _peers(args: argparse.Namespace) -> list[str]:
    """The other controllers' URLs (``--peers``), checked: they share a PostgreSQL store."""
    if not args.peers:
        return []
    db = controller_cli.db_url(args)
    if db is None or not db.startswith("postgresql"):
        raise PhalanxError(
            "--peers: controllers share their state in PostgreSQL; give --db postgresql://..."
            " (or PHALANX_DB) to every one of them"
        )
    if args.port == 0:
        raise PhalanxError("--peers: give a fixed --port, where peers and agents will find it")
    if args.agent_tokens is None:
        raise PhalanxError(
            "--peers: this machine's agents will also talk to the other controllers; give "
            "them credentials with --agent-tokens FILE (the same file to every controller)"
        )
    peers = [u.strip().rstrip("/") for u in args.peers.split(",") if u.strip()]
    for url in peers:
        if not url.startswith(("http://", "https://")):
            raise PhalanxError(f"--peers: {url!r} is not an http:// or https:// URL")
    return peers


def _agent_token(args: argparse.Namespace, state: StateDir, node: str) -> Path:
    """A file holding ``node``'s credential from ``--agent-tokens`` (only its owner reads it),
    for its agent's ``--token-file``."""
    from phalanx.cli.controller import agent_tokens

    for token, name in agent_tokens(args.agent_tokens, lambda n: 0).items():
        if name == node:
            path = state.agents_dir / f"{node}.token"
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(token + "\n")
            return path
    raise PhalanxError(f"--agent-tokens: no credential for node {node} in {args.agent_tokens}")


def _wait_ready(state: Path, proc: subprocess.Popen[bytes], log: Path) -> str:
    from phalanx.client.address import ControllerAddress
    from phalanx.client.wirecall import ControllerUnreachable, WireCaller

    caller = WireCaller(ControllerAddress(socket_path=str(state / "controller.sock")), timeout=5)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-5:]
            raise PhalanxError("the controller stopped: " + " | ".join(tail))
        try:
            status, answer = caller.call("GET", "/v1/ping")
            if status == 200:
                return "leader"
            role = answer.get("role") if isinstance(answer, dict) else None
            if role == "standby":  # another controller leads the store
                return "standby"
        except ControllerUnreachable:
            pass
        time.sleep(0.05)
    raise PhalanxError(f"the controller did not answer within {READY_TIMEOUT_S:g} s; see {log}")


def run(args: argparse.Namespace) -> int:
    from phalanx.server.statedir import StateDir, default_state_dir

    state = StateDir((args.state_dir or default_state_dir()).expanduser())
    state.make()
    running = state.running_controller()
    if running is not None:
        print(
            f"phalanx up: a controller already runs (pid {running}, {state.root})", file=sys.stderr
        )
        return 1
    cluster = controller_cli.cluster_of(
        args
    )  # read here too: a bad definition fails before forking
    nodes = _agent_nodes(args, [n.name for n in cluster.nodes])
    peers = _peers(args)
    if peers and args.advertise is None:
        args.advertise = f"http://{args.host}:{args.port}"
    env = dict(os.environ, PHALANX_STATE_DIR=str(state.root))
    log = state.logs / "controller.log"
    with open(log, "ab") as out:
        controller = subprocess.Popen(
            _controller_argv(args, state.root),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=args.detach,
        )
    procs = [controller]
    kept: list[int] = []
    kept_router: list[int] = []
    try:
        role = _wait_ready(state.root, controller, log)
        live = state.live_agents()
        for name in nodes:
            if live.get(name):
                kept.extend(live[name])  # it registers with this controller by itself
                continue
            node = cluster.nodes[cluster.node_index(name) or 0]
            # With peers, the agents follow whichever controller leads (over TCP);
            # alone, they use this controller's socket.
            where = ["--socket", str(state.socket)]
            if peers:
                urls = ",".join([args.advertise, *peers])
                token = _agent_token(args, state, name)
                where = ["--controller", urls, "--token-file", str(token)]
            argv = [
                sys.executable,
                "-m",
                "phalanx.agent",
                *where,
                "--node",
                name,
                "--gpus",
                str(node.gpus),
                "--gpu-model",
                node.gpu_model,
                "--cpus",
                str(node.cpus),
                "--memory",
                str(node.memory_mb),
            ]
            with open(state.logs / f"agent-{name}.log", "ab") as out:
                agent = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=args.detach,
                )
            procs.append(agent)
            state.agent_pid(name).write_text(f"{agent.pid}\n")
        with contextlib.suppress(FileNotFoundError):
            state.agents_pid.unlink()  # the per-node files say it all now
        router = _start_router(state, env, args.detach, kept_router)
        if router is not None:
            procs.append(router)
    except BaseException:
        _stop(procs[::-1])
        raise
    port = state.port.read_text().strip() if state.port.exists() else str(args.port)
    gpus = sum(n.gpus for n in cluster.nodes)
    print(
        f"Phalanx is up: {len(cluster.nodes)} node(s), {gpus} GPU(s), "
        f"{len(nodes)} agent(s) on this machine."
    )
    if kept:
        print(f"  kept    {len(kept)} agent(s) still running from before (pid {_pids(kept)})")
    if kept_router:
        print(f"  kept    the service router still running (pid {_pids(kept_router)})")
    if peers:
        print(f"  role    {role}; peers {', '.join(peers)}")
    print(f"  state   {state.root}")
    print(f"  API     unix:{state.socket}  http://{args.host}:{port}/v1 (token in {state.token})")
    print(f"  web     http://{args.host}:{port}/ui (sign in with a token)")
    kube_port = state.root / "kube.port"
    if kube_port.exists():
        print(
            f"  kube    https://{args.host}:{kube_port.read_text().strip()}"
            f" (phalanx kubeconfig > ~/.kube/config)"
        )
    router_port = state.root / "router.port"
    if router_port.exists():
        print(
            f"  router  Services on their cluster IPs; metrics"
            f" http://127.0.0.1:{router_port.read_text().strip()}/services"
        )
    print(f"  logs    {state.logs}")
    print("  try     phalanx submit -- hostname; phalanx jobs; phalanx nodes")
    if args.detach:
        print("  stop    phalanx down")
        return 0
    print("  stop    Ctrl-C")
    sys.stdout.flush()
    return _foreground(procs, kept + kept_router)


ROUTER_WAIT_S = 10.0


def _start_router(
    state: StateDir, env: dict[str, str], detach: bool, kept: list[int]
) -> subprocess.Popen[bytes] | None:
    """The service router (``phalanx.router``) beside a controller that serves the
    Kubernetes API; one that still runs for this state directory is kept (it follows the
    controller to its new port). Waits briefly for it to list the API and listen."""
    from phalanx.server.statedir import alive, read_pids

    if not (state.root / "kube.port").exists():
        return None
    running = [p for p in read_pids(state.root / "router.pid") if alive(p)]
    if running:
        kept.extend(running)
        return None
    with contextlib.suppress(FileNotFoundError):
        (state.root / "router.port").unlink()
    with open(state.logs / "router.log", "ab") as out:
        router = subprocess.Popen(
            [sys.executable, "-m", "phalanx.router", "--state-dir", str(state.root)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=detach,
        )
    (state.root / "router.pid").write_text(f"{router.pid}\n")
    deadline = time.monotonic() + ROUTER_WAIT_S
    while not (state.root / "router.port").exists() and time.monotonic() < deadline:
        if router.poll() is not None:
            break  # its log says why; the cluster runs without it
        time.sleep(0.05)
    return router


def _pids(pids: list[int]) -> str:
    return ", ".join(str(p) for p in pids)


def _foreground(procs: list[subprocess.Popen[bytes]], kept: list[int]) -> int:
    stopping = False

    def _on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    while not stopping and all(p.poll() is None for p in procs):
        time.sleep(0.2)
    from phalanx.cli.down import stop_pids

    stop_pids(kept)  # agents kept from before are this cluster's too
    _stop(procs[::-1])
    return 0 if stopping else 1


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """Agents first (they end their tasks), then the controller."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + 10
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
