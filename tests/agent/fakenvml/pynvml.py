"""A stand-in for nvidia-ml-py's ``pynvml`` (the subset Phalanx calls), driven by a JSON file,
so agents can be tested for GPU faults on machines without GPUs.

The file is ``$FAKE_NVML_DIR/<node>.json`` (``<node>``: the agent's ``--node``, else
``default``)::

    {"gpus": [{"name": "NVIDIA H100 80GB HBM3", "ecc": 0, "retired_pending": 0,
               "width": 16, "max_width": 16, "link_gen": 5, "gpu_gen": 5, "throttle": 0,
               "unsupported": []}],
     "xids": [[0, 79]]}

A missing key takes the healthy value above. Xid events are handed out once each, in order;
a test appends to ``xids`` to raise one. ``unsupported`` lists checks that raise
NVMLError_NotSupported (``ecc``, ``pcie``, ``throttle``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
nvmlEventTypeXidCriticalError = 8

_HEALTHY = {
    "name": "NVIDIA H100 80GB HBM3",
    "ecc": 0,
    "retired_pending": 0,
    "width": 16,
    "max_width": 16,
    "link_gen": 5,
    "gpu_gen": 5,
    "throttle": 0,
    "unsupported": [],
}
_seen_xids = 0


class NVMLError(Exception):
    pass


class NVMLError_Timeout(NVMLError):
    pass


class NVMLError_NotSupported(NVMLError):
    pass


class _Event:
    def __init__(self, device: int, xid: int) -> None:
        self.device = device
        self.eventData = xid
        self.eventType = nvmlEventTypeXidCriticalError


def _node() -> str:
    argv = sys.argv
    return argv[argv.index("--node") + 1] if "--node" in argv else "default"


def _state() -> dict[str, Any]:
    where = os.environ.get("FAKE_NVML_DIR")
    if where is None:
        raise NVMLError("Driver Not Loaded")
    path = Path(where) / f"{_node()}.json"
    if not path.exists():
        raise NVMLError("Driver Not Loaded")
    state: dict[str, Any] = json.loads(path.read_text())
    return state


def _gpu(handle: int, check: str | None = None) -> dict[str, Any]:
    gpu = {**_HEALTHY, **_state()["gpus"][handle]}
    if check is not None and check in gpu["unsupported"]:
        raise NVMLError_NotSupported("Not Supported")
    return gpu


def nvmlInit() -> None:
    _state()


def nvmlShutdown() -> None:
    pass


def nvmlDeviceGetCount() -> int:
    return len(_state()["gpus"])


def nvmlDeviceGetHandleByIndex(index: int) -> int:
    return index


def nvmlDeviceGetName(handle: int) -> str:
    return str(_gpu(handle)["name"])


def nvmlEventSetCreate() -> list[int]:
    return []


def nvmlEventSetFree(events: list[int]) -> None:
    pass


def nvmlDeviceRegisterEvents(handle: int, types: int, events: list[int]) -> None:
    events.append(handle)


def nvmlEventSetWait_v2(events: list[int], timeout_ms: int) -> _Event:
    global _seen_xids
    xids = _state().get("xids", [])
    while _seen_xids < len(xids):
        device, xid = xids[_seen_xids]
        _seen_xids += 1
        if device in events:
            return _Event(device, xid)
    raise NVMLError_Timeout("Timeout")


def nvmlDeviceGetTotalEccErrors(handle: int, kind: int, counter: int) -> int:
    return int(_gpu(handle, "ecc")["ecc"])


def nvmlDeviceGetRetiredPagesPendingStatus(handle: int) -> int:
    return int(_gpu(handle, "ecc")["retired_pending"])


def nvmlDeviceGetCurrPcieLinkWidth(handle: int) -> int:
    return int(_gpu(handle, "pcie")["width"])


def nvmlDeviceGetMaxPcieLinkWidth(handle: int) -> int:
    return int(_gpu(handle, "pcie")["max_width"])


def nvmlDeviceGetMaxPcieLinkGeneration(handle: int) -> int:
    return int(_gpu(handle, "pcie")["link_gen"])


def nvmlDeviceGetGpuMaxPcieLinkGeneration(handle: int) -> int:
    return int(_gpu(handle, "pcie")["gpu_gen"])


def nvmlDeviceGetCurrentClocksThrottleReasons(handle: int) -> int:
    return int(_gpu(handle, "throttle")["throttle"])
