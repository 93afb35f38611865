"""The Kubernetes API's speed on a running controller: Job creations per second from one
client process, and ``kubectl get pods -A`` over many pods.

Usage: ``python bench/kube_api.py [--kubeconfig FILE [--pid PID]] [--jobs 2000] [--pods 10000]
[--concurrency 16]``. Without ``--kubeconfig`` it starts ``phalanx up`` in a fresh state
directory (under ``--dir``) and stops it at the end; with one, it uses that controller
(``phalanx kubeconfig > FILE``) and creates its objects in a namespace of its own
(``bench-<pid>``), deleted at the end.

The creations are sent twice: one at a time on one kept-alive HTTPS connection (each waits
for its own fsync: an acknowledged create is on disk), then ``--concurrency`` at a time, one
connection each, as client-go's connection pool does (concurrent requests share fsyncs:
``phalanx.kube.groupcommit``). The pods for ``kubectl get pods -A`` are created concurrently
too, and the Jobs' own pods count among them.

The Jobs name no ``command`` (unless ``--command``): their pods cannot run without a
container runtime, so the Job controller records ``FailedCreate`` and makes none. The
controller's CPU per Job is then the create, the Job's reconciles, its status and Events;
``--command true`` makes Jobs whose pods run to completion (the pods' engine jobs, launches,
ends and accounting count too).

``kubectl get pods -A`` is timed twice: as kubectl lists by default (pages of 500, following
``continue``) and with ``--chunk-size=0`` (one request). kubectl's REST client limits itself
to 5 requests a second after a burst of 10 (client-go's defaults, which kubectl keeps): 20
pages cannot all have started before 2 s, whichever server answers them.

Two rates for the concurrent creations: as the client saw them (the burst: the Job
controller, as kube-controller-manager's, lags behind the API's requests,
``phalanx.kube.pace``), and sustained: the Jobs over the time until the controller was idle
again, everything they set off done. The controller's CPU per Job counts all of it, split
into its event loop's (requests, reconciles) and its other threads' (the group commit's
JSON and fsyncs); "during the burst" is what the creations cost while they were made.

Targets (issue 12): >= 1,000 Job creations/s; ``kubectl get pods -A`` with 10,000 pods <= 1 s.
The last line: ``creations N/s (sustained R/s; one at a time M/s); kubectl get pods -A (P
pods) S s (--chunk-size=0: C s)``.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import http.client
import json
import os
import re
import resource
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import yaml


class Client:
    """One kept-alive HTTPS connection per thread (``http.client``: the lightest client, so
    that the client's own CPU time disturbs the figure least)."""

    def __init__(self, kubeconfig: str) -> None:
        with open(kubeconfig) as f:
            cfg = yaml.safe_load(f)
        cluster = cfg["clusters"][0]["cluster"]
        self.token = cfg["users"][0]["user"]["token"]
        with tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False) as ca:
            ca.write(base64.b64decode(cluster["certificate-authority-data"]))
        self.context = ssl.create_default_context(cafile=ca.name)
        os.unlink(ca.name)
        url = urlsplit(cluster["server"])
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 443
        self._local = threading.local()
        self.accept = "application/json"

    def request(self, method: str, path: str, body: object = None) -> dict[str, object]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Content-Type": "application/json",
            "Accept": self.accept,
        }
        conn = getattr(self._local, "conn", None)
        try:
            if conn is None:
                raise ConnectionResetError
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # None yet, or one the server closed after its keep-alive timeout (it read
            # nothing from it): a new one.
            conn = self._local.conn = http.client.HTTPSConnection(
                self.host, self.port, context=self.context, timeout=120
            )
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
        raw = response.read()
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: {response.status} {raw[:300]!r}")
        return json.loads(raw) if raw else {}


def _cpu_seconds(pid: int | None, task: int | None = None) -> float:
    """The CPU time (user + system) process ``pid`` (its thread ``task``: the process's own
    id is its main thread, the event loop) has used, NaN if unknown: what the server
    spends, which the machine's load does not inflate as it does the wall time."""
    if pid is None:
        return float("nan")
    where = f"/proc/{pid}/stat" if task is None else f"/proc/{pid}/task/{task}/stat"
    try:
        fields = Path(where).read_text().rpartition(")")[2].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _until_idle(pid: int | None, start: float) -> float:
    """Wait until the controller is idle again (under 2% of a core for half a second):
    what a burst of creations set off (reconciles, statuses, Events, pods) is done. Returns
    the seconds from ``start`` to the end of its last busy tenth of a second (NaN without
    a pid)."""
    if pid is None:
        time.sleep(2)  # no CPU to watch: a while, as the bench waited before
        return float("nan")
    busy_until = time.perf_counter()
    quiet = 0
    before = _cpu_seconds(pid)
    while quiet < 5 and time.perf_counter() - start < 600:
        time.sleep(0.1)
        now, cpu = time.perf_counter(), _cpu_seconds(pid)
        if cpu - before > 0.002:
            busy_until, quiet = now, 0
        else:
            quiet += 1
        before = cpu
    return busy_until - start


def _create_many(client: Client, path: str, body: object, count: int, concurrency: int) -> float:
    """Send ``count`` creates, ``concurrency`` at a time; return the rate per second."""
    left = iter(range(count))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        while True:
            with lock:
                if next(left, None) is None:
                    return
            try:
                client.request("POST", path, body)
            except BaseException as exc:
                errors.append(exc)
                return

    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return count / (time.perf_counter() - start)


def _pages_as_kubectl(client: Client) -> tuple[float, int]:
    """Fetch every pod as ``kubectl get pods -A`` does (Table, chunks of 500, following
    ``continue``): the seconds it took, the rows."""
    saved = client.accept
    client.accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    try:
        start = time.perf_counter()
        rows, token = 0, ""
        while True:
            page = client.request("GET", f"/api/v1/pods?limit=500&continue={token}")
            found = page.get("rows") or []
            meta = page.get("metadata") or {}
            assert isinstance(found, list) and isinstance(meta, dict), page
            rows += len(found)
            token = str(meta.get("continue") or "")
            if not token:
                return time.perf_counter() - start, rows
    finally:
        client.accept = saved


def _kubectl_get_pods(
    kubectl: str, env: dict[str, str], pid: int | None, flags: list[str]
) -> tuple[float, int]:
    """Time ``kubectl get pods -A [flags]``: the seconds and the rows; prints the CPU times
    and how long kubectl's own rate limiter held its requests (its ``-v=4`` lines)."""
    cpu, children = _cpu_seconds(pid), resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(
        [kubectl, "get", "pods", "-A", "-v=4", *flags],
        env=env,
        capture_output=True,
        check=True,
        text=True,
    )
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # "Waited for 118.217453ms due to client-side throttling, not priority and fairness"
    held = sum(
        float(m.group(1)) * (1000 if m.group(2) == "s" else 1)
        for m in re.finditer(
            r"Waited for ([0-9.]+)(ms|s) due to client-side throttling", out.stderr
        )
    )
    print(
        f"kubectl get pods -A {' '.join(flags)}: {took:.2f} s; kubectl's own CPU"
        f" {after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime:.2f} s,"
        f" the controller's {_cpu_seconds(pid) - cpu:.2f} s; held by kubectl's client-side"
        f" rate limit {held / 1000:.2f} s"
    )
    return took, max(0, len(out.stdout.splitlines()) - 1)  # (no header without pods)


def _count_pods(client: Client) -> int:
    found = client.request("GET", "/api/v1/pods?limit=1")
    meta = found.get("metadata") or {}
    assert isinstance(meta, dict)
    return len(found.get("items") or ()) + int(meta.get("remainingItemCount", 0))  # type: ignore[arg-type]


@contextlib.contextmanager
def _controller(
    kubeconfig: str | None, where: str | None, pid: int | None = None
) -> Iterator[tuple[str, int | None]]:
    """The kubeconfig of the controller to measure and its pid where known: the given one
    (its pid ``pid``, None: no CPU figures), or a fresh ``phalanx up``."""
    if kubeconfig:
        yield kubeconfig, pid
        return
    state = Path(tempfile.mkdtemp(prefix="phalanx-kube-api-", dir=where))
    env = {**os.environ, "PHALANX_STATE_DIR": str(state)}
    phalanx = [sys.executable, "-m", "phalanx"]
    subprocess.run(
        [*phalanx, "up", "--port", "0", "--kube-port", "0", "--detach"],
        env=env,
        check=True,
        capture_output=True,
    )
    try:
        out = subprocess.run(
            [*phalanx, "kubeconfig"], env=env, check=True, capture_output=True, text=True
        ).stdout
        (state / "kubeconfig").write_text(out)
        yield str(state / "kubeconfig"), int((state / "controller.pid").read_text())
    finally:
        subprocess.run([*phalanx, "down"], env=env, capture_output=True, check=False)
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument(
        "--pid", type=int, default=None, help="with --kubeconfig: its controller's, for CPU times"
    )
    parser.add_argument("--dir", default=None, help="where a fresh state directory goes")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--command", default=None, help="the Jobs' container command (split on blanks)"
    )
    args = parser.parse_args()
    with _controller(args.kubeconfig, args.dir, args.pid) as (kubeconfig, pid):
        _measure(kubeconfig, pid, args)


def _measure(kubeconfig: str, pid: int | None, args: argparse.Namespace) -> None:
    client = Client(kubeconfig)
    ns = f"bench-{os.getpid()}"
    client.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    try:
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"generateName": "bench-"},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "image": "x",
                                **({"command": args.command.split()} if args.command else {}),
                            }
                        ],
                        "restartPolicy": "Never",
                    }
                }
            },
        }
        jobs = f"/apis/batch/v1/namespaces/{ns}/jobs"
        serial = _create_many(client, jobs, job, max(1, args.jobs // 4), 1)
        print(f"created {max(1, args.jobs // 4)} Jobs one at a time at {serial:,.0f}/s")
        _until_idle(pid, time.perf_counter())  # the Jobs' own pods made
        cpu, loop_cpu = _cpu_seconds(pid), _cpu_seconds(pid, pid)
        start = time.perf_counter()
        rate = _create_many(client, jobs, job, args.jobs, args.concurrency)
        in_burst = (_cpu_seconds(pid) - cpu) / args.jobs * 1000
        # until the controller is idle again: its reconciles of these Jobs count too
        done = args.jobs / _until_idle(pid, start)
        per_job = (_cpu_seconds(pid) - cpu) / args.jobs * 1000
        per_job_loop = (_cpu_seconds(pid, pid) - loop_cpu) / args.jobs * 1000
        print(
            f"created {args.jobs} Jobs {args.concurrency} at a time at {rate:,.0f}/s as the"
            f" client saw them (the burst); all of them reconciled (statuses, Events) at"
            f" {done:,.0f}/s (sustained: the burst and what it set off, until the controller"
            f" was idle again)"
        )
        print(
            f"the controller's CPU per Job (the create and all it set off): {per_job:.2f} ms"
            f" (its event loop's {per_job_loop:.2f} ms, other threads' such as the group"
            f" commit's {per_job - per_job_loop:.2f} ms); during the burst {in_burst:.2f} ms"
        )
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"generateName": "p-"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
        while (have := _count_pods(client)) < args.pods:
            _create_many(client, f"/api/v1/namespaces/{ns}/pods", pod, args.pods - have, 16)
        for label in ("first", "again"):
            cpu = _cpu_seconds(pid)
            pages, rows = _pages_as_kubectl(client)
            print(
                f"{label}: {rows} pods as Table pages of 500 (kubectl's) in {pages:.2f} s,"
                f" the controller's CPU {_cpu_seconds(pid) - cpu:.2f} s"
            )
        kubectl = shutil.which("kubectl")
        took = whole = float("nan")
        total = 0
        if kubectl:
            env = dict(os.environ, KUBECONFIG=kubeconfig)
            subprocess.run([kubectl, "get", "ns"], env=env, capture_output=True, check=True)
            took, total = _kubectl_get_pods(kubectl, env, pid, [])
            whole, _ = _kubectl_get_pods(kubectl, env, pid, ["--chunk-size=0"])
            assert total >= args.pods
        print(
            f"creations {rate:,.0f}/s (sustained {done:,.0f}/s; one at a time {serial:,.0f}/s);"
            f" kubectl get pods -A ({total} pods) {took:.2f} s (--chunk-size=0: {whole:.2f} s)"
        )
    finally:
        with contextlib.suppress(Exception):
            client.request("DELETE", f"/api/v1/namespaces/{ns}")


if __name__ == "__main__":
    main()
