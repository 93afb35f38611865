"""The command server: warm processes that run Slurm commands for the native shims.

Tools run ``sbatch`` and ``squeue`` thousands of times, and a Python process takes longer to
start (9-15 ms here, with imports ~25 ms) than Slurm's C ``sbatch`` takes to submit a job. So
``phalanx shims`` writes a small C program (``shim.c``) that starts in well under a
millisecond, connects to this server's socket beside the controller's and hands over the
command: its argv, environment, working directory (as a file descriptor) and its standard
input, output and error themselves (``SCM_RIGHTS``).

The server imports every command module once and keeps *workers*: processes forked from it,
one user's each, that run commands one at a time. The server accepts a connection, reads who
is calling from the kernel (``SO_PEERCRED``, never from the request), and passes it to an idle
worker of that user (forking one when there is none). The worker takes on the caller's
descriptors, directory and environment, runs ``phalanx.slurm.<cmd>.main()``, the very code the
Python shim runs, gives the descriptors back (the caller's pipes close), reports the exit
status and waits for the next command. Nothing forks on the way of a command once a user's
worker is warm: no copy-on-write faults, no teardown. Signals the caller gets (Ctrl-C, a
timeout's SIGTERM) are forwarded and abort the command as they would have killed it, and the
shim dies of the same signal.

A worker of a server running as root drops to its user's uid, gid and groups before it reads
a byte of any request; a server running as anyone else serves only its own uid and answers
``fallback`` to others, whose shim then runs the Python command itself. So does a shim that
finds no server. A worker retires after ``IDLE_S`` idle or ``MAX_COMMANDS`` commands, which
bounds whatever a command could leave behind in it (one user's commands only, ever).

Protocol (one connection per command, all integers in ASCII)::

    shim   -> "PHX1" + 8 hex digits (length of the rest) with SCM_RIGHTS [stdin, stdout, stderr,
              cwd]; then NUL-terminated strings: command, argc, argv..., envc, environ...
    server -> "fallback\\n"                     before reading anything: run the Python shim
    server -> "exit N\\n" | "signal N\\n"       how the command ended
    shim   -> "signal N\\n"                     a signal the shim received, for the command
    shim   -> "resend N\\n"                     the last one again, each second until the
                                               answer: acted on only if not had yet

Commands that stay attached for a long time and relay a terminal (``srun``, ``salloc``) are
not served here; their shims are the Python ones.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import selectors
import signal
import socket
import sys

from phalanx.commandserver.worker import MAGIC
from phalanx.commandserver.worker import send as _send
from phalanx.commandserver.worker import standard_streams as _standard_streams
from phalanx.commandserver.worker import work as _work
from phalanx.slurm import SERVED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["COMMANDS", "MAGIC", "SOCKET_NAME", "main", "serve"]

SOCKET_NAME = "commands.sock"
IDLE_S = 60.0
"""A worker idle this long retires (the server's own user keeps one warm)."""
MAX_COMMANDS = 1_000
"""A worker retires after this many commands."""
MAX_WORKERS = 16
"""Workers per user at most; more commands at once wait for one to be free."""
COMMANDS = SERVED
"""The commands the server runs (and the native shim forwards)."""
# What the commands import lazily, on some paths only: imported here once so no child pays.
_LAZY = (
    "array",  # socket.recv_fds / send_fds import it when first called
    "collections",
    "datetime",
    "fcntl",
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


def preload() -> None:
    """Import every command and what they import lazily."""
    for name in (*(f"phalanx.slurm.{c}" for c in COMMANDS), *_LAZY):
        importlib.import_module(name)


def serve(path: str, parent: int | None = None) -> None:
    """Serve commands on the Unix socket ``path`` until ``parent`` (a pipe's read end, held
    open by the controller) reaches end of file, or SIGTERM."""
    preload()
    _standard_streams()
    # Keep the collector off the preloaded objects: a collection in a worker would write to
    # every object's header and copy every page the worker shares with this process.
    gc.collect()
    gc.freeze()
    _Server(path, parent).run()


class _Worker:
    """One user's process, running commands one at a time. Workers of the server's own user
    (``accepts``) take connections from the socket themselves, one hop fewer for the common
    case, and pass the other users' to the server. ``conn`` is the command the server handed
    to a worker and keeps a copy of, to answer the shim if the worker dies running it."""

    __slots__ = ("accepts", "busy", "channel", "conn", "dead", "idle_since", "pid", "served", "uid")

    def __init__(
        self, pid: int, uid: int, channel: socket.socket, accepts: bool, now: float
    ) -> None:
        self.pid = pid
        self.uid = uid
        self.channel = channel
        self.accepts = accepts
        self.conn: socket.socket | None = None
        self.busy = False
        self.idle_since = now
        self.served = 0
        self.dead = False


class _Server:
    def __init__(self, path: str, parent: int | None) -> None:
        import collections
        import time

        self.path = path
        self.parent = parent
        self.clock = time.monotonic
        self.me = os.geteuid()
        self.my_gid = os.getegid()
        self.listener = _listen(path)
        self.listener.setblocking(False)  # several workers wait on it; one wins each
        self.wakeup_r, self.wakeup_w = os.pipe()
        for fd in (self.wakeup_r, self.wakeup_w):
            os.set_blocking(fd, False)
        self.selector = selectors.DefaultSelector()
        self.workers: dict[int, _Worker] = {}
        self.waiting: dict[int, collections.deque[tuple[socket.socket, int]]] = (
            collections.defaultdict(collections.deque)
        )
        self.stop = False

    def run(self) -> None:
        signal.set_wakeup_fd(self.wakeup_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wakeup fd is written

        def on_term(*_: object) -> None:
            self.stop = True

        signal.signal(signal.SIGTERM, on_term)
        self.selector.register(self.wakeup_r, selectors.EVENT_READ, None)
        if self.parent is not None:
            self.selector.register(self.parent, selectors.EVENT_READ, None)
        try:
            self._fork(self.me, self.my_gid)
            while not self.stop:
                for key, _ in self.selector.select(timeout=self._retire()):
                    if key.fd == self.wakeup_r:
                        _drain(self.wakeup_r)
                        self._reap()
                    elif key.fd == self.parent:
                        if not os.read(key.fd, 4096):
                            self.stop = True
                    else:
                        self._heard(key.data)
        finally:
            self._close()

    def _mine(self, uid: int) -> list[_Worker]:
        return [w for w in self.workers.values() if w.uid == uid and not w.dead]

    # -------------------------------------------------------------------- messages
    def _heard(self, worker: _Worker) -> None:
        """``t``: an accepting worker took a command; ``d``: a worker is done with one;
        ``f`` + a descriptor: another user's command, for that user's worker. Nothing: the
        worker is gone."""
        fds: list[int]
        try:
            data, fds, _, _ = socket.recv_fds(worker.channel, 1, 1)
        except OSError:
            data, fds = b"", []
        if not data:
            for fd in fds:
                os.close(fd)
            self._gone(worker)
            return
        if data == b"t":
            worker.busy = True
            # Someone must be waiting at the socket while this command runs.
            mine = self._mine(worker.uid)
            acceptor_free = any(w.accepts and not w.busy for w in mine)
            if worker.accepts and not acceptor_free and len(mine) < MAX_WORKERS:
                self._fork(worker.uid, self.my_gid)
        elif data == b"d":
            if worker.conn is not None:
                worker.conn.close()
                worker.conn = None
            worker.busy = False
            worker.served += 1
            worker.idle_since = self.clock()
            self._dispatch(worker.uid)
        elif data == b"f" and len(fds) == 1:
            conn = socket.socket(fileno=fds[0])
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            uid = int.from_bytes(creds[4:8], sys.byteorder)
            gid = int.from_bytes(creds[8:12], sys.byteorder)
            self.waiting[uid].append((conn, gid))
            self._dispatch(uid)
        else:
            for fd in fds:
                os.close(fd)

    def _dispatch(self, uid: int) -> None:
        """Hand the user's waiting commands to its idle workers, forking some if need be."""
        queue = self.waiting.get(uid)
        while queue:
            conn, gid = queue[0]
            idle = [w for w in self._mine(uid) if not w.busy and not w.accepts]
            if idle:
                worker = idle[0]
            elif len(self._mine(uid)) < MAX_WORKERS:
                forked = self._fork(uid, gid, accepts=False)
                if forked is None:
                    return  # retried when a worker ends
                worker = forked
            else:
                return  # all busy: the first one free takes it
            queue.popleft()
            try:
                socket.send_fds(worker.channel, [b"c"], [conn.fileno()])
            except OSError:
                self._gone(worker)
                queue.appendleft((conn, gid))
                continue
            worker.conn = conn
            worker.busy = True

    def _gone(self, worker: _Worker) -> None:
        if not worker.dead:
            self.selector.unregister(worker.channel)
            worker.channel.close()
            worker.dead = True

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            worker = self.workers.pop(pid, None)
            if worker is None:
                continue
            if worker.conn is not None:  # it died running a command: say how
                if os.WIFSIGNALED(status):
                    _send(worker.conn, f"signal {os.WTERMSIG(status)}\n".encode())
                else:
                    _send(worker.conn, f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
                worker.conn.close()
                worker.conn = None
            self._gone(worker)
            if worker.uid == self.me and not self.stop and not self._mine(self.me):
                self._fork(self.me, self.my_gid)
            if self.waiting.get(worker.uid):
                self._dispatch(worker.uid)

    # -------------------------------------------------------------------- workers
    def _fork(self, uid: int, gid: int, accepts: bool = True) -> _Worker | None:
        accepts = accepts and uid == self.me
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            pid = os.fork()
        except OSError:
            ours.close()
            theirs.close()
            return None
        if pid == 0:  # the worker: never returns
            code = 1
            try:
                ours.close()
                listener = self.listener if accepts else None
                self._forget(keep=listener)
                code = _work(theirs, listener, uid, gid, self.me)
            finally:
                os._exit(code)
        theirs.close()
        worker = _Worker(pid, uid, ours, accepts, self.clock())
        self.workers[pid] = worker
        self.selector.register(ours, selectors.EVENT_READ, worker)
        return worker

    def _forget(self, keep: socket.socket | None) -> None:
        """In a new worker: close everything of the server's (the listener unless it
        accepts, other workers' channels, queued connections), undo its signal handling."""
        signal.set_wakeup_fd(-1)
        for number in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(number, signal.SIG_DFL)
        self.selector.close()
        if keep is None:
            self.listener.close()
        for fd in (self.wakeup_r, self.wakeup_w, self.parent):
            if fd is not None:
                os.close(fd)
        for worker in self.workers.values():
            if not worker.dead:
                worker.channel.close()
            if worker.conn is not None:
                worker.conn.close()
        for queue in self.waiting.values():
            for conn, _ in queue:
                conn.close()

    def _retire(self) -> float | None:
        """Retire workers idle too long or used enough; the time until the next is due."""
        now = self.clock()
        due: float | None = None
        for worker in list(self.workers.values()):
            if worker.dead or worker.busy:
                continue
            mine = self._mine(worker.uid)
            keep_warm = worker.accepts and sum(1 for w in mine if w.accepts) == 1
            used_up = worker.served >= MAX_COMMANDS
            if used_up or (not keep_warm and now - worker.idle_since >= IDLE_S):
                self._gone(worker)  # the worker reads end of file and exits
                if keep_warm:
                    self._fork(worker.uid, self.my_gid)
            elif not keep_warm:
                left = worker.idle_since + IDLE_S - now
                due = left if due is None else min(due, left)
        return due

    def _close(self) -> None:
        self.selector.close()
        self.listener.close()
        for worker in self.workers.values():
            if not worker.dead:
                worker.channel.close()  # idle ones exit; busy ones finish, then exit
        # Another server may have replaced the socket since (a restarted controller).
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == _bound_inode:
                os.unlink(self.path)


_bound_inode = -1


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


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m phalanx.commandserver SOCKET [--parent-fd FD]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--parent-fd"):
        print("usage: python -m phalanx.commandserver SOCKET [--parent-fd FD]", file=sys.stderr)
        return 2
    serve(args[0], int(args[2]) if len(args) == 3 else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
