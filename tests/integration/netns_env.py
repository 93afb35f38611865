"""Agents on other hosts for the integration tests: each node's agent in its own network
namespace (``ip netns``), joined to the controller over TCP through a veth pair with its
node's own credential (``--agent-tokens``); the namespaces reach each other through this
host's namespace (forwarding on), as hosts on one network do.

Needs root and ``ip`` (iproute2): ``NEEDS_NETNS`` skips otherwise, with the reason.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from phalanx.server.localcluster import LocalCluster, cluster_yaml

__all__ = ["DEAD_AFTER_S", "NEEDS_NETNS", "Host", "hosts", "netns_cluster", "until"]

NEEDS_NETNS = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and ip (iproute2)"
)

DEAD_AFTER_S = 4  # the agents' lease is half of it


@dataclass
class Host:
    """A node's agent in its own network namespace, at ``address``, reaching the
    controller at ``gateway`` through the veth ``link`` (the controller's end)."""

    node: str
    netns: str
    link: str
    address: str
    gateway: str
    agent: subprocess.Popen[bytes] | None = None

    def cut(self) -> None:
        _ip("link", "set", self.link, "down")

    def heal(self) -> None:
        _ip("link", "set", self.link, "up")


def _ip(*args: str, netns: str | None = None) -> None:
    prefix = ["ip", "netns", "exec", netns, "ip"] if netns else ["ip"]
    subprocess.run([*prefix, *args], check=True, capture_output=True)


@contextlib.contextmanager
def _forwarding() -> Iterator[None]:
    """IPv4 forwarding on in this namespace while the hosts are up (as it was after)."""
    knob = Path("/proc/sys/net/ipv4/ip_forward")
    before = knob.read_text()
    knob.write_text("1\n")
    try:
        yield
    finally:
        knob.write_text(before)


def _free_net() -> int:
    """A second octet ``X`` such that no address of this namespace is in 10.X.0.0/16: the
    hosts' links go there. A run killed before its clean-up leaves its links (and their
    routes) behind, and a second run on the same subnet would send its agents' packets to
    the dead run's namespaces."""
    shown = subprocess.run(["ip", "-o", "-4", "addr"], check=True, capture_output=True, text=True)
    used = {int(m) for m in re.findall(r"inet 10\.(\d+)\.", shown.stdout)}
    for octet in (*range(231, 255), *range(200, 231)):
        if octet not in used:
            return octet
    raise RuntimeError("no free 10.X.0.0/16 for the test hosts")


@contextlib.contextmanager
def hosts(count: int) -> Iterator[list[Host]]:
    tag = f"{os.getpid() % 100000}"
    net = _free_net()
    made: list[Host] = []
    try:
        for i in range(1, count + 1):
            host = Host(
                f"node{i}",
                f"phx{tag}n{i}",
                f"phx{tag}h{i}",
                f"10.{net}.{i}.2",
                f"10.{net}.{i}.1",
            )
            made.append(host)
            peer = f"phx{tag}c{i}"
            _ip("netns", "add", host.netns)
            _ip("link", "add", host.link, "type", "veth", "peer", "name", peer)
            _ip("link", "set", peer, "netns", host.netns)
            _ip("addr", "add", f"{host.gateway}/24", "dev", host.link)
            _ip("link", "set", host.link, "up")
            _ip("addr", "add", f"{host.address}/24", "dev", peer, netns=host.netns)
            _ip("link", "set", peer, "up", netns=host.netns)
            _ip("link", "set", "lo", "up", netns=host.netns)
            _ip("route", "add", "default", "via", host.gateway, netns=host.netns)
        with _forwarding():
            yield made
    finally:
        for host in made:
            if host.agent is not None and host.agent.poll() is None:
                host.agent.terminate()  # an agent told to stop kills its tasks first
                try:
                    host.agent.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    host.agent.kill()
                    host.agent.wait()
            with contextlib.suppress(subprocess.CalledProcessError):
                _ip("link", "del", host.link)
            with contextlib.suppress(subprocess.CalledProcessError):
                _ip("netns", "del", host.netns)


@contextlib.contextmanager
def netns_cluster(tmp_path: Path, nodes: list[Host], cpus: int = 32) -> Iterator[LocalCluster]:
    tokens = tmp_path / "agent-tokens"
    tokens.write_text("".join(f"{h.node} token-{h.node}\n" for h in nodes))
    cluster = LocalCluster(
        tmp_path / "state",
        cluster_yaml(len(nodes), 8, cpus),
        extra_args=(
            "--host",
            "0.0.0.0",
            "--agent-tokens",
            str(tokens),
            "--dead-after",
            str(DEAD_AFTER_S),
        ),
    )
    try:
        cluster.start_controller()
        port = int((cluster.state_dir / "controller.port").read_text())
        for host in nodes:
            secret = tmp_path / f"{host.node}.token"
            secret.write_text(f"token-{host.node}\n")
            argv = [
                *("ip", "netns", "exec", host.netns, sys.executable, "-m", "phalanx.agent"),
                *("--controller", f"http://{host.gateway}:{port}", "--node", host.node),
                *("--token-file", str(secret), "--address", host.address),
                *("--gpus", "8", "--gpu-model", "A100", "--cpus", str(cpus), "--memory", "65536"),
            ]
            with open(cluster.logs / f"agent-{host.node}.log", "ab") as out:
                host.agent = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
                )
        until(
            "the agents registered",
            lambda: all(n["agent"] for n in cluster.call("GET", "/v1/nodes")),
        )
        yield cluster
    finally:
        cluster.stop()
    for name in ("controller", *(f"agent-{h.node}" for h in nodes)):
        assert "Traceback" not in cluster.log_tail(name, 400), name


def until(what: str, check: Any, timeout: float = 40.0) -> Any:
    """``check()``'s first true answer, asked every 0.1 s; ``AssertionError`` naming
    ``what`` if none comes within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout} s")
