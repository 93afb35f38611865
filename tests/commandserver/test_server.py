"""The command server and the native shim: a command runs in a forked child of a warm process,
as its caller, with the caller's descriptors, directory, environment and signals."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from phalanx.commandserver import SOCKET_NAME
from phalanx.server.localcluster import LocalCluster
from phalanx.slurm.shims import PYTHON_DIR, write_shims

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="changes user: needs root")


def native_only(directory: Path) -> Path:
    """Shims with no Python self to fall back on: what runs, ran in the server."""
    shims = write_shims(directory)
    assert shims.native, shims.why_not
    shutil.rmtree(directory / PYTHON_DIR)
    return directory


def run(
    bin_dir: Path, line: str, state: Path, cwd: Path, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    environ = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(cwd),
        "PHALANX_STATE_DIR": str(state),
        **env,
    }
    return subprocess.run(
        line,
        shell=True,
        cwd=cwd,
        env=environ,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def server_pid(socket_path: Path) -> int:
    """The command server listening on ``socket_path`` (its children share its command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if str(socket_path).encode() in argv:
            found.append((int(entry.name), int(stat.rsplit(")", 1)[1].split()[1])))
    pids = {pid for pid, _ in found}
    [server] = [pid for pid, parent in found if parent not in pids]
    return server


def children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(word) for word in text.split()]


def settled_children(pid: int, quiet_s: float = 1.0, timeout: float = 20.0) -> set[int]:
    """``pid``'s children once they have not changed for ``quiet_s`` (a worker an earlier
    test's killed command left to be replaced comes late on a loaded machine)."""
    deadline = time.monotonic() + timeout
    seen = set(children(pid))
    since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = set(children(pid))
        if now != seen:
            seen, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return seen
    raise AssertionError(f"the children of {pid} kept changing")


def wait_for(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


# ------------------------------------------------------------- against a real controller
@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return native_only(tmp_path_factory.mktemp("bin"))


def test_a_command_runs_in_the_server_with_the_callers_cwd_stdin_and_environment(
    phalanx: LocalCluster, bin_dir: Path, tmp_path: Path
) -> None:
    work = tmp_path / "sub dir"
    work.mkdir()
    script = '#!/bin/sh\n#SBATCH -J fromscript\npwd\necho "$GREETING"\n'
    done = run(
        bin_dir,
        "sbatch --parsable",
        phalanx.state_dir,
        work,
        stdin=script,
        SBATCH_JOB_NAME="fromenv",
        GREETING="hello there",
    )
    assert (done.returncode, done.stderr) == (0, ""), done
    job_id = int(done.stdout)
    [job] = phalanx.wait([job_id], timeout=60)
    assert job["state"] == "COMPLETED"
    assert job["name"] == "fromenv"  # SBATCH_* over #SBATCH, as Slurm
    assert (work / f"slurm-{job_id}.out").read_text() == f"{work}\nhello there\n"


def test_exit_statuses_and_messages_are_the_commands(
    phalanx: LocalCluster, bin_dir: Path, tmp_path: Path
) -> None:
    done = run(bin_dir, "squeue -j 999999", phalanx.state_dir, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "slurm_load_jobs error: Invalid job id specified\n",
    )
    done = run(bin_dir, "sbatch --bogus", phalanx.state_dir, tmp_path)
    assert done.returncode == 255
    assert "unrecognized option '--bogus'" in done.stderr
    done = run(bin_dir, "sbatch --version; scancel 999999; echo $?", phalanx.state_dir, tmp_path)
    assert (done.stdout, done.stderr) == ("slurm 22.05.8\n0\n", "")


def running_in(server: int, stdin: int) -> int | None:
    """The worker of ``server`` whose standard input is the pipe ``stdin``, if any."""
    pipe = f"pipe:[{os.fstat(stdin).st_ino}]"
    for pid in children(server):
        try:
            if os.readlink(f"/proc/{pid}/fd/0") == pipe:
                return pid
        except OSError:
            continue
    return None


def waiting_shim(bin_dir: Path, state: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """``sbatch`` with no script reads it from standard input: here, until told to stop."""
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "PHALANX_STATE_DIR": str(state)}
    return subprocess.Popen([str(bin_dir / "sbatch")], stdin=subprocess.PIPE, env=env, cwd=cwd)


def catches(pid: int, number: int) -> bool:
    """Whether process ``pid`` has a handler for signal ``number`` (``SigCgt``)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (number - 1) & 1)
    return False


def inspect(*pids: int | None) -> str:
    """What the kernel says of each process: its signal state, where it sleeps, its
    descriptors; for a failure's message."""
    out = []
    for pid in pids:
        if pid is None:
            continue
        facts = [f"pid {pid}"]
        for name in ("status", "wchan", "stack", "syscall"):
            try:
                with open(f"/proc/{pid}/{name}") as f:
                    text = f.read()
            except OSError as exc:
                text = str(exc)
            if name == "status":
                text = " ".join(
                    line for line in text.splitlines() if line.startswith(("State", "Sig", "Shd"))
                )
            facts.append(f"{name}: {text.strip()}")
        with contextlib.suppress(OSError):
            fds = {fd: os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
            facts.append(f"fds: {fds}")
        out.append("; ".join(facts))
    return "\n".join(out)


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_shim_ends_the_command_and_the_shim_of_it(
    phalanx: LocalCluster, bin_dir: Path, tmp_path: Path, number: int
) -> None:
    server = server_pid(phalanx.state_dir / SOCKET_NAME)
    shim = waiting_shim(bin_dir, phalanx.state_dir, tmp_path)
    assert shim.stdin is not None
    try:
        wait_for(lambda: running_in(server, shim.stdin.fileno()) is not None)
        worker = running_in(server, shim.stdin.fileno())
        # The shim forwards once the server has its request; before, the signal acts on the
        # shim as inherited, which a caller that ignores it (a CI runner, nohup) makes a no-op.
        wait_for(lambda: catches(shim.pid, number))
        shim.send_signal(number)
        try:
            ended = shim.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the shim outlived its signal: {inspect(shim.pid, worker, server)}")
        assert ended == -number
        # The command ended, its worker gave the caller's descriptors back and lives on.
        wait_for(lambda: running_in(server, shim.stdin.fileno()) is None)
        assert worker in children(server)
    finally:
        if shim.poll() is None:
            shim.kill()
            shim.wait()
        shim.stdin.close()


def test_a_resent_signal_reaches_a_command_that_missed_the_first(
    phalanx: LocalCluster, tmp_path: Path
) -> None:
    """The shim repeats a forwarded signal as "resend N" each second until the answer: a
    worker that never read the "signal N" acts on the repeat (here the only line sent)."""
    read_end, write_end = os.pipe()  # sbatch reads its script from it: until the signal
    words = [b"sbatch", b"1", b"sbatch", b"1", f"PATH={os.environ['PATH']}".encode()]
    body = b"".join(word + b"\0" for word in words)
    cwd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(phalanx.state_dir / SOCKET_NAME))
        try:
            header = b"PHX1" + f"{len(body):08x}".encode()
            socket.send_fds(conn, [header], [read_end, 1, 2, cwd])
            conn.sendall(body)
            server = server_pid(phalanx.state_dir / SOCKET_NAME)
            wait_for(lambda: running_in(server, write_end) is not None)
            conn.sendall(b"resend 15\n")
            conn.settimeout(10)
            assert conn.recv(64) == b"signal 15\n"
        finally:
            for fd in (read_end, write_end, cwd):
                os.close(fd)


def test_the_shim_resends_a_signal_each_second_until_the_answer(
    bin_dir: Path, tmp_path: Path
) -> None:
    """Against a server that does not answer the first forward, the native shim sends
    "resend N" about a second later, and dies of the signal once the answer comes."""
    state = tmp_path / "state"
    state.mkdir()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(state / SOCKET_NAME))
        listener.listen(1)
        listener.settimeout(10)
        shim = waiting_shim(bin_dir, state, tmp_path)
        assert shim.stdin is not None
        try:
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(10)
                _data, fds, _, _ = socket.recv_fds(conn, 12, 4)
                for fd in fds:
                    os.close(fd)
                wait_for(lambda: catches(shim.pid, signal.SIGTERM))
                shim.send_signal(signal.SIGTERM)
                heard = b""
                started = time.monotonic()
                while b"resend 15\n" not in heard:
                    chunk = conn.recv(4096)
                    assert chunk, heard
                    heard += chunk
                waited = time.monotonic() - started
                assert heard.split(b"\0")[-1].startswith(b"signal 15\nresend 15\n"), heard
                assert 0.5 < waited < 5, waited
                conn.sendall(b"signal 15\n")
                assert shim.wait(timeout=10) == -signal.SIGTERM
        finally:
            if shim.poll() is None:
                shim.kill()
                shim.wait()
            shim.stdin.close()


def test_a_shim_killed_outright_hangs_its_command_up(
    phalanx: LocalCluster, bin_dir: Path, tmp_path: Path
) -> None:
    server = server_pid(phalanx.state_dir / SOCKET_NAME)
    shim = waiting_shim(bin_dir, phalanx.state_dir, tmp_path)
    assert shim.stdin is not None
    try:
        wait_for(lambda: running_in(server, shim.stdin.fileno()) is not None)
        shim.kill()
        shim.wait(timeout=10)
        wait_for(lambda: running_in(server, shim.stdin.fileno()) is None)
    finally:
        shim.stdin.close()


def test_one_worker_serves_a_users_commands_one_after_another(
    phalanx: LocalCluster, bin_dir: Path, tmp_path: Path
) -> None:
    server = server_pid(phalanx.state_dir / SOCKET_NAME)
    run(bin_dir, "sbatch --version", phalanx.state_dir, tmp_path)  # this user's worker
    before = settled_children(server)
    for _ in range(5):
        done = run(bin_dir, "sbatch --version", phalanx.state_dir, tmp_path)
        assert done.stdout == "slurm 22.05.8\n"
    assert set(children(server)) == before  # nothing forked for them


def test_without_a_server_the_native_shim_runs_the_python_one(
    phalanx: LocalCluster, tmp_path: Path
) -> None:
    shims = write_shims(tmp_path / "bin")
    elsewhere = tmp_path / "state"
    elsewhere.mkdir()
    # The controller's socket, but no command server beside it.
    (elsewhere / "controller.sock").symlink_to(phalanx.state_dir / "controller.sock")
    done = run(shims.paths[0].parent, "sbatch --parsable --wrap=true", elsewhere, tmp_path)
    assert done.returncode == 0, done
    assert phalanx.job(int(done.stdout))["name"] == "wrap"


# ------------------------------------------------------------------ a server of its own
@pytest.fixture
def public_dir() -> Iterator[Path]:
    """A directory every user can reach (pytest's own are root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="phalanx-fs-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def start_server(state: Path, uid: int | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """A command server on ``state``; with ``uid``, one that imports its modules (which
    only root may read here) and then runs as that user."""
    read_end, write_end = os.pipe()
    become = "" if uid is None else f"os.setgid({uid}); os.setuid({uid}); "
    code = (
        "import os, sys; from phalanx.commandserver import server as f; f.preload(); "
        f"{become}sys.exit(f.main(sys.argv[1:]))"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", code, str(state / SOCKET_NAME), "--parent-fd", str(read_end)],
        pass_fds=(read_end,),
    )
    os.close(read_end)
    wait_for(lambda: (state / SOCKET_NAME).exists())
    return server, write_end


@ROOT_ONLY
def test_a_root_server_runs_the_command_as_its_caller(public_dir: Path) -> None:
    state = public_dir / "state"
    state.mkdir(mode=0o755)
    bin_dir = native_only(public_dir / "bin")
    for path in [bin_dir, *bin_dir.iterdir()]:
        path.chmod(0o755)
    secret = public_dir / "secret.sh"
    secret.write_text("#!/bin/sh\ntrue\n")
    secret.chmod(0o600)
    shared = public_dir / "shared.sh"
    shared.write_text("#!/bin/sh\ntrue\n")
    shared.chmod(0o644)
    server, parent = start_server(state)
    try:

        def as_nobody(line: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["/bin/sh", "-c", line],
                cwd=public_dir,
                env={"PATH": f"{bin_dir}:/usr/bin:/bin", "PHALANX_STATE_DIR": str(state)},
                user="nobody",
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )

        # The child read the script as nobody: root could have.
        done = as_nobody("sbatch secret.sh")
        assert (done.returncode, done.stderr) == (
            1,
            "sbatch: error: Unable to open file secret.sh\n",
        )
        # A script nobody can read gets as far as the (absent) controller.
        done = as_nobody("sbatch shared.sh")
        assert (done.returncode, done.stderr) == (
            1,
            "sbatch: error: Batch job submission failed: "
            "Unable to contact slurm controller (connect failure)\n",
        )
    finally:
        os.close(parent)
        server.wait(timeout=10)


@ROOT_ONLY
def test_a_server_of_another_user_sends_the_caller_to_its_python_shim(
    public_dir: Path, tmp_path: Path
) -> None:
    state = public_dir / "state"
    state.mkdir(mode=0o777)
    state.chmod(0o777)
    bin_dir = write_shims(tmp_path / "bin").paths[0].parent
    (bin_dir / PYTHON_DIR / "sbatch").write_text('#!/bin/sh\necho "python shim: $*"\n')
    server, parent = start_server(state, uid=pwd.getpwnam("nobody").pw_uid)
    try:
        done = run(bin_dir, "sbatch --version", state, tmp_path)
        assert (done.returncode, done.stdout) == (0, "python shim: --version\n")
    finally:
        os.close(parent)
        server.wait(timeout=10)


def test_the_server_ends_with_the_pipe_from_its_parent(tmp_path: Path) -> None:
    server, parent = start_server(tmp_path)
    wait_for(lambda: len(children(server.pid)) == 1)  # a worker, ready for the first command
    idle = children(server.pid)
    os.close(parent)
    assert server.wait(timeout=10) == 0
    assert not (tmp_path / SOCKET_NAME).exists()
    for pid in idle:  # the idle worker went with it
        wait_for(lambda pid=pid: not Path(f"/proc/{pid}").exists())
