"""Sampled gauges: the machine's CPU and memory (Triton's nv_cpu_*), GPUs through NVML.

Read every ``metrics_interval_ms`` by a task of the metrics plugin, never on
a scrape: a scrape shows the latest sample. CPU and memory are the whole
machine's, from /proc (as Triton reads them); on a system without /proc the
CPU families are left out. GPU families appear only where ``pynvml``
(nvidia-ml-py) imports and NVML finds a device; anywhere else they are
skipped without an error.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from .exposition import Family

log = structlog.get_logger("modelplatform.metrics")


@dataclass(slots=True)
class CpuSample:
    utilization: float = 0.0
    memory_total: int = 0
    memory_used: int = 0


@dataclass(slots=True)
class SystemSampler:
    """The latest CPU, memory and GPU readings; :meth:`sample` refreshes them."""

    cpu: CpuSample | None = None
    gpus: list[dict[str, Any]] = field(default_factory=list)
    _last_ticks: tuple[int, int] | None = None
    _nvml: Any = None

    def start(self) -> None:
        self._nvml = _open_nvml()
        self.sample()

    def sample(self) -> None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            self.cpu = self._read_cpu()
        if self._nvml is not None:
            self.gpus = _read_gpus(self._nvml)

    def close(self) -> None:
        if self._nvml is not None:
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()
            self._nvml = None

    def families(self) -> list[Family]:
        found: list[Family] = []
        if self.cpu is not None:
            found += _cpu_families(self.cpu)
        if self.gpus:
            found += _gpu_families(self.gpus)
        return found

    def _read_cpu(self) -> CpuSample:
        busy, total = _cpu_ticks(Path("/proc/stat").read_text())
        utilization = 0.0
        if self._last_ticks is not None and total > self._last_ticks[1]:
            utilization = (busy - self._last_ticks[0]) / (total - self._last_ticks[1])
        self._last_ticks = (busy, total)
        memory = _meminfo(Path("/proc/meminfo").read_text())
        used = memory["MemTotal"] - memory.get("MemAvailable", memory.get("MemFree", 0))
        return CpuSample(min(max(utilization, 0.0), 1.0), memory["MemTotal"], used)


def _cpu_ticks(stat: str) -> tuple[int, int]:
    """(busy, total) jiffies of the machine from /proc/stat's first line."""
    values = [int(v) for v in stat.splitlines()[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    total = sum(values[:8])  # guest time is already inside user and nice
    return total - idle, total


def _meminfo(text: str) -> dict[str, int]:
    found = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            found[name] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return found


def _cpu_families(cpu: CpuSample) -> list[Family]:
    utilization = Family("nv_cpu_utilization", "gauge", "CPU utilization of the machine [0.0 - 1.0]")
    total = Family("nv_cpu_memory_total_bytes", "gauge", "Memory of the machine, in bytes")
    used = Family("nv_cpu_memory_used_bytes", "gauge", "Memory in use on the machine, in bytes")
    utilization.add({}, cpu.utilization)
    total.add({}, cpu.memory_total)
    used.add({}, cpu.memory_used)
    return [utilization, total, used]


def _open_nvml() -> Any:
    try:
        import pynvml  # nvidia-ml-py: optional, GPU machines only

        pynvml.nvmlInit()
    except Exception as error:  # noqa: BLE001 - no library, no driver or no GPU: no GPU families
        log.debug("gpu_metrics_skipped", reason=f"{type(error).__name__}: {error}")
        return None
    return pynvml


def _read_gpus(nvml: Any) -> list[dict[str, Any]]:
    gpus = []
    with contextlib.suppress(Exception):  # a GPU gone or a driver error: no GPU readings now
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            uuid = nvml.nvmlDeviceGetUUID(handle)
            gpus.append(
                {
                    "gpu_uuid": uuid.decode() if isinstance(uuid, bytes) else str(uuid),
                    "utilization": nvml.nvmlDeviceGetUtilizationRates(handle).gpu / 100,
                    "memory_total": memory.total,
                    "memory_used": memory.used,
                    "power_usage": nvml.nvmlDeviceGetPowerUsage(handle) / 1000,
                    "power_limit": nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000,
                }
            )
    return gpus


_GPU_FAMILIES = (
    ("nv_gpu_utilization", "utilization", "GPU utilization [0.0 - 1.0]"),
    ("nv_gpu_memory_total_bytes", "memory_total", "GPU memory, in bytes"),
    ("nv_gpu_memory_used_bytes", "memory_used", "GPU memory in use, in bytes"),
    ("nv_gpu_power_usage", "power_usage", "GPU power draw, in watts"),
    ("nv_gpu_power_limit", "power_limit", "GPU power limit, in watts"),
)


def _gpu_families(gpus: list[dict[str, Any]]) -> list[Family]:
    families = []
    for name, key, text in _GPU_FAMILIES:
        family = Family(name, "gauge", text)
        for gpu in gpus:
            family.add({"gpu_uuid": gpu["gpu_uuid"]}, gpu[key])
        families.append(family)
    return families
