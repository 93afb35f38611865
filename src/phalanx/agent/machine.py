"""What this machine offers: name, CPUs, memory and GPUs, detected or declared.

Declared values win over detection, so a CPU-only machine can stand in for a GPU node in
tests and demos (``--gpus 8 --gpu-model h100``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from dataclasses import dataclass

__all__ = ["Host", "Machine", "describe", "health", "host", "short_gpu_model"]

log = logging.getLogger(__name__)

# Words that name the vendor or a product line, not the model a user asks for.
_BRAND_WORDS = frozenset({"nvidia", "tesla", "geforce", "quadro"})


@dataclass(frozen=True)
class Machine:
    name: str
    cpus: int
    memory_mb: int
    gpus: int
    gpu_model: str | None
    gpu_ids: tuple[int, ...]
    """Device indices; 0..gpus-1 (declared GPUs are numbered the same way)."""


@dataclass(frozen=True)
class Host:
    """What ``scontrol show node`` tells of a machine besides its resources."""

    arch: str
    """``uname -m``: x86_64, aarch64."""
    os: str
    """Kernel name, release and version, as Slurm's ``OS=``."""
    boot_time: int | None
    """When the machine booted, ms since the epoch (None: not known)."""


def host(stat: str = "/proc/stat") -> Host:
    uname = os.uname()
    boot: int | None = None
    with contextlib.suppress(OSError, ValueError), open(stat) as f:
        for line in f:
            if line.startswith("btime "):
                boot = int(line.split()[1]) * 1000
                break
    return Host(uname.machine, f"{uname.sysname} {uname.release} {uname.version}", boot)


def health(meminfo: str = "/proc/meminfo") -> tuple[float | None, int | None]:
    """The one-minute load average and the memory available to new work (MB); None where
    the system does not tell."""
    load: float | None = None
    with contextlib.suppress(OSError):
        load = round(os.getloadavg()[0], 2)
    free: int | None = None
    with contextlib.suppress(OSError, ValueError), open(meminfo) as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                free = int(line.split()[1]) // 1024  # the kernel writes kB
                break
    return load, free


def describe(
    node_name: str | None = None,
    *,
    gpus: int | None = None,
    gpu_model: str | None = None,
    cpus: int | None = None,
    memory_mb: int | None = None,
) -> Machine:
    """This machine, with every argument that is not None overriding what is detected."""
    detected_gpus, detected_model = _nvml_gpus() if gpus is None or gpu_model is None else (0, None)
    count = detected_gpus if gpus is None else gpus
    model = gpu_model if gpu_model is not None else detected_model
    return Machine(
        name=node_name or socket.gethostname().split(".")[0],
        cpus=cpus if cpus is not None else len(os.sched_getaffinity(0)),
        memory_mb=memory_mb if memory_mb is not None else _memory_mb(),
        gpus=count,
        gpu_model=model if count > 0 else None,
        gpu_ids=tuple(range(count)),
    )


def short_gpu_model(name: str) -> str:
    """The model as users write it: "NVIDIA H100 80GB HBM3" -> "h100", "RTX 4090" -> "rtx4090"."""
    words = [w for w in name.lower().replace("-", " ").split() if w not in _BRAND_WORDS]
    if not words:
        return name.strip().lower()
    first = words[0]
    if first in ("rtx", "gtx") and len(words) > 1:
        # "RTX 4090" is known as rtx4090, but "RTX A6000" as a6000.
        return first + words[1] if words[1][0].isdecimal() else words[1]
    return first


def _nvml_gpus() -> tuple[int, str | None]:
    """(count, short model of device 0) from NVML; (0, None) without a driver or library."""
    try:
        # Imported here: the library is optional and most agents start faster without it.
        import pynvml  # type: ignore[import-untyped]
    except ImportError:
        return 0, None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        log.debug("no NVML: %s", exc)
        return 0, None
    try:
        count = int(pynvml.nvmlDeviceGetCount())
        if count == 0:
            return 0, None
        raw = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
        # Older bindings answer bytes, newer ones str.
        name = raw.decode() if isinstance(raw, bytes) else str(raw)
        return count, short_gpu_model(name)
    except pynvml.NVMLError as exc:
        log.warning("NVML failed, reporting no GPUs: %s", exc)
        return 0, None
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()


def _memory_mb(meminfo: str = "/proc/meminfo") -> int:
    with open(meminfo) as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024  # the kernel writes kB
    raise OSError(f"no MemTotal in {meminfo}")
