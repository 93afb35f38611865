"""The command server: a warm process that runs Slurm commands for the native shims.

Tools run ``sbatch`` and ``squeue`` thousands of times, and a Python process takes longer to
start (9-15 ms here, with imports ~25 ms) than Slurm's C ``sbatch`` takes to submit a job. So
``phalanx shims`` writes a small C program (``shim.c``) that starts in well under a
millisecond, connects to this server's socket beside the controller's and hands over the
command: its argv, environment, working directory (as a file descriptor) and its standard
input, output and error themselves (``SCM_RIGHTS``). The server imported every command module
once and keeps children forked ahead of need waiting in ``accept()``; the one that takes the
connection takes on the caller's identity, descriptors, directory and environment, runs
``phalanx.slurm.<cmd>.main()``, the very code the Python shim runs, and reports its exit
status, while the server forks its replacement. Signals the caller gets (Ctrl-C, a timeout's SIGTERM) are forwarded
to the child, and a child killed by a signal makes the shim die of the same signal.

Identity comes from the kernel (``SO_PEERCRED``), never from the request. A server running as
root drops to the caller's uid, gid and groups in the child before it reads a byte of the
request; a server running as anyone else serves only its own uid and answers ``fallback`` to
others, whose shim then runs the Python command itself. So does a shim that finds no server.

Protocol (one connection per command, all integers in ASCII)::

    shim   -> "PHX1" + 8 hex digits (length of the rest) with SCM_RIGHTS [stdin, stdout, stderr,
              cwd]; then NUL-terminated strings: command, argc, argv..., envc, environ...
    server -> "fallback\\n"                     before reading anything: run the Python shim
    server -> "exit N\\n" | "signal N\\n"       how the command ended (the first line counts)
    shim   -> "signal N\\n"                     a signal the shim received, for the command

Commands that stay attached for a long time and relay a terminal (``srun``, ``salloc``) are
not served here; their shims are the Python ones.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import selectors
import signal
import socket
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["COMMANDS", "MAGIC", "SOCKET_NAME", "main", "serve"]

SOCKET_NAME = "commands.sock"
POOL = 2
"""Children waiting for a command. Two: a serial caller never waits for a fork."""
MAGIC = b"PHX1"
COMMANDS = ("sbatch", "scancel", "squeue", "sacct", "sinfo", "scontrol", "sprio", "sshare")
"""The commands the server runs (and the native shim forwards)."""
# What the commands import lazily, on some paths only: imported here once so no child pays.
_LAZY = (
    "array",
    "datetime",
    "fcntl",
    "getopt",
    "grp",
    "http",
    "http.client",
    "pwd",
    "re",
    "traceback",
    "urllib.parse",
    "phalanx.client.unixhttp",
    "phalanx.domain.hostlist",
)
_HEADER = len(MAGIC) + 8
_MAX_REQUEST = 64 << 20  # environments are large, not this large
_REQUEST_TIMEOUT_S = 30.0
# Signals a shim may forward; anything else in a request is ignored.
_FORWARDED = frozenset(
    {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2}
)


class _BadRequest(Exception):
    """A request that does not follow the protocol: the child ends with status 1."""


def preload() -> None:
    """Import every command and what they import lazily."""
    for name in (*(f"phalanx.slurm.{c}" for c in COMMANDS), *_LAZY):
        importlib.import_module(name)


def serve(path: str, parent: int | None = None, pool: int = POOL) -> None:
    """Serve commands on the Unix socket ``path`` until ``parent`` (a pipe's read end, held
    open by the controller) reaches end of file, or SIGTERM.

    ``pool`` children wait in ``accept()``, forked ahead of need: a command does not wait for
    a fork. A child that takes a connection says so on a pipe (its pid, one atomic write) and
    this process forks its replacement while the command runs."""
    preload()
    listener = _listen(path)
    took_r, took_w = os.pipe()
    wakeup_r, wakeup_w = os.pipe()
    for fd in (took_r, wakeup_r, wakeup_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wakeup_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wakeup fd is written
    stop = False

    def on_term(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    selector = selectors.DefaultSelector()
    selector.register(took_r, selectors.EVENT_READ, "took")
    selector.register(wakeup_r, selectors.EVENT_READ, "child")
    if parent is not None:
        selector.register(parent, selectors.EVENT_READ, "parent")
    own = [fd for fd in (took_r, wakeup_r, wakeup_w, parent) if fd is not None]
    idle: set[int] = set()
    spawner = _Spawner()
    try:
        while not stop:
            while len(idle) < pool and spawner.may_fork():
                pid = os.fork()
                if pid == 0:
                    code = 1
                    try:
                        code = _child(listener, took_w, own)
                    finally:
                        os._exit(code)
                idle.add(pid)
            for key, _ in selector.select(timeout=spawner.wait()):
                if key.data == "took":
                    for pid in _taken(took_r):
                        idle.discard(pid)
                elif key.data == "child":
                    _drain(wakeup_r)
                    for pid in _reaped():
                        if pid in idle:  # died before it took a command: not for long
                            idle.discard(pid)
                            spawner.lost()
                elif key.data == "parent" and not os.read(key.fd, 4096):
                    stop = True
    finally:
        selector.close()
        listener.close()
        for pid in idle:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        # Another server may have replaced the socket since (a restarted controller).
        try:
            if os.stat(path).st_ino == _bound_inode:
                os.unlink(path)
        except OSError:
            pass


_bound_inode = -1


class _Spawner:
    """Forks replacements at once, unless children keep dying idle (a broken environment):
    then at most one a second, so a fault does not become a fork loop."""

    def __init__(self) -> None:
        import time

        self._clock = time.monotonic
        self._losses: list[float] = []
        self._next = 0.0

    def lost(self) -> None:
        now = self._clock()
        self._losses = [t for t in self._losses if now - t < 1.0] + [now]
        if len(self._losses) > 10:
            self._next = now + 1.0

    def may_fork(self) -> bool:
        return self._clock() >= self._next

    def wait(self) -> float | None:
        left = self._next - self._clock()
        return left if left > 0 else None


def _listen(path: str) -> socket.socket:
    global _bound_inode
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # left by a server that was killed
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    # Anyone may connect: who they are comes from the kernel (SO_PEERCRED), not the mode.
    os.chmod(path, 0o666)
    _bound_inode = os.stat(path).st_ino
    listener.listen(1024)
    return listener


def _taken(fd: int) -> list[int]:
    data = b""
    try:
        while chunk := os.read(fd, 4096):
            data += chunk
    except BlockingIOError:
        pass
    return [int.from_bytes(data[i : i + 4], sys.byteorder) for i in range(0, len(data) - 3, 4)]


def _reaped() -> list[int]:
    """Children that ended. A busy one reported its own status to its shim."""
    ended: list[int] = []
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        ended.append(pid)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def _send(conn: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):  # else the shim is gone: nobody to tell
        conn.sendall(data)


# ------------------------------------------------------------------------------ the child
def _child(listener: socket.socket, took: int, inherited: list[int]) -> int:
    """Wait for a command; become its caller, take its request and run it; return the exit
    status (reported to the shim too)."""
    signal.set_wakeup_fd(-1)
    for fd in inherited:
        os.close(fd)
    for number in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    while True:
        try:
            conn, _ = listener.accept()
            break
        except InterruptedError:
            continue
    os.write(took, os.getpid().to_bytes(4, sys.byteorder))
    os.close(took)
    listener.close()
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    uid = int.from_bytes(creds[4:8], sys.byteorder)
    gid = int.from_bytes(creds[8:12], sys.byteorder)
    me = os.geteuid()
    if uid != me:
        if me != 0:
            # Only root can become the caller; the caller's own Python shim serves it.
            _send(conn, b"fallback\n")
            return 0
        _become(uid, gid)
    conn.settimeout(_REQUEST_TIMEOUT_S)
    try:
        command, argv, environ = _take_request(conn)
    except (_BadRequest, OSError) as exc:
        # On the caller's stderr when its descriptors arrived, else in the server's log.
        print(f"phalanx command server: bad request: {exc}", file=sys.stderr)
        return 1
    conn.settimeout(None)
    _watch(conn)
    code = _run(command, argv, environ, conn)
    signal.signal(signal.SIGIO, signal.SIG_IGN)
    _send(conn, f"exit {code}\n".encode())
    return code


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
    _reopen_standard_streams()
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
    import array

    fds = array.array("i")
    data, ancillary, _, _ = conn.recvmsg(_HEADER, socket.CMSG_SPACE(4 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    if len(data) < _HEADER:
        data += _receive_exactly(conn, _HEADER - len(data))
    return data, list(fds)


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
    if command not in COMMANDS or len(argv) != argc or len(entries) != envc:
        raise _BadRequest(f"malformed request for {command!r}")
    environ = {}
    for entry in entries:
        key, sep, value = entry.partition(b"=")
        if sep and key:
            environ[os.fsdecode(key)] = os.fsdecode(value)
    return command, argv, environ


def _reopen_standard_streams() -> None:
    """New ``sys.std*`` over the caller's descriptors 0-2, buffered as Python would buffer
    them for the caller's terminal or pipe."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        old = getattr(sys, name)
        interactive = False
        with contextlib.suppress(OSError):
            interactive = os.isatty(fd)
        stream = open(  # noqa: SIM115 - lives as long as the process
            fd,
            mode,
            encoding="utf-8",
            errors="backslashreplace" if fd == 2 else "surrogateescape",
            closefd=False,
            buffering=1 if interactive or fd == 2 else -1,  # 1: line-buffered
        )
        setattr(sys, name, stream)
        if old is not None:
            with contextlib.suppress(OSError, ValueError):
                old.flush()


def _watch(conn: socket.socket) -> None:
    """Deliver the signals the shim forwards (each first acknowledged as how the command
    ended, in case it ends of it); a shim that went away hangs the command up. Driven by
    SIGIO on the connection rather than a thread: no thread to start for every command."""
    import fcntl

    me = os.getpid()
    pending = bytearray()

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
                os.kill(me, signal.SIGHUP)
                return
            pending.extend(chunk)
            while b"\n" in pending:
                end = pending.index(b"\n")
                word, _space, number = bytes(pending[:end]).partition(b" ")
                del pending[: end + 1]
                if word == b"signal" and number.isdigit() and int(number) in _FORWARDED:
                    _send(conn, b"signal " + number + b"\n")
                    os.kill(me, int(number))

    signal.signal(signal.SIGIO, on_io)
    fcntl.fcntl(conn.fileno(), fcntl.F_SETOWN, me)
    fcntl.fcntl(
        conn.fileno(), fcntl.F_SETFL, fcntl.fcntl(conn.fileno(), fcntl.F_GETFL) | os.O_ASYNC
    )
    on_io()  # whatever arrived before SIGIO was armed


def _run(command: str, argv: list[str], environ: dict[str, str], conn: socket.socket) -> int:
    """Run ``main()`` of the command as its Python shim would; return the exit status."""
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
        # As the Python shim would: die of SIGINT, so a shell's loop sees the interrupt.
        signal.signal(signal.SIGIO, signal.SIG_IGN)
        _send(conn, b"signal 2\n")
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        return 130
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    return code if _flush() else 120


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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m phalanx.slurm.forkserver SOCKET [--parent-fd FD]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--parent-fd"):
        print("usage: python -m phalanx.slurm.forkserver SOCKET [--parent-fd FD]", file=sys.stderr)
        return 2
    serve(args[0], int(args[2]) if len(args) == 3 else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
