"""The router's command line: where the API is and with which credential, where to listen.

``python -m phalanx.router --state-dir DIR`` takes the API's port (``kube.port``), the
controller's token (``token``) and the API's CA (``kube-ca.crt``) from the state directory,
as ``phalanx kubeconfig`` does; ``--server``, ``--token-file`` and ``--ca-file`` name them
otherwise (a router on another host). It writes its admin port to ``router.port`` and its pid
to ``router.pid`` there. Exit status 2 for bad arguments or a missing credential.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import ssl
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["main"]

log = logging.getLogger("phalanx.router")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m phalanx.router", description=__doc__)
    p.add_argument("--state-dir", type=Path, help="default $PHALANX_STATE_DIR")
    p.add_argument("--server", help="the Kubernetes API, https://HOST:PORT")
    p.add_argument("--token-file", type=Path, help="a file holding a bearer token")
    p.add_argument("--ca-file", type=Path, help="the API's CA certificate (PEM)")
    p.add_argument("--admin-host", default="127.0.0.1")
    p.add_argument("--admin-port", type=int, default=0, help="/metrics and /services (0: any)")
    p.add_argument("--node-address", default="0.0.0.0", help="where NodePort services are served")
    p.add_argument(
        "--hold-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="how long a request waits for a ready endpoint before a 503",
    )
    p.add_argument("--max-held", type=int, default=1000, help="requests held per service port")
    p.add_argument("--log-level", default="warning")
    return p


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text().strip()
    except OSError as e:
        raise SystemExit(f"phalanx router: cannot read {what} {path}: {e.strerror}") from e


def _api_url(port_file: Path) -> Callable[[], str]:
    """The API's URL from ``kube.port``, read again on each call (a restarted controller
    serves on another port); while the file is missing, the last one read."""
    last = [f"https://127.0.0.1:{_read(port_file, 'the API port')}"]

    def url() -> str:
        with contextlib.suppress(OSError):
            last[0] = f"https://127.0.0.1:{port_file.read_text().strip()}"
        return last[0]

    return url


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    state = args.state_dir or (
        Path(os.environ["PHALANX_STATE_DIR"]) if os.environ.get("PHALANX_STATE_DIR") else None
    )
    if state is None and not (args.server and args.token_file):
        print("phalanx router: give --state-dir, or --server and --token-file", file=sys.stderr)
        return 2
    try:
        if args.server:
            server: str | Callable[[], str] = args.server
        else:
            server = _api_url(Path(str(state)) / "kube.port")
        token = _read(args.token_file or Path(str(state)) / "token", "the token")
        ca = args.ca_file or (state / "kube-ca.crt" if state is not None else None)
        context = ssl.create_default_context(cafile=str(ca)) if ca is not None else None
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    except (OSError, ssl.SSLError) as e:
        print(f"phalanx router: the CA file: {e}", file=sys.stderr)
        return 2
    import uvloop

    return uvloop.run(_serve(args, server, token, context, state))


async def _serve(
    args: argparse.Namespace,
    server: str | Callable[[], str],
    token: str,
    context: ssl.SSLContext | None,
    state: Path | None,
) -> int:
    from phalanx.router.server import Router

    router = Router(
        server=server,
        token=token,
        ssl_context=context,
        admin_host=args.admin_host,
        admin_port=args.admin_port,
        node_address=args.node_address,
        hold_timeout=args.hold_timeout,
        max_held=args.max_held,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    port = await router.start()
    if state is not None:
        (state / "router.port").write_text(f"{port}\n")
        (state / "router.pid").write_text(f"{os.getpid()}\n")
    log.info("router admin on %s:%d", args.admin_host, port)
    try:
        await stop.wait()
    finally:
        await router.stop()
        if state is not None:
            for name in ("router.port", "router.pid"):
                with contextlib.suppress(FileNotFoundError):
                    (state / name).unlink()
    return 0
