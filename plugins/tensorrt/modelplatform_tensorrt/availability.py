"""Whether TensorRT can run here, found without importing tensorrt or pycuda.

The CUDA driver is asked directly through ctypes (``cuInit`` and
``cuDeviceGetCount``), which costs microseconds and creates no context, so
``platform plugins`` can report the reason on any machine.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util

CUDA_LIBRARIES = ("libcuda.so.1", "libcuda.so", "nvcuda.dll")


@functools.cache
def unavailable_reason() -> str | None:
    for module in ("tensorrt", "pycuda"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -r requirements/gpu.txt)"
    return cuda_problem()


def cuda_problem() -> str | None:
    """Why no CUDA GPU can be used, or None when at least one is visible."""
    driver = _load_driver()
    if driver is None:
        return "no CUDA GPU (the CUDA driver library libcuda is not present)"
    status = driver.cuInit(0)
    if status != 0:
        return f"no CUDA GPU (cuInit failed with CUDA error {status})"
    count = ctypes.c_int(0)
    if driver.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return "no CUDA GPU (the driver sees no device)"
    return None


def _load_driver() -> ctypes.CDLL | None:
    for name in CUDA_LIBRARIES:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None
