"""``phalanx controller``: the controller process in the foreground (``phalanx up`` runs it)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from pathlib import Path

TYPE_CHECKING = False  # typing's costs the command's start-up
if TYPE_CHECKING:
    from typing import Any

    from phalanx.domain.cluster import Cluster

__all__ = ["add_arguments", "agent_tokens", "kube_port", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir", type=Path, help="default $PHALANX_STATE_DIR or ~/.local/state/phalanx"
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        help="state store: sqlite:///PATH or postgresql://... (default $PHALANX_DB, else "
        "state.db in the state directory)",
    )
    definition = parser.add_mutually_exclusive_group()
    definition.add_argument(
        "--config", type=Path, help="cluster definition (YAML); default: this machine as one node"
    )
    definition.add_argument(
        "--slurm-conf",
        type=Path,
        metavar="PATH",
        help="cluster from a slurm.conf (with topology.conf and gres.conf beside it)",
    )
    parser.add_argument(
        "--queues",
        type=Path,
        metavar="FILE",
        help="Kueue/Volcano queue objects (multi-document YAML), in place of the cluster "
        "YAML's queues: a job's account is its namespace",
    )
    parser.add_argument("--policy", default="phalanx", help="scheduling profile")
    parser.add_argument(
        "--port",
        type=int,
        default=6817,
        help="TCP port on 127.0.0.1 (0: any free port, written to controller.port)",
    )
    parser.add_argument(
        "--kube-port",
        type=int,
        default=None,
        metavar="PORT",
        help="the Kubernetes API's TLS port (default 6443 with the default --port, else any "
        "free port; written to kube.port in the state directory; -1: not served)",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--advertise",
        metavar="URL",
        help="this controller's URL as clients and agents reach it, which a standby names "
        "to them (default http://HOST:PORT)",
    )
    parser.add_argument(
        "--admin",
        action="append",
        default=[],
        metavar="USER",
        help="a user who may act on every job (root always may)",
    )
    parser.add_argument(
        "--epilog",
        type=int,
        default=0,
        metavar="MS",
        help="time a node spends in COMPLETING after a job (ms)",
    )
    parser.add_argument(
        "--dead-after",
        type=int,
        default=60,
        metavar="S",
        help="seconds without an agent before its node is marked down",
    )
    parser.add_argument(
        "--horizontal-pod-autoscaler-sync-period",
        dest="hpa_sync",
        type=float,
        default=15.0,
        metavar="S",
        help="seconds between HorizontalPodAutoscaler syncs (kube-controller-manager's flag)",
    )
    parser.add_argument("--gpus", type=int, help="GPUs of this machine, to emulate them")
    parser.add_argument("--gpu-model", help="GPU model of this machine, to emulate it")
    parser.add_argument("--cpus", type=int, help="CPUs of this machine (emulation)")
    parser.add_argument("--memory", type=int, metavar="MB", help="memory of this machine")
    parser.add_argument(
        "--tokens",
        type=Path,
        metavar="FILE",
        help="API tokens of users over TCP: lines 'TOKEN USER'",
    )
    parser.add_argument(
        "--agent-tokens",
        type=Path,
        metavar="FILE",
        help="credentials of agents on other hosts: lines 'NODE TOKEN'; an agent with one may "
        "act for its node only",
    )
    parser.add_argument(
        "--no-command-server",
        dest="command_server",
        action="store_false",
        help="do not start the Slurm commands' fork server (the shims then run as Python)",
    )
    parser.add_argument("--log-level", default="info")


def cluster_of(args: argparse.Namespace) -> Cluster:
    """The cluster: the YAML or slurm.conf given, else this machine as described by its
    agent; with the queue objects of ``--queues`` if given."""
    from phalanx.config.clusterspec import check_queue_routes

    cluster = _cluster_shape(args)
    source = str(getattr(args, "config", None) or getattr(args, "slurm_conf", None) or "<cluster>")
    if getattr(args, "queues", None) is not None:
        import dataclasses

        from phalanx.config.queues import queues_from_file

        cluster = dataclasses.replace(cluster, queues=queues_from_file(str(args.queues)))
        source = str(args.queues)
    check_queue_routes(cluster, source)
    return cluster


def queue_objects(args: argparse.Namespace) -> tuple[dict[str, Any], ...]:
    """The queue objects the cluster was read with (``--queues``, else the cluster YAML's
    ``queues:``), for the Kubernetes API's store (``ControllerOptions.queue_objects``)."""
    from phalanx.config.queue_objects import objects_from_yaml
    from phalanx.config.textfile import read_text

    if getattr(args, "queues", None) is not None:
        return tuple(objects_from_yaml(read_text(args.queues)))
    if getattr(args, "config", None) is not None:
        return tuple(objects_from_yaml(read_text(args.config), "queues"))
    return ()


def _cluster_shape(args: argparse.Namespace) -> Cluster:
    if args.config is not None:
        from phalanx.config.clusterspec import cluster_from_yaml
        from phalanx.config.textfile import read_text

        return cluster_from_yaml(read_text(args.config), str(args.config))
    if args.slurm_conf is not None:
        from phalanx.server.slurmconf_files import cluster_from_slurm_conf

        return cluster_from_slurm_conf(args.slurm_conf)
    from phalanx.agent.machine import describe
    from phalanx.server.machine_cluster import one_node_cluster

    machine = describe(
        gpus=args.gpus, gpu_model=args.gpu_model, cpus=args.cpus, memory_mb=args.memory
    )
    return one_node_cluster(
        machine.name,
        gpus=machine.gpus,
        gpu_model=machine.gpu_model or "",
        cpus=machine.cpus,
        memory_mb=machine.memory_mb,
    )


def db_url(args: argparse.Namespace) -> str | None:
    """The state store's URL: ``--db``, else ``$PHALANX_DB``, else None (the state
    directory's SQLite file); ``InputError`` naming the flag or variable if it is unusable."""
    import os

    from phalanx.live.dburl import check_url

    if args.db:
        return check_url(args.db, "--db")
    env = os.environ.get("PHALANX_DB")
    return check_url(env, "PHALANX_DB") if env else None


def kube_port(args: argparse.Namespace) -> int | None:
    """The Kubernetes API's port: ``--kube-port``; by default 6443 beside the default API
    port, else any free one (controllers started with ``--port 0`` or several on one machine
    must not contend for 6443); None when -1 turns it off."""
    port: int | None = args.kube_port
    if port is None:
        return 6443 if args.port == 6817 else 0
    return None if port < 0 else port


def run(args: argparse.Namespace) -> int:
    from phalanx.policies.catalog import POLICIES
    from phalanx.server.serve import ControllerOptions
    from phalanx.server.serve import run as serve
    from phalanx.server.statedir import StateDir, default_state_dir

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    if args.policy not in POLICIES:
        from phalanx.errors import InputError

        raise InputError(
            f"unknown policy {args.policy!r}; one of {', '.join(POLICIES)}", field="--policy"
        )
    opts = ControllerOptions(
        state=StateDir(args.state_dir or default_state_dir()),
        db=db_url(args),
        cluster=cluster_of(args),
        policy=args.policy,
        host=args.host,
        port=args.port,
        advertise=args.advertise,
        admins=frozenset(args.admin),
        epilog_ms=args.epilog,
        dead_after_ms=args.dead_after * 1000,
        hpa_sync_ms=round(args.hpa_sync * 1000),
        tokens=_tokens(args.tokens) if args.tokens is not None else {},
        kube_port=kube_port(args),
        queue_objects=queue_objects(args),
    )
    if args.agent_tokens is not None:
        opts.agent_tokens = agent_tokens(args.agent_tokens, opts.cluster.node_index)
    opts.state.make()
    server = _command_server(opts.state.root) if args.command_server else None
    try:
        return serve(opts)
    finally:
        if server is not None:
            server.stop()


class _CommandServer:
    """The Slurm commands' fork server (``phalanx.commandserver``) beside the controller,
    for as long as it runs: it ends when the pipe this process holds closes, however this
    process ends (kill -9 included)."""

    def __init__(self, root: Path) -> None:
        import os
        import subprocess
        import sys

        from phalanx.commandserver import SOCKET_NAME

        read_end, self._write_end = os.pipe()
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "phalanx.commandserver",
                    str(root / SOCKET_NAME),
                    "--parent-fd",
                    str(read_end),
                ],
                stdin=subprocess.DEVNULL,
                pass_fds=(read_end,),
                # A Ctrl-C meant for the controller's terminal is not for users' commands.
                start_new_session=True,
            )
        finally:
            os.close(read_end)

    def stop(self) -> None:
        import os
        import subprocess

        os.close(self._write_end)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _command_server(root: Path) -> _CommandServer | None:
    try:
        return _CommandServer(root)
    except OSError as exc:
        # The Slurm shims fall back to their Python selves: slower, not broken.
        logging.getLogger("phalanx.controller").warning("no command server: %s", exc)
        return None


def agent_tokens(path: Path, node_index: Callable[[str], int | None]) -> dict[str, str]:
    """``NODE TOKEN`` lines -> token -> node; each node of the cluster, each token once."""
    from phalanx.errors import InputError

    out: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        words = line.split("#")[0].split()
        if not words:
            continue
        if len(words) != 2:
            raise InputError("expected 'NODE TOKEN'", source=str(path), line=number)
        node, token = words
        if node_index(node) is None:
            raise InputError(f"no node {node!r} in the cluster", source=str(path), line=number)
        if token in out:
            raise InputError("a token given twice", source=str(path), line=number)
        out[token] = node
    return out


def _tokens(path: Path) -> dict[str, str]:
    from phalanx.errors import InputError

    out = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        words = line.split("#")[0].split()
        if not words:
            continue
        if len(words) != 2:
            raise InputError("expected 'TOKEN USER'", source=str(path), line=number)
        out[words[0]] = words[1]
    return out
