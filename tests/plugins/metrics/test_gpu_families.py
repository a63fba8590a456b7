"""Triton's GPU families from NVML, on a machine with a GPU (``make test-gpu``).

Skipped with the reason where nvidia-ml-py is not installed or NVML finds no
device; on CPU machines the families are absent (test_distributions.py).
"""

from __future__ import annotations

import http.client

import pytest

from modelplatform.testing import ServerProcess

from ...conftest import MODEL_REPOSITORY

FAMILIES = (
    "nv_gpu_utilization",
    "nv_gpu_memory_total_bytes",
    "nv_gpu_memory_used_bytes",
    "nv_gpu_power_usage",
    "nv_gpu_power_limit",
)


def _nvml_devices() -> tuple[int, str | None]:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetCount(), None
    except Exception as error:  # noqa: BLE001 - any failure means: no GPU to read here
        return 0, f"{type(error).__name__}: {error}"


COUNT, REASON = _nvml_devices()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(COUNT == 0, reason=f"needs NVML and a GPU: {REASON or 'no device found'}"),
]


def test_every_gpu_family_has_one_sample_per_device():
    with ServerProcess("--model-repository", str(MODEL_REPOSITORY), "--metrics-interval-ms", "200") as server:
        connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
    for family in FAMILIES:
        samples = [line for line in text.splitlines() if line.startswith(family + "{")]
        assert len(samples) == COUNT, (family, samples)
        assert all('gpu_uuid="' in line for line in samples), samples
    total = [
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("nv_gpu_memory_total_bytes{")
    ]
    assert all(value > 0 for value in total)
