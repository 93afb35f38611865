"""The serving helpers of ``phalanx.testing.serving``: the model server, its manifests,
percentiles."""

from __future__ import annotations

import ipaddress
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import yaml

from phalanx.testing.serving import (
    MODEL_SERVER,
    deployment_yaml,
    free_cluster_ip,
    free_port,
    percentile,
)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 100)) == (
        50.0,
        99.0,
        100.0,
    )
    assert percentile([3.0], 99) == 3.0
    assert percentile([], 50) != percentile([], 50)  # NaN


def test_the_manifests_ask_what_they_are_given(tmp_path: Path) -> None:
    text = deployment_yaml(
        "burst", tmp_path / "s.py", 8080, replicas=2, priority_class="high", gpus=4, slots=3
    )
    deploy, svc = yaml.safe_load_all(text)
    pod = deploy["spec"]["template"]["spec"]
    assert deploy["spec"]["replicas"] == 2 and pod["priorityClassName"] == "high"
    [container] = pod["containers"]
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 4}}
    assert container["command"][2:] == ["8080", "200", "5", "3"]
    assert svc["spec"]["selector"] == {"app": "burst"}
    assert ipaddress.ip_address(svc["spec"]["clusterIP"]) in ipaddress.ip_network("127.77.0.0/16")
    assert free_cluster_ip(80) != "127.77.0.1"  # never the bottom of the range: random


def test_the_model_server_serves_at_most_its_slots_at_once(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(MODEL_SERVER)
    logs = tmp_path / "logs"
    logs.mkdir()
    port = free_port()
    argv = [sys.executable, str(script), str(port), "300", "0", "1", str(logs)]
    proc = subprocess.Popen(argv, env={"POD_NAME": "web-1"})
    try:
        deadline = time.monotonic() + 30
        while not (logs / f"pod-{proc.pid}").exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        while True:  # the pod file is written before the socket is bound
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read()
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        took: list[float] = []

        def one() -> None:
            start = time.monotonic()
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read()
            took.append(time.monotonic() - start)

        threads = [threading.Thread(target=one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # one slot: the second request waits for the first (300 ms each)
        assert max(took) >= 0.55, took
        assert (logs / f"pod-{proc.pid}").read_text() == "web-1"
        assert len((logs / f"access-{proc.pid}").read_text().split()) == 3
    finally:
        proc.kill()
        proc.wait()
