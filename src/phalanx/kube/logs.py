"""``GET /api/v1/namespaces/NS/pods/NAME/log``: a pod's output (``kubectl logs``), read from
the file its workload's task writes (``phalanx.kube.controllers.log_path``).

Query parameters as kube-apiserver takes them (``PodLogOptions``): ``container``,
``follow`` (stream until the pod ends or goes), ``tailLines``, ``limitBytes``,
``timestamps``, ``sinceSeconds`` / ``sinceTime``, ``previous``. Errors are worded as
kube-apiserver words them (``container "x" is not valid for pod "y"``).

The file holds no time per line (the agents write the task's raw stdout and stderr), so the
times are approximate: lines already written carry the file's modification time (when the
last of them was written: an upper bound), followed lines the time they were read; a
``since`` later than the file's modification time leaves out what was written before.
All containers of a pod share one file (a pod is one engine task)."""

from __future__ import annotations

import asyncio
import datetime
import os
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from phalanx.kube.controllers import log_path
from phalanx.kube.errors import BadRequest, NotFound
from phalanx.kube.store import ObjectStore

__all__ = ["LogOptions", "PodLog", "open_log"]

PODS = ("", "pods")
_ENDED = frozenset(("Succeeded", "Failed"))
_POLL = 0.2
"""Seconds between looks at a followed file (and at its pod)."""


def _int(query: Mapping[str, str], name: str, least: int) -> int | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name}: Invalid value: {raw!r}: must be an integer") from None
    if value < least:
        raise BadRequest(
            f'PodLogOptions "" is invalid: {name}: Invalid value: {value}: must be greater '
            f"than {'or equal to ' if least == 0 else ''}{least - 1 if least else 0}"
        )
    return value


def _flag(query: Mapping[str, str], name: str) -> bool:
    return query.get(name, "").lower() in ("1", "true")


def _stamp(t: float) -> str:
    """RFC 3339 with nanoseconds, as the kubelet prefixes lines with ``timestamps``."""
    moment = datetime.datetime.fromtimestamp(t, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}000Z"


def _parse_time(raw: str) -> float:
    try:
        return datetime.datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise BadRequest(f'sinceTime: Invalid value: "{raw}": not an RFC 3339 time') from None


class LogOptions:
    """The query parameters of one log request, checked."""

    def __init__(self, query: Mapping[str, str], now: float) -> None:
        self.container = query.get("container") or None
        self.follow = _flag(query, "follow")
        self.previous = _flag(query, "previous")
        self.timestamps = _flag(query, "timestamps")
        self.tail = _int(query, "tailLines", 0)
        self.limit = _int(query, "limitBytes", 1)
        seconds = _int(query, "sinceSeconds", 1)
        since_time = query.get("sinceTime") or None
        if seconds is not None and since_time is not None:
            raise BadRequest(
                'PodLogOptions "" is invalid: sinceSeconds: Forbidden: at most one of sinceTime'
                " or sinceSeconds may be specified"
            )
        self.since: float | None = (
            now - seconds
            if seconds is not None
            else _parse_time(since_time)
            if since_time
            else None
        )


def _containers(pod: Mapping[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    return [
        str(c.get("name"))
        for part in ("initContainers", "containers")
        for c in spec.get(part) or ()
        if isinstance(c, dict)
    ]


class PodLog:
    """One pod's log as a request asked for it: ``chunks()`` yields its bytes."""

    def __init__(
        self,
        store: ObjectStore,
        namespace: str,
        name: str,
        options: LogOptions,
        clock: Callable[[], float],
    ) -> None:
        self.store = store
        self.namespace = namespace
        self.name = name
        self.options = options
        self.clock = clock
        pod = store.peek(PODS, namespace, name)
        if pod is None:
            raise NotFound(PODS, name)
        names = _containers(pod)
        container = options.container
        if container is None:
            main = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or ()]
            if len(main) != 1:
                raise BadRequest(
                    f"a container name must be specified for pod {name}, choose one of: "
                    f"[{' '.join(main)}]"
                )
            container = main[0]
        elif container not in names:
            raise BadRequest(f'container "{container}" is not valid for pod "{name}"')
        if options.previous:
            raise BadRequest(
                f'previous terminated container "{container}" in pod "{name}" not found'
            )
        path = log_path(pod)
        if path is None or not path.exists():
            phase = (pod.get("status") or {}).get("phase")
            if phase in _ENDED:
                raise BadRequest(f'container "{container}" in pod "{name}" has no log')
            raise BadRequest(
                f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
            )
        self.path: Path = path

    def _ended(self) -> bool:
        pod = self.store.peek(PODS, self.namespace, self.name)
        return pod is None or (pod.get("status") or {}).get("phase") in _ENDED

    def _head(self) -> tuple[bytes, int, float]:
        """What the file holds now, cut to ``since`` and ``tailLines``: (bytes, the offset
        read to, the file's modification time)."""
        with self.path.open("rb") as f:
            data = f.read()
            offset = f.tell()
        mtime = os.stat(self.path).st_mtime
        opts = self.options
        if opts.since is not None and mtime < opts.since:
            data = b""
        if opts.tail is not None:
            lines = data.splitlines(keepends=True)
            data = b"".join(lines[len(lines) - opts.tail :] if opts.tail else [])
        return data, offset, mtime

    def _stamped(self, data: bytes, t: float) -> bytes:
        if not self.options.timestamps or not data:
            return data
        prefix = _stamp(t).encode() + b" "
        return b"".join(prefix + line for line in data.splitlines(keepends=True))

    async def chunks(self) -> AsyncIterator[bytes]:
        left = self.options.limit
        data, offset, mtime = self._head()
        pending = b""  # a followed line not ended yet: stamped and sent once it ends
        while True:
            out = self._stamped(data, mtime)
            if left is not None:
                out = out[:left]
                left -= len(out)
            if out:
                yield out
            if (left is not None and left <= 0) or not self.options.follow:
                return
            ended = self._ended()  # looked at before the last read: nothing written is missed
            await asyncio.sleep(0 if ended else _POLL)
            with self.path.open("rb") as f:
                f.seek(offset)
                more = f.read()
                offset = f.tell()
            pending += more
            cut = pending.rfind(b"\n") + 1
            data, pending = pending[:cut], pending[cut:]
            mtime = self.clock()
            if ended:
                if pending:
                    data, pending = data + pending, b""
                out = self._stamped(data, mtime)
                if left is not None:
                    out = out[:left]
                if out:
                    yield out
                return


def open_log(
    store: ObjectStore,
    namespace: str,
    name: str,
    query: Mapping[str, str],
    clock: Callable[[], float],
) -> PodLog:
    """The log a request asks for; ``NotFound`` or ``BadRequest`` before any byte is sent."""
    return PodLog(store, namespace, name, LogOptions(query, clock()), clock)
