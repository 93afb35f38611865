"""A container's probes and its pod's restart policy read from the pod spec, with
Kubernetes' defaults and its validation (errors name the field, e.g.
``spec.containers[0].livenessProbe.httpGet.port``).

A named ``port`` must be one of the container's ``ports``; ``grpc`` probes are refused (no
gRPC health client on the node). ``successThreshold`` must be 1 for liveness and startup
probes, as the API server requires.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from phalanx.domain.probes import RESTART_POLICIES, Exec, HttpGet, Probe, Probes, TcpSocket
from phalanx.domain.time import SECOND
from phalanx.errors import InputError

__all__ = ["pod_probes", "restart_policy"]

_FIELDS = (
    ("startupProbe", "startup"),
    ("livenessProbe", "liveness"),
    ("readinessProbe", "readiness"),
)


def restart_policy(spec: Mapping[str, Any], where: str) -> str:
    """``restartPolicy`` (``Always`` when not given, as the API server defaults it)."""
    policy = spec.get("restartPolicy", "Always")
    if policy not in RESTART_POLICIES:
        raise InputError(
            f'Unsupported value: "{policy}": supported values: '
            + ", ".join(f'"{p}"' for p in RESTART_POLICIES),
            field=f"{where}.restartPolicy",
        )
    return str(policy)


def pod_probes(
    spec: Mapping[str, Any],
    container: Mapping[str, Any],
    ports: Sequence[tuple[str, int]],
    where: str,
) -> Probes | None:
    """The probes of ``container`` (at ``where``) in pod ``spec``, None when it has none."""
    found: dict[str, Probe] = {}
    for field, kind in _FIELDS:
        body = container.get(field)
        if body is None:
            continue
        found[kind] = _probe(body, dict(ports), f"{where}.{field}", kind)
    if not found:
        return None
    grace = spec.get("terminationGracePeriodSeconds", 30)
    if not _is_int(grace) or grace < 0:
        raise InputError(
            "must be a non-negative integer",
            field=f"{where.rsplit('.', 1)[0]}.terminationGracePeriodSeconds",
        )
    return Probes(grace=grace * SECOND, **found)


def _probe(body: object, ports: Mapping[str, int], where: str, kind: str) -> Probe:
    if not isinstance(body, Mapping):
        raise InputError("must be an object", field=where)
    handlers = [h for h in ("httpGet", "tcpSocket", "exec", "grpc") if h in body]
    if len(handlers) != 1:
        raise InputError(
            "must specify exactly one handler type (httpGet, tcpSocket, exec)", field=where
        )
    handler = handlers[0]
    if handler == "grpc":
        raise InputError("grpc probes are not supported on this cluster", field=f"{where}.grpc")
    values: dict[str, int] = {}
    for name, default, least in (
        ("initialDelaySeconds", 0, 0),
        ("periodSeconds", 10, 1),
        ("timeoutSeconds", 1, 1),
        ("successThreshold", 1, 1),
        ("failureThreshold", 3, 1),
    ):
        value = body.get(name, default)
        if not _is_int(value) or value < least:
            raise InputError(f"must be an integer of at least {least}", field=f"{where}.{name}")
        values[name] = value
    if kind != "readiness" and values["successThreshold"] != 1:
        raise InputError(f"must be 1 for a {kind} probe", field=f"{where}.successThreshold")
    sub = body[handler]
    at = f"{where}.{handler}"
    if not isinstance(sub, Mapping):
        raise InputError("must be an object", field=at)
    action: HttpGet | TcpSocket | Exec
    if handler == "exec":
        command = sub.get("command")
        if (
            not isinstance(command, list)
            or not command
            or not all(isinstance(a, str) for a in command)
        ):
            raise InputError("must be a non-empty list of strings", field=f"{at}.command")
        action = Exec(tuple(command))
    else:
        port = _port(sub.get("port"), ports, f"{at}.port")
        host = sub.get("host")
        if host is not None and (not isinstance(host, str) or not host):
            raise InputError("must be a non-empty string", field=f"{at}.host")
        if handler == "tcpSocket":
            action = TcpSocket(port, host)
        else:
            path = sub.get("path", "/")
            if not isinstance(path, str):
                raise InputError("must be a string", field=f"{at}.path")
            scheme = sub.get("scheme", "HTTP")
            if scheme not in ("HTTP", "HTTPS"):
                raise InputError(
                    f'Unsupported value: "{scheme}": supported values: "HTTP", "HTTPS"',
                    field=f"{at}.scheme",
                )
            action = HttpGet(
                port=port,
                path=path if path.startswith("/") else "/" + path,
                host=host,
                scheme=scheme,
                headers=_headers(sub.get("httpHeaders"), f"{at}.httpHeaders"),
            )
    return Probe(
        action,
        initial_delay=values["initialDelaySeconds"] * SECOND,
        period=values["periodSeconds"] * SECOND,
        timeout=values["timeoutSeconds"] * SECOND,
        success_threshold=values["successThreshold"],
        failure_threshold=values["failureThreshold"],
    )


def _port(value: object, ports: Mapping[str, int], where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= 65535:
            raise InputError("must be between 1 and 65535, inclusive", field=where)
        return value
    if isinstance(value, str) and value:
        if value.isdecimal():  # an IntOrString written as a string of digits
            return _port(int(value), ports, where)
        if value in ports:
            return ports[value]
        raise InputError(f"no container port named {value!r}", field=where)
    raise InputError("must be a port number or the name of a container port", field=where)


def _headers(value: object, where: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InputError("must be a list", field=where)
    out = []
    for i, header in enumerate(value):
        if not isinstance(header, Mapping) or not isinstance(header.get("name"), str):
            raise InputError("a header needs a name", field=f"{where}[{i}].name")
        out.append((str(header["name"]), str(header.get("value", ""))))
    return tuple(out)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
