"""One HTTP/1.1 exchange over a Unix socket, on ``_socket`` alone.

Why not ``http.client``: importing it (with ``email``, ``ssl`` and friends) costs more than
the call itself, and the Slurm-compatible commands are run thousands of times by scripts.
The exchange is the simplest HTTP there is: one request with ``Connection: close``, the
answer read to the end of the stream, ``Content-Length`` or chunked bodies.
"""

from __future__ import annotations

import _socket

__all__ = ["Broken", "exchange"]


class Broken(Exception):
    """No connection, no answer, or an answer that is not HTTP: ``str()`` says which."""


def exchange(
    path: str,
    timeout: float,
    method: str,
    target: str,
    headers: dict[str, str],
    body: bytes | None,
) -> tuple[int, bytes]:
    """Send one request to the server on socket ``path``; return (status, body)."""
    head = [f"{method} {target} HTTP/1.1", "Host: localhost", "Connection: close"]
    head += [f"{k}: {v}" for k, v in headers.items() if k.lower() != "connection"]
    if body is not None:
        head.append(f"Content-Length: {len(body)}")
    request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b"")
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    chunks: list[bytes] = []
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(request)
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except TimeoutError:
        raise Broken(f"no answer within {timeout:g} s") from None
    except OSError as exc:
        raise Broken(exc.strerror or str(exc)) from None
    finally:
        sock.close()
    return _parse(b"".join(chunks))


def _parse(raw: bytes) -> tuple[int, bytes]:
    head, sep, payload = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = lines[0].split(" ", 2)
    if not sep or len(status) < 2 or not status[0].startswith("HTTP/") or not status[1].isdecimal():
        raise Broken("the connection was closed before an answer")
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    if "chunked" in fields.get("transfer-encoding", "").lower():
        payload = _unchunk(payload)
    elif "content-length" in fields:
        length = int(fields["content-length"])
        if len(payload) < length:
            # The server went away mid-answer (killed): as http.client's IncompleteRead.
            raise Broken("the connection was closed before the whole answer")
        payload = payload[:length]
    return int(status[1]), payload


def _unchunk(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            return bytes(out)
        if len(data) < size:
            break
        out += data[:size]
        data = data[size + 2 :]
    raise Broken("the connection was closed before the whole answer")
