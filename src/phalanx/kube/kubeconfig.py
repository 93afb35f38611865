"""Kubeconfigs and the tokens they carry: ``phalanx kubeconfig [--user NAME]``. Tokens issued
for users live in the state directory's ``kube-tokens`` (lines ``TOKEN USER``, mode 0600); the
controller re-reads that file when it changes."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Any

__all__ = ["issue_token", "kubeconfig", "read_tokens"]


def read_tokens(path: Path) -> dict[str, str]:
    """token -> user of a file of lines ``TOKEN USER`` (missing file: none)."""
    out: dict[str, str] = {}
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) >= 2 and not words[0].startswith("#"):
                out[words[0]] = words[1]
    return out


def issue_token(path: Path, user: str) -> str:
    """``user``'s token in ``path``, added (file mode 0600) if it has none."""
    for token, name in read_tokens(path).items():
        if name == user:
            return token
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a") as f:
        f.write(f"{token} {user}\n")
    return token


def kubeconfig(server: str, ca_pem: bytes, user: str, token: str) -> dict[str, Any]:
    """A kubeconfig for ``user`` on the API at ``server`` (https://HOST:PORT)."""
    import base64

    cluster = "phalanx"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": f"{user}@{cluster}", "context": {"cluster": cluster, "user": user}}],
        "current-context": f"{user}@{cluster}",
        "preferences": {},
    }
