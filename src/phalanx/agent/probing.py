"""Running one probe against a container, as the kubelet's prober does: the result and, for
a failure, the message the kubelet writes (``Liveness probe failed: ...``).

- httpGet: success for a status from 200 to 399 within the timeout (redirects not followed;
  an HTTPS certificate is not checked, as the kubelet does not); the ``User-Agent`` is
  ``kube-probe/1.32`` unless a header sets it.
- tcpSocket: success when a connection opens within the timeout.
- exec: success when the command exits 0 within the timeout; it runs as the container's
  process would (environment, directory, user), spawned and reaped by the task runner, which
  alone waits for children.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal as signals

import httpx

from phalanx.agent.containers import Container
from phalanx.agent.tasks import TaskRunner
from phalanx.protocol.agent import ProbeSpec

__all__ = ["USER_AGENT", "probe"]

USER_AGENT = "kube-probe/1.32"
_EXEC_POLL_S = 0.02


async def probe(
    spec: ProbeSpec,
    container: Container,
    *,
    address: str,
    http: httpx.AsyncClient,
    runner: TaskRunner,
) -> tuple[bool, str]:
    """Run ``spec`` once; (passed, why not). ``address``: the host when the probe names none."""
    host = spec.host or address
    try:
        if spec.kind == "httpGet":
            return await _http(spec, host, http)
        if spec.kind == "tcpSocket":
            return await _tcp(spec, host)
        return await _exec(spec, container, runner)
    except Exception as exc:  # a probe's failure is a result, never the agent's
        return False, f"{type(exc).__name__}: {exc}"


async def _http(spec: ProbeSpec, host: str, http: httpx.AsyncClient) -> tuple[bool, str]:
    url = f"{spec.scheme.lower()}://{_bracketed(host)}:{spec.port}{spec.path}"
    headers = {"User-Agent": USER_AGENT, **{h[0]: h[1] for h in spec.headers if len(h) == 2}}
    try:
        resp = await http.get(url, headers=headers, timeout=spec.timeout_s)
    except httpx.TimeoutException:
        return False, (
            f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting '
            "headers)"
        )
    except httpx.ConnectError as exc:
        if _refused(exc):
            target = f"{_bracketed(host)}:{spec.port}"
            return False, f'Get "{url}": dial tcp {target}: connect: connection refused'
        return False, f'Get "{url}": {exc}'
    except httpx.HTTPError as exc:
        return False, f'Get "{url}": {exc}'
    if 200 <= resp.status_code < 400:
        return True, ""
    return False, f"HTTP probe failed with statuscode: {resp.status_code}"


async def _tcp(spec: ProbeSpec, host: str) -> tuple[bool, str]:
    target = f"{_bracketed(host)}:{spec.port}"
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, spec.port), spec.timeout_s)
    except TimeoutError:
        return False, f"dial tcp {target}: i/o timeout"
    except ConnectionRefusedError:
        return False, f"dial tcp {target}: connect: connection refused"
    except OSError as exc:
        return False, f"dial tcp {target}: connect: {exc.strerror or exc}"
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True, ""


async def _exec(spec: ProbeSpec, container: Container, runner: TaskRunner) -> tuple[bool, str]:
    if not spec.command:
        return False, "exec probe without a command"
    proc = runner.spawn_probe(container, list(spec.command))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + spec.timeout_s
    while loop.time() < deadline:
        await asyncio.sleep(_EXEC_POLL_S)
        status = runner.probe_status(proc.pid)
        if status is not None:
            if status == 0:
                return True, ""
            return False, f"command {spec.command!r} exited with {status}"
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signals.SIGKILL)
    runner.forget_probe(proc.pid)
    return False, f"command {spec.command!r} timed out after {spec.timeout_s:g}s"


def _refused(exc: BaseException) -> bool:
    """Whether a connection refused is behind ``exc`` (httpx words it its own way)."""
    seen: BaseException | None = exc
    for _ in range(8):  # causes and contexts, not forever
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host
