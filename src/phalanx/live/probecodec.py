"""A task's probes as JSON for the journal and snapshots (``phalanx.live.codec``), and as the
wire form the agent takes (``phalanx.protocol.agent.ProbesSpec``).

Defaults stay implicit in the journal, so rows written before probes existed (no ``probes``
key at all) and rows written with them both read back.
"""

from __future__ import annotations

from typing import Any

from phalanx.domain.probes import Exec, HttpGet, Probe, ProbeAction, Probes, TcpSocket
from phalanx.domain.time import SECOND
from phalanx.protocol.agent import ProbeSpec, ProbesSpec

__all__ = ["probes_from_dict", "probes_to_dict", "probes_wire"]

_KINDS = ("startup", "liveness", "readiness")
_DEFAULT = Probe(Exec(("true",)))


def probes_to_dict(probes: Probes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in _KINDS:
        probe: Probe | None = getattr(probes, kind)
        if probe is not None:
            out[kind] = _probe_to_dict(probe)
    if probes.grace != Probes().grace:
        out["grace"] = probes.grace
    return out


def probes_from_dict(data: dict[str, Any]) -> Probes:
    kwargs: dict[str, Any] = {k: _probe_from_dict(data[k]) for k in _KINDS if k in data}
    if "grace" in data:
        kwargs["grace"] = int(data["grace"])
    return Probes(**kwargs)


def _probe_to_dict(probe: Probe) -> dict[str, Any]:
    out: dict[str, Any] = {"action": _action_to_dict(probe.action)}
    for name in ("initial_delay", "period", "timeout", "success_threshold", "failure_threshold"):
        value = getattr(probe, name)
        if value != getattr(_DEFAULT, name):
            out[name] = value
    return out


def _probe_from_dict(data: dict[str, Any]) -> Probe:
    rest = {k: int(v) for k, v in data.items() if k != "action"}
    return Probe(_action_from_dict(data["action"]), **rest)


def _action_to_dict(action: ProbeAction) -> dict[str, Any]:
    if isinstance(action, HttpGet):
        return {
            "http_get": {
                "port": action.port,
                "path": action.path,
                "host": action.host,
                "scheme": action.scheme,
                "headers": [list(h) for h in action.headers],
            }
        }
    if isinstance(action, TcpSocket):
        return {"tcp_socket": {"port": action.port, "host": action.host}}
    return {"exec": list(action.command)}


def _action_from_dict(data: dict[str, Any]) -> ProbeAction:
    if "http_get" in data:
        h = data["http_get"]
        return HttpGet(
            port=int(h["port"]),
            path=str(h.get("path", "/")),
            host=h.get("host"),
            scheme=str(h.get("scheme", "HTTP")),
            headers=tuple((str(k), str(v)) for k, v in h.get("headers", ())),
        )
    if "tcp_socket" in data:
        t = data["tcp_socket"]
        return TcpSocket(port=int(t["port"]), host=t.get("host"))
    return Exec(tuple(str(a) for a in data["exec"]))


def probes_wire(probes: Probes) -> ProbesSpec:
    """What the agent is told: seconds as floats; no host: the agent's own address (the
    pod's, Kubernetes' default for httpGet and tcpSocket)."""

    def one(probe: Probe | None) -> ProbeSpec | None:
        if probe is None:
            return None
        action = probe.action
        common: dict[str, Any] = {
            "initial_delay_s": probe.initial_delay / SECOND,
            "period_s": probe.period / SECOND,
            "timeout_s": probe.timeout / SECOND,
            "success_threshold": probe.success_threshold,
            "failure_threshold": probe.failure_threshold,
        }
        if isinstance(action, HttpGet):
            return ProbeSpec(
                kind="httpGet",
                port=action.port,
                host=action.host or "",
                path=action.path,
                scheme="HTTPS" if action.scheme == "HTTPS" else "HTTP",
                headers=[list(h) for h in action.headers],
                **common,
            )
        if isinstance(action, TcpSocket):
            return ProbeSpec(kind="tcpSocket", port=action.port, host=action.host or "", **common)
        return ProbeSpec(kind="exec", command=list(action.command), **common)

    return ProbesSpec(
        startup=one(probes.startup),
        liveness=one(probes.liveness),
        readiness=one(probes.readiness),
        grace_s=probes.grace / SECOND,
    )
