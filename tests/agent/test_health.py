"""The node's health checks: the administrator's program and the NVML probes (against the
fake ``pynvml`` of ``fakenvml/``, driven by a JSON file as the real one is by the driver)."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from phalanx.agent.health import Fault, GpuProbe, run_program
from phalanx.domain.health import DEFAULT_FATAL_XIDS

FAKE = Path(__file__).with_name("fakenvml") / "pynvml.py"


def _fake_nvml() -> ModuleType:
    """A fresh copy of the fake (its Xid cursor starts at 0)."""
    spec = importlib.util.spec_from_file_location("fake_pynvml", FAKE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("FAKE_NVML_DIR", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["agent"])  # node "default"
    yield tmp_path / "default.json"


def _write(path: Path, gpus: list[dict[str, Any]], xids: list[list[int]] | None = None) -> None:
    path.write_text(json.dumps({"gpus": gpus, "xids": xids or []}))


def _probe(declared: int = 2) -> GpuProbe:
    probe = GpuProbe.open(declared, DEFAULT_FATAL_XIDS, _fake_nvml())
    assert probe is not None
    return probe


def test_healthy_gpus_give_no_fault(gpus: Path) -> None:
    _write(gpus, [{}, {}])
    assert _probe().probe() == []


def test_a_fatal_xid_is_fatal_once_and_an_application_xid_is_not_a_fault(gpus: Path) -> None:
    _write(gpus, [{}, {}], xids=[[1, 13], [1, 79]])
    probe = _probe()
    assert probe.probe() == [Fault("Xid 79 on GPU 1", fatal=True)]
    assert probe.probe() == []  # each event is read once


def test_each_degradation_drains_with_what_was_found(gpus: Path) -> None:
    _write(
        gpus,
        [
            {"ecc": 2},
            {"retired_pending": 1, "width": 8},
            {"link_gen": 3},
            {"throttle": 0x20 | 0x04},  # thermal slowdown and a power cap (not a fault)
        ],
    )
    assert _probe(declared=4).probe() == [
        Fault("GPU 0: 2 uncorrected ECC errors"),
        Fault("GPU 1: retired pages pending a reset"),
        Fault("GPU 1: PCIe link x8 of x16"),
        Fault("GPU 2: PCIe link gen3 of gen5"),
        Fault("GPU 3: thermal slowdown"),
    ]


def test_missing_gpus_and_unsupported_checks(gpus: Path) -> None:
    _write(gpus, [{"ecc": 5, "unsupported": ["ecc", "pcie", "throttle"]}])
    assert _probe(declared=8).probe() == [Fault("1 of 8 GPUs found")]


def test_no_driver_no_probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NVML_DIR", str(tmp_path))  # no state file: "Driver Not Loaded"
    assert GpuProbe.open(8, DEFAULT_FATAL_XIDS, _fake_nvml()) is None


def _script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "check.sh"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def test_the_health_program(tmp_path: Path) -> None:
    assert run_program(_script(tmp_path, "exit 0")) is None
    assert run_program(_script(tmp_path, "echo DRAIN disk /scratch full; exit 0")) == Fault(
        "disk /scratch full"
    )
    failed = run_program(_script(tmp_path, "exit 3"))
    assert failed == Fault(f"health check {tmp_path}/check.sh exited 3")
    slow = run_program(_script(tmp_path, "sleep 5"), timeout_s=0.2)
    assert slow is not None and slow.reason.endswith("timed out")
    missing = run_program(str(tmp_path / "nope"))
    assert missing is not None and "could not run" in missing.reason
