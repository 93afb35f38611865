"""``TempPostgres``: a throwaway PostgreSQL server for tests and benchmarks.

It runs Debian's (or any) ``initdb`` and ``pg_ctl`` in a fresh temporary directory, listening
on a Unix socket there only (no TCP port to collide on), as an unprivileged user: PostgreSQL
refuses to run as root, so under root the server runs as ``phalanx-test`` (made if missing).
Nothing is assumed to be running and nothing outside the directory is touched, except that
user. ``databases()`` hands out fresh, empty databases, one per test.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["TEST_USER", "TempPostgres", "pg_bin_dir"]

TEST_USER = "phalanx-test"


def pg_bin_dir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl`` ($PHALANX_PG_BIN, then PATH, then
    Debian's /usr/lib/postgresql/VERSION/bin, newest first), or None if there is none."""
    env = os.environ.get("PHALANX_PG_BIN")
    candidates = [env] if env else []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).parent))
    candidates += sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdecimal() else 0,
        reverse=True,
    )
    for directory in candidates:
        if (Path(directory) / "initdb").exists() and (Path(directory) / "pg_ctl").exists():
            return Path(directory)
    return None


class TempPostgres:
    """A server of its own; ``start()`` then ``url(db)``, ``new_database()``, ``stop()``."""

    def __init__(self, bin_dir: Path, *, durable: bool = True) -> None:
        """``durable=False`` turns off fsync, for tests that do not measure anything
        (a commit is then not durable across a power cut; a process crash is still safe)."""
        self.bin = bin_dir
        self.durable = durable
        self.root = Path(tempfile.mkdtemp(prefix="phx-pg-"))
        self.data = self.root / "data"
        self.user = pwd.getpwuid(os.geteuid()).pw_name
        self._uid: int | None = None
        self._gid: int | None = None
        self._names = itertools.count(1)

    def start(self) -> TempPostgres:
        if os.geteuid() == 0:
            self._uid, self._gid = _test_user()
            self.user = TEST_USER
            os.chown(self.root, self._uid, self._gid)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", self.user, "-E", "UTF8")
        self._start_server()
        return self

    def restart(self, down_s: float = 0.0) -> None:
        """Crash the server (``-m immediate``: every session cut), stay down ``down_s``
        seconds, start it again on the same data."""
        import time

        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        time.sleep(down_s)
        self._start_server()

    def _start_server(self) -> None:
        options = f"-c listen_addresses='' -c unix_socket_directories='{self.root}'"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-o", options,
            "-w", "start",
        )  # fmt: skip

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@/{database}?host={self.root}"

    def new_database(self) -> str:
        """A fresh empty database; its URL."""
        import psycopg

        name = f"t{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, FileNotFoundError):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        result = subprocess.run(
            [str(self.bin / program), *args],
            user=self._uid,
            group=self._gid,
            cwd=self.root,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            log = self.root / "log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{program} failed: {result.stderr.strip()} {tail}")


def _test_user() -> tuple[int, int]:
    """uid and gid of ``TEST_USER``, made (a system user, no home, no login) if missing."""
    try:
        entry = pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", TEST_USER],
            check=True,
            capture_output=True,
        )
        entry = pwd.getpwnam(TEST_USER)
    return entry.pw_uid, entry.pw_gid
