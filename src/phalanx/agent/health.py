"""The node's own health checks: the administrator's program (Slurm's HealthCheckProgram) and
NVML probes of the GPUs. Each check answers the faults it found; the agent reports them and
the controller drains the node (``phalanx.live.agentdesk``); ``watch_health`` runs them at
their intervals for the agent.

The GPU probes look for what takes a GPU out of useful service: Xid errors (an NVML event
set, read without waiting), uncorrected ECC errors and retired pages waiting for a reset, a
PCIe link narrower than the device's or unable to reach the device's generation (the current
generation drops at idle to save power, so only the link's own maximum is compared), hardware
slowdown (thermal, power brake), and fewer GPUs than the node declares. A check NVML does not
support on a device is skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from phalanx.protocol.agent import HealthConfig

__all__ = ["GPU_PROBE_S", "PROGRAM_TIMEOUT_S", "Fault", "GpuProbe", "run_program"]

log = logging.getLogger("phalanx.agent")

GPU_PROBE_S = 30.0
"""Between GPU probes (they are cheap: a few NVML queries per device)."""
PROGRAM_TIMEOUT_S = 60.0
"""A health program still running after this has failed (Slurm kills it likewise)."""

# NVML's throttle reasons that mean the hardware is protecting itself, not a power cap an
# administrator set (nvmlClocksThrottleReasons: HwSlowdown, SwThermalSlowdown,
# HwThermalSlowdown, HwPowerBrakeSlowdown).
_HW_SLOWDOWN = {0x08: "hardware slowdown", 0x20: "thermal slowdown", 0x40: "thermal slowdown"}
_HW_SLOWDOWN[0x80] = "power brake slowdown"


@dataclass(frozen=True, slots=True)
class Fault:
    """What a check found: the node is drained with ``reason``; a ``fatal`` fault also ends
    the node's jobs at once."""

    reason: str
    fatal: bool = False


def run_program(
    program: str, timeout_s: float = PROGRAM_TIMEOUT_S, node: str | None = None
) -> Fault | None:
    """Run the health program (shell words), with ``SLURMD_NODENAME`` set to ``node``: a line
    ``DRAIN reason`` on its output, or a non-zero exit, is a fault; otherwise None."""
    argv = shlex.split(program)
    env = dict(os.environ, SLURMD_NODENAME=node) if node is not None else None
    try:
        done = subprocess.run(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Fault(f"health check {argv[0]} timed out")
    except OSError as exc:
        return Fault(f"health check {argv[0]} could not run: {exc.strerror}")
    for line in done.stdout.splitlines():
        word, _, reason = line.strip().partition(" ")
        if word.upper() == "DRAIN":
            return Fault(reason.strip() or f"health check {argv[0]}")
    if done.returncode != 0:
        return Fault(f"health check {argv[0]} exited {done.returncode}")
    return None


class GpuProbe:
    """The node's GPUs through NVML, opened once; ``probe`` answers what it finds now."""

    def __init__(self, nvml: ModuleType, declared: int, fatal_xids: frozenset[int]) -> None:
        self._nvml = nvml
        self._declared = declared
        self._fatal = fatal_xids
        self._handles: list[Any] = []
        self._events: Any = None

    @classmethod
    def open(
        cls, declared: int, fatal_xids: frozenset[int], nvml: ModuleType | None = None
    ) -> GpuProbe | None:
        """A probe on this machine's GPUs; None without an NVML library or driver."""
        if nvml is None:
            try:
                import pynvml  # type: ignore[import-untyped]
            except ImportError:
                return None
            nvml = pynvml
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            log.info("no GPU health probes: %s", exc)
            return None
        probe = cls(nvml, declared, fatal_xids)
        probe._start()
        return probe

    def _start(self) -> None:
        nvml = self._nvml
        self._handles = [
            nvml.nvmlDeviceGetHandleByIndex(i) for i in range(int(nvml.nvmlDeviceGetCount()))
        ]
        try:
            self._events = nvml.nvmlEventSetCreate()
            for handle in self._handles:
                nvml.nvmlDeviceRegisterEvents(
                    handle, nvml.nvmlEventTypeXidCriticalError, self._events
                )
        except nvml.NVMLError as exc:
            log.info("no Xid events: %s", exc)
            self._events = None

    def close(self) -> None:
        nvml = self._nvml
        with contextlib.suppress(nvml.NVMLError):
            if self._events is not None:
                nvml.nvmlEventSetFree(self._events)
            nvml.nvmlShutdown()

    def probe(self) -> list[Fault]:
        faults = self._xids()
        count = len(self._handles)
        if count < self._declared:
            faults.append(Fault(f"{count} of {self._declared} GPUs found"))
        for i, handle in enumerate(self._handles):
            for check in (self._ecc, self._pcie, self._slowdown):
                found = self._supported(check, handle)
                if found is not None:
                    faults.append(Fault(f"GPU {i}: {found}"))
        return faults

    def _supported(self, check: Any, handle: Any) -> str | None:
        try:
            result: str | None = check(handle)
        except self._nvml.NVMLError as exc:
            log.debug("GPU probe %s: %s", check.__name__, exc)  # not supported here
            return None
        return result

    def _xids(self) -> list[Fault]:
        """Xid errors since the last probe (the event set, read without waiting)."""
        nvml = self._nvml
        out: list[Fault] = []
        while self._events is not None:
            try:
                event = nvml.nvmlEventSetWait_v2(self._events, 0)
            except nvml.NVMLError_Timeout:
                break
            except nvml.NVMLError as exc:
                log.warning("reading Xid events: %s", exc)
                break
            xid = int(event.eventData)
            gpu = self._index(event.device)
            if xid in self._fatal:
                out.append(Fault(f"Xid {xid} on GPU {gpu}", fatal=True))
            else:
                # Most other Xids are the application's own faults (13, 31, 43): logged only.
                log.warning("Xid %d on GPU %s", xid, gpu)
        return out

    def _index(self, handle: Any) -> str:
        for i, known in enumerate(self._handles):
            if known == handle:
                return str(i)
        return "?"

    def _ecc(self, handle: Any) -> str | None:
        nvml = self._nvml
        errors = int(
            nvml.nvmlDeviceGetTotalEccErrors(
                handle, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC
            )
        )
        if errors:
            return f"{errors} uncorrected ECC errors"
        if int(nvml.nvmlDeviceGetRetiredPagesPendingStatus(handle)):
            return "retired pages pending a reset"
        return None

    def _pcie(self, handle: Any) -> str | None:
        nvml = self._nvml
        width = int(nvml.nvmlDeviceGetCurrPcieLinkWidth(handle))
        max_width = int(nvml.nvmlDeviceGetMaxPcieLinkWidth(handle))
        if width < max_width:
            return f"PCIe link x{width} of x{max_width}"
        link_gen = int(nvml.nvmlDeviceGetMaxPcieLinkGeneration(handle))
        gpu_gen = int(nvml.nvmlDeviceGetGpuMaxPcieLinkGeneration(handle))
        if link_gen < gpu_gen:
            return f"PCIe link gen{link_gen} of gen{gpu_gen}"
        return None

    def _slowdown(self, handle: Any) -> str | None:
        reasons = int(self._nvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle))
        found = sorted({text for bit, text in _HW_SLOWDOWN.items() if reasons & bit})
        return ", ".join(found) if found else None


async def watch_health(
    config: Callable[[], HealthConfig],
    gpus: int,
    node: str,
    report: Callable[[Fault], Awaitable[None]],
) -> None:
    """Forever: probe the GPUs and run the health program, each at its interval (as
    ``config()`` says now), and ``report`` every fault found (every time: the controller
    drains once per reason, and again after an administrator resumed a node still at fault)."""
    first = config()
    probe: GpuProbe | None = None
    if first.gpus:
        probe = await asyncio.to_thread(GpuProbe.open, gpus, frozenset(first.fatal_xids))
    next_probe = next_program = time.monotonic()
    try:
        while True:
            now_config = config()
            now = time.monotonic()
            faults: list[Fault] = []
            if probe is not None and now >= next_probe:
                next_probe = now + now_config.gpu_interval_s
                faults += await asyncio.to_thread(probe.probe)
            program = now_config.program
            if program and now_config.interval_s > 0 and now >= next_program:
                next_program = now + now_config.interval_s
                found = await asyncio.to_thread(run_program, program, node=node)
                faults += [found] if found is not None else []
            for fault in faults:
                await report(fault)
            due = [next_probe] if probe is not None else []
            if program and now_config.interval_s > 0:
                due.append(next_program)
            await asyncio.sleep(max(0.05, min(due) - time.monotonic()) if due else 60.0)
    finally:
        if probe is not None:
            probe.close()
