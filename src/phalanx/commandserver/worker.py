"""A worker of the command server: one user's process that takes a command's request
(protocol in ``phalanx.commandserver.server``), becomes its caller's process in all that
matters (descriptors, directory, environment, signals) and runs the command's ``main()``."""

from __future__ import annotations

import contextlib
import io
import os
import selectors
import signal
import socket
import sys

from phalanx.slurm import SERVED

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

__all__ = ["MAGIC", "send", "standard_streams", "work"]

MAGIC = b"PHX1"
"""A request starts with these bytes, then 8 hex digits: the length of the rest."""

_HEADER = len(MAGIC) + 8
_MAX_REQUEST = 64 << 20  # environments are large, not this large
_REQUEST_TIMEOUT_S = 30.0
# Signals a shim may forward; anything else in a request is ignored.
_FORWARDED = frozenset(
    {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2}
)


class _BadRequest(Exception):
    """A request that does not follow the protocol: the child ends with status 1."""


def send(conn: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):  # else the shim is gone: nobody to tell
        conn.sendall(data)


class _Killed(BaseException):
    """A signal forwarded by the shim (or its going away): the command ends of it."""

    def __init__(self, number: int) -> None:
        super().__init__(number)
        self.number = number


def work(
    channel: socket.socket, listener: socket.socket | None, uid: int, gid: int, me: int
) -> int:
    """Become ``uid``; run the commands this worker accepts on ``listener`` (the server's
    own user's workers) or is handed on ``channel``, until the server closes ``channel``."""
    if uid != me:
        _become(uid, gid)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the server's log is not for commands
        os.dup2(null, fd)
    os.chdir("/")
    signal.signal(signal.SIGIO, signal.SIG_IGN)  # armed only while a command runs
    baseline = {n: signal.getsignal(n) for n in _RESET}
    waiting = selectors.DefaultSelector()
    waiting.register(channel, selectors.EVENT_READ)
    if listener is not None:
        waiting.register(listener, selectors.EVENT_READ)
    while True:
        for key, _ in waiting.select():
            if key.fileobj is channel:
                try:
                    conn = _receive_conn(channel)
                except OSError:
                    return 1
                if conn is None:
                    return 0
            else:
                assert listener is not None
                try:
                    conn, _ = listener.accept()
                except (BlockingIOError, InterruptedError):
                    continue  # another worker took it
                conn.setblocking(True)
                creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
                if int.from_bytes(creds[4:8], sys.byteorder) != uid:
                    if me != 0:
                        # Only root can become the caller: its own Python shim serves it.
                        send(conn, b"fallback\n")
                    else:
                        socket.send_fds(channel, [b"f"], [conn.fileno()])
                    conn.close()
                    continue
                channel.sendall(b"t")
            line = _serve_one(conn, null)
            send(conn, line)
            conn.close()
            for number, handler in baseline.items():
                with contextlib.suppress(OSError, ValueError, TypeError):
                    signal.signal(number, handler)
            signal.alarm(0)
            try:
                channel.sendall(b"d")
            except OSError:
                return 0
            break  # the other ready key may be stale: select again


# Signal dispositions a command may change, put back after each.
_RESET = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGALRM,
    signal.SIGPIPE,
    signal.SIGIO,
)


def _receive_conn(channel: socket.socket) -> socket.socket | None:
    data, fds, _, _ = socket.recv_fds(channel, 1, 1)
    if not data:
        for fd in fds:
            os.close(fd)
        return None
    if len(fds) != 1:
        for fd in fds:
            os.close(fd)
        raise OSError("the server sent no connection")
    return socket.socket(fileno=fds[0])


def _serve_one(conn: socket.socket, null: int) -> bytes:
    """Run one command; give the caller's descriptors back; the line that answers it."""
    mask = os.umask(0o022)
    os.umask(mask)
    try:
        conn.settimeout(_REQUEST_TIMEOUT_S)
        try:
            command, argv, environ = _take_request(conn)
        except (_BadRequest, OSError) as exc:
            # On the caller's stderr when its descriptors arrived, else nowhere.
            with contextlib.suppress(OSError, ValueError):
                print(f"phalanx command server: bad request: {exc}", file=sys.stderr, flush=True)
            return b"exit 1\n"
        conn.settimeout(None)
        try:
            _watch(conn)
            return _run(command, argv, environ)
        except KeyboardInterrupt:  # between main() and here
            return b"signal 2\n"
        except _Killed as killed:
            return f"signal {killed.number}\n".encode()
        finally:
            signal.signal(signal.SIGIO, signal.SIG_IGN)
    finally:
        _flush()
        for fd in (0, 1, 2):  # the caller's pipes close when it reads the answer
            os.dup2(null, fd)
        standard_streams()
        os.chdir("/")
        os.umask(mask)


def _become(uid: int, gid: int) -> None:
    import pwd

    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        os.setgroups([])
    else:
        os.initgroups(entry.pw_name, gid)
    os.setgid(gid)
    os.setuid(uid)


def _take_request(conn: socket.socket) -> tuple[str, list[str], dict[str, str]]:
    header, fds = _receive_header(conn)
    if len(fds) != 4:
        for fd in fds:
            os.close(fd)
        raise _BadRequest(f"expected 4 descriptors, got {len(fds)}")
    stdin, stdout, stderr, cwd = fds
    for target, fd in enumerate((stdin, stdout, stderr)):
        os.dup2(fd, target)
        os.close(fd)
    try:
        os.fchdir(cwd)
    finally:
        os.close(cwd)
    standard_streams()
    _adopt_standard_streams()
    if header[: len(MAGIC)] != MAGIC:
        raise _BadRequest("not a Phalanx shim")
    try:
        length = int(header[len(MAGIC) :], 16)
    except ValueError:
        raise _BadRequest("bad length") from None
    if not 0 < length <= _MAX_REQUEST:
        raise _BadRequest(f"request of {length} bytes")
    body = _receive_exactly(conn, length)
    return _parse_body(body)


def _receive_header(conn: socket.socket) -> tuple[bytes, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, _HEADER, 4)
    if len(data) < _HEADER:
        data += _receive_exactly(conn, _HEADER - len(data))
    return data, fds


def _receive_exactly(conn: socket.socket, size: int) -> bytes:
    parts = []
    while size:
        chunk = conn.recv(min(size, 1 << 20))
        if not chunk:
            raise _BadRequest("the request was cut short")
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def _parse_body(body: bytes) -> tuple[str, list[str], dict[str, str]]:
    words = body.split(b"\0")
    if words[-1] != b"":
        raise _BadRequest("the request does not end with NUL")
    try:
        command = words[0].decode()
        argc = int(words[1])
        argv = [os.fsdecode(w) for w in words[2 : 2 + argc]]
        envc = int(words[2 + argc])
        entries = words[3 + argc : 3 + argc + envc]
    except (IndexError, ValueError, UnicodeDecodeError):
        raise _BadRequest("malformed request") from None
    if command not in SERVED or len(argv) != argc or len(entries) != envc:
        raise _BadRequest(f"malformed request for {command!r}")
    environ = {}
    for entry in entries:
        key, sep, value = entry.partition(b"=")
        if sep and key:
            environ[os.fsdecode(key)] = os.fsdecode(value)
    return command, argv, environ


def standard_streams() -> None:
    """Fresh ``sys.std*`` over descriptors 0-2, as a Python shim (``-I``, which ignores
    PYTHONUNBUFFERED) has them over a pipe or file: nothing buffered from before."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        old = getattr(sys, name)
        if old is not None:
            with contextlib.suppress(OSError, ValueError):
                old.flush()
        stream = open(  # noqa: SIM115 - lives as long as the process
            fd,
            mode,
            encoding="utf-8",
            errors="backslashreplace" if fd == 2 else "surrogateescape",
            closefd=False,
            buffering=1 if fd == 2 else -1,  # 1: line-buffered
        )
        setattr(sys, name, stream)


def _adopt_standard_streams() -> None:
    """A terminal gets line-buffered output, as Python gives it."""
    with contextlib.suppress(OSError, ValueError):
        if os.isatty(1) and isinstance(sys.stdout, io.TextIOWrapper):
            sys.stdout.reconfigure(line_buffering=True)


def _watch(conn: socket.socket) -> None:
    """Deliver the signals the shim forwards: SIGINT as Python delivers it
    (``KeyboardInterrupt``), the others as ``_Killed``, where the signal would have killed
    a command of its own process; a shim that went away hangs the command up. Driven by
    SIGIO on the connection: no thread to start for every command."""
    import fcntl

    pending = bytearray()
    delivered: set[int] = set()

    def on_io(*_: object) -> None:
        while True:
            chunk: bytes
            try:
                chunk = conn.recv(256, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                chunk = b""
            if not chunk:
                signal.signal(signal.SIGIO, signal.SIG_IGN)
                raise _Killed(signal.SIGHUP)
            pending.extend(chunk)
            while b"\n" in pending:
                end = pending.index(b"\n")
                word, _space, number = bytes(pending[:end]).partition(b" ")
                del pending[: end + 1]
                if word not in (b"signal", b"resend") or not number.isdigit():
                    continue
                value = int(number)
                # "resend": the shim's repeat of a signal until the command ends, in case
                # its notice was missed; a signal the command already had is not repeated.
                if value not in _FORWARDED or (word == b"resend" and value in delivered):
                    continue
                delivered.add(value)
                if value == signal.SIGINT:
                    raise KeyboardInterrupt
                raise _Killed(value)

    signal.signal(signal.SIGIO, on_io)
    fcntl.fcntl(conn.fileno(), fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(
        conn.fileno(), fcntl.F_SETFL, fcntl.fcntl(conn.fileno(), fcntl.F_GETFL) | os.O_ASYNC
    )
    on_io()  # whatever arrived before SIGIO was armed


def _run(command: str, argv: list[str], environ: dict[str, str]) -> bytes:
    """Run ``main()`` of the command as its Python shim would; the line that says how it
    ended."""
    import time

    os.environ.clear()
    os.environ.update(environ)
    time.tzset()  # the caller's TZ
    sys.argv = argv or [command]
    main = sys.modules[f"phalanx.slurm.{command}"].main
    try:
        code = _status(main())
    except SystemExit as exc:
        code = _status(exc.code)
    except KeyboardInterrupt:
        _flush()
        return b"signal 2\n"  # the Python shim dies of SIGINT too
    except _Killed as killed:
        _flush()
        return f"signal {killed.number}\n".encode()
    except Exception:
        import traceback

        traceback.print_exc()
        code = 1
    return f"exit {code if _flush() else 120}\n".encode()


def _status(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _flush() -> bool:
    ok = True
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            ok = False
    return ok
