"""What the agent tells the controller about its machine: detected, or declared."""

from __future__ import annotations

import socket
import sys
import types

import pytest

from phalanx.agent.machine import describe, short_gpu_model


def test_declared_values_override_detection() -> None:
    m = describe("gpu07", gpus=8, gpu_model="h100", cpus=96, memory_mb=1_000_000)
    assert (m.name, m.gpus, m.gpu_model, m.cpus, m.memory_mb) == (
        "gpu07",
        8,
        "h100",
        96,
        1_000_000,
    )
    assert m.gpu_ids == tuple(range(8))


def test_without_nvml_there_are_no_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    # Whether or not the library is installed, this machine has no driver: 0 GPUs.
    assert describe().gpus == 0
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    m = describe()
    assert (m.gpus, m.gpu_model, m.gpu_ids) == (0, None, ())


def fake_nvml(count: int, name: str | bytes) -> types.ModuleType:
    """A stand-in for the NVML bindings: what a GPU node's driver would answer."""
    nvml = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    calls: list[str] = []
    nvml.NVMLError = NVMLError  # type: ignore[attr-defined]
    nvml.calls = calls  # type: ignore[attr-defined]
    nvml.nvmlInit = lambda: calls.append("init")  # type: ignore[attr-defined]
    nvml.nvmlShutdown = lambda: calls.append("shutdown")  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetCount = lambda: count  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetName = lambda handle: name  # type: ignore[attr-defined]
    return nvml


def test_gpus_are_detected_through_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = fake_nvml(8, b"NVIDIA H100 80GB HBM3")
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    m = describe()
    assert (m.gpus, m.gpu_model, m.gpu_ids) == (8, "h100", tuple(range(8)))
    assert nvml.calls == ["init", "shutdown"]
    assert describe(gpu_model="h100-emulated").gpu_model == "h100-emulated"
    assert describe(gpus=0).gpus == 0


def test_detected_cpus_memory_and_name_are_sensible() -> None:
    m = describe()
    assert m.cpus > 0
    assert m.memory_mb > 0
    assert m.name == socket.gethostname().split(".")[0]


def test_declaring_only_the_count_keeps_detection_for_the_rest() -> None:
    m = describe(gpus=2)
    assert m.gpus == 2
    assert m.gpu_ids == (0, 1)


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("Tesla V100-SXM2-32GB", "v100"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        ("NVIDIA RTX A6000", "a6000"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA H200", "h200"),
    ],
)
def test_gpu_models_are_named_as_users_write_them(name: str, short: str) -> None:
    assert short_gpu_model(name) == short
