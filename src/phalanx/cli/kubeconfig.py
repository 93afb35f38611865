"""``phalanx kubeconfig [--user NAME]``: a kubeconfig for the controller's Kubernetes API
(the CA, ``https://127.0.0.1:PORT``, a bearer token), printed as YAML."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir", type=Path, help="default $PHALANX_STATE_DIR or ~/.local/state/phalanx"
    )
    parser.add_argument(
        "--user",
        metavar="NAME",
        help="a user to issue (or reread) a token for; default: the controller's owner, an "
        "administrator",
    )
    parser.add_argument("--server", metavar="URL", help="default https://127.0.0.1:PORT")


def run(args: argparse.Namespace) -> int:
    import getpass

    import yaml

    from phalanx.errors import PhalanxError
    from phalanx.kube.kubeconfig import issue_token, kubeconfig
    from phalanx.server.statedir import StateDir, default_state_dir

    state = StateDir(args.state_dir or default_state_dir())
    port_file, ca = state.root / "kube.port", state.root / "kube-ca.crt"
    if not ca.exists():
        raise PhalanxError(
            f"no Kubernetes API in {state.root}: start the controller first (phalanx up)"
        )
    if args.server:
        server = args.server
    elif port_file.exists():
        server = f"https://127.0.0.1:{port_file.read_text().strip()}"
    else:
        raise PhalanxError(f"the controller of {state.root} does not run (no kube.port)")
    if args.user:
        user, token = args.user, issue_token(state.root / "kube-tokens", args.user)
    else:
        user, token = getpass.getuser(), state.read_or_make_token()
    print(yaml.safe_dump(kubeconfig(server, ca.read_bytes(), user, token), sort_keys=False), end="")
    return 0
